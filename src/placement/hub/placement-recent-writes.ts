// What the placement controller wrote that its informers may not show yet. A pass that runs right
// after a write (the Placement's own status update re-queues it; events of different kinds arrive
// in any order) would otherwise read the object from before the write: Steady and NoSelectIfNew
// would score with old decisions, a status would be rewritten with fresh transition times, a
// decision deleted twice with two events. The overlay keeps the written object (or the deletion)
// per key until the cache holds a resourceVersion at least as new, and answers with whichever is
// newer. resourceVersions are compared as integers (etcd revisions); one that is not an integer
// counts as the cache being current. Bounded: an entry goes when the cache catches up (for a
// deletion: shows a newer object), the key is written again, or its owner is forgotten.
import type { KubeObject } from '../../kube/index.ts';

function revision(obj: KubeObject | undefined): bigint | undefined {
  const rv = obj?.metadata?.resourceVersion;
  if (!rv || !/^\d+$/.test(rv)) return undefined;
  return BigInt(rv);
}

/** True when `a` is newer than `b` (or the two cannot be ordered). */
function isNewer(a: KubeObject, b: KubeObject): boolean {
  const ra = revision(a);
  const rb = revision(b);
  return ra === undefined || rb === undefined || ra > rb;
}

/** True when `cached` is at least as new as `written` (or the two cannot be ordered). */
function cacheCaughtUp(cached: KubeObject | undefined, written: KubeObject): boolean {
  const w = revision(written);
  const c = revision(cached);
  if (w === undefined) return true;
  if (cached === undefined) return false;
  return c === undefined || c >= w;
}

export class RecentWrites<T extends KubeObject> {
  private readonly written = new Map<string, T>();
  /** deleted keys, with the object the cache held when we deleted it */
  private readonly deleted = new Map<string, T | undefined>();

  /** Record the object a write returned. */
  wrote(key: string, obj: T): void {
    this.deleted.delete(key);
    this.written.set(key, obj);
  }

  /** Record that `key` was deleted; `last` is the newest state known before (cache or write). */
  removed(key: string, last: T | undefined): void {
    this.written.delete(key);
    this.deleted.set(key, last);
  }

  /** The newer of the cached object and what was written or deleted; undefined when gone. */
  resolve(key: string, cached: T | undefined): T | undefined {
    if (this.deleted.has(key)) {
      const before = this.deleted.get(key);
      // the cache has not seen the deletion (nor anything after it): the object is gone
      if (!cached || (before && !isNewer(cached, before))) return undefined;
      this.deleted.delete(key);
      return cached;
    }
    const written = this.written.get(key);
    if (!written) return cached;
    if (cacheCaughtUp(cached, written)) {
      this.written.delete(key);
      return cached;
    }
    return written;
  }

  /** Written keys the cache may not hold yet, e.g. objects just created. */
  pendingKeys(): string[] {
    return [...this.written.keys()];
  }

  /** Drop every entry whose key `matches` (an owner that is gone). */
  forget(matches: (key: string) => boolean): void {
    for (const key of [...this.written.keys()]) if (matches(key)) this.written.delete(key);
    for (const key of [...this.deleted.keys()]) if (matches(key)) this.deleted.delete(key);
  }

  get size(): number {
    return this.written.size + this.deleted.size;
  }
}
