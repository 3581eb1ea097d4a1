// Hash routing: the page's place is in location.hash (#/, #/clusters/<name>, #/placements,
// #/events), so reloads and links keep it and no server route is needed. Never carries the token.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'fleet' }
  | { page: 'cluster'; name: string }
  | { page: 'placements' }
  | { page: 'events' }
  | { page: 'unknown'; hash: string };

/** The route a location.hash names. */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/') return { page: 'fleet' };
  if (path === '/placements') return { page: 'placements' };
  if (path === '/events') return { page: 'events' };
  const m = /^\/clusters\/([^/]+)$/.exec(path);
  if (m?.[1]) return { page: 'cluster', name: decodeURIComponent(m[1]) };
  return { page: 'unknown', hash };
}

/** The hash of a cluster's page. */
export const clusterHref = (name: string): string => `#/clusters/${encodeURIComponent(name)}`;

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
