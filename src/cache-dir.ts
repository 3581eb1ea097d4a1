// Where tether keeps what it builds once and reuses (Kubernetes and node binaries, helm, images):
// ~/.cache/tether, or $TETHER_CACHE_DIR (XDG_CACHE_HOME is honoured). Below every component that
// builds something, so none of them has to import another for the path.
import { homedir } from 'node:os';
import { join } from 'node:path';

/** ~/.cache/tether (or $TETHER_CACHE_DIR): everything tether builds once and reuses. */
export function tetherCacheBase(): string {
  return (
    process.env.TETHER_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'tether')
  );
}
