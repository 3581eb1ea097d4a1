// The hook views use to read a watched collection (watch.ts): subscribes while the view is shown,
// re-renders it on every change.
import { useEffect, useState } from 'preact/hooks';
import { type CollectionState, snapshot, subscribe } from './watch.ts';

/** The live state of the collection at `path` (an API collection path, see paths.ts). */
export function useCollection(path: string): CollectionState {
  const [state, setState] = useState<CollectionState>(() => snapshot(path));
  useEffect(() => {
    setState(snapshot(path));
    return subscribe(path, () => setState(snapshot(path)));
  }, [path]);
  return state;
}
