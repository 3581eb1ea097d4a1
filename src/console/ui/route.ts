// The console's places, as location.hash names them: #/ (the fleet), #/clusters/<name>,
// #/placements, #/events. Pure (no DOM): router.ts follows the hash, tests parse it here.

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
  if (m?.[1]) {
    try {
      return { page: 'cluster', name: decodeURIComponent(m[1]) };
    } catch {
      return { page: 'unknown', hash };
    }
  }
  return { page: 'unknown', hash };
}

/** The hash of a cluster's page. */
export const clusterHref = (name: string): string => `#/clusters/${encodeURIComponent(name)}`;
