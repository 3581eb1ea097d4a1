// Hash routing: the page's place is in location.hash (route.ts), so reloads and links keep it and
// no server route is needed. The hash never carries the token.
import { useEffect, useState } from 'preact/hooks';
import { parseRoute, type Route } from './route.ts';

/** The current route, updated on hashchange. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
