// AppliedObjects: what the hub last wrote to each object it keeps for a cluster (namespace, RBAC),
// so a reconcile of a cluster whose spec did not change costs no request. The accept reconcile
// runs on every ManagedCluster change — the agent's status, the lease watchdog's conditions, taints
// — and re-applying six objects each time was most of the hub's requests per cluster.
//
// The rule is OCM's resource cache (library-go resourceapply): an object is written again when
// what the hub wants of it changed, or when the informer shows it in a state the hub did not write
// (someone edited or deleted it). "A state the hub wrote" is one of the resourceVersions its own
// writes returned. Between a write and its echo in the informer, the cache may still show an older
// write of ours, or nothing yet: that is the cache lagging, not drift, for at most echoWaitMs.
// The informers' events bring the cluster back to its queue, so drift is repaired when it happens.
// Nothing here talks to the apiserver; it must not be used for objects the hub never writes.
import type { KubeObject } from '../../kube/index.ts';

/** How long a write may wait for its echo in the informer before its absence counts as a deletion. */
export const echoWaitMs = 10_000;

/** Writes remembered per object: enough to recognise a lagging cache. */
const rememberedWrites = 3;

interface Written {
  /** what was applied (stable JSON of the desired object) */
  desired: string;
  /** resourceVersions our writes returned, newest last */
  versions: string[];
  /** when the newest write returned */
  at: number;
  /** whether the informer has shown the newest write */
  echoed: boolean;
}

/** What to do with one object: write it, leave it, or wait for the cache to show our last write. */
export type ApplyDecision = 'apply' | 'unchanged' | 'wait';

/** Key of an object in the memo: "kind/namespace/name". */
export function appliedKey(kind: string, obj: KubeObject): string {
  return `${kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export class AppliedObjects {
  private readonly written = new Map<string, Written>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /**
   * Whether `desired` must be written, given `cached` (the informer's copy, undefined when absent).
   * 'wait': the cache does not show our newest write yet; look again once it does (or echoWaitMs).
   */
  decide(key: string, desired: KubeObject, cached: KubeObject | undefined): ApplyDecision {
    const w = this.written.get(key);
    if (!w || w.desired !== stableJson(desired)) return 'apply';
    if (cached?.metadata?.deletionTimestamp) return 'apply';
    const version = cached?.metadata?.resourceVersion;
    if (version !== undefined && version === w.versions.at(-1)) return 'unchanged';
    // Nothing yet, or an older write of ours: the cache has not caught up with the newest one.
    const ours = cached === undefined || (version !== undefined && w.versions.includes(version));
    const lagging = !w.echoed && this.now() - w.at < echoWaitMs;
    return ours && lagging ? 'wait' : 'apply';
  }

  /** Remember a write of `desired` that returned `result`. */
  record(key: string, desired: KubeObject, result: KubeObject): void {
    const version = result.metadata?.resourceVersion;
    if (!version) {
      this.written.delete(key);
      return;
    }
    const text = stableJson(desired);
    const previous = this.written.get(key);
    const versions = previous?.desired === text ? [...previous.versions, version] : [version];
    this.written.set(key, {
      desired: text,
      versions: versions.slice(-rememberedWrites),
      at: this.now(),
      echoed: false,
    });
  }

  /** The informer shows `obj` (add or update): our newest write has arrived when it is this one. */
  observe(key: string, obj: KubeObject): void {
    const w = this.written.get(key);
    if (w && obj.metadata?.resourceVersion === w.versions.at(-1)) w.echoed = true;
  }

  /** Whether the hub wrote this object and has not forgotten it since. */
  remembers(key: string): boolean {
    return this.written.has(key);
  }

  /** The informer saw the object deleted, or the hub deleted it: the next reconcile writes it. */
  forget(key: string): void {
    this.written.delete(key);
  }

  /** Forget every object whose key matches (a cluster's objects, when the cluster goes). */
  forgetWhere(match: (key: string) => boolean): void {
    for (const key of this.written.keys()) if (match(key)) this.written.delete(key);
  }
}

/** JSON with object keys sorted, so the same desired object always compares equal. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/**
 * The leases this hub created, by cluster, and when: until the informer shows one, another create
 * would only be refused (AlreadyExists).
 */
export class LeaseCreations {
  private readonly created = new Map<string, number>();

  /** Whether the lease of `cluster` was created less than echoWaitMs ago. */
  recent(cluster: string): boolean {
    const at = this.created.get(cluster);
    if (at === undefined) return false;
    if (Date.now() - at < echoWaitMs) return true;
    this.created.delete(cluster);
    return false;
  }

  add(cluster: string): void {
    this.created.set(cluster, Date.now());
  }
}
