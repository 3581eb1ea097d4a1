// ManagedClusterTaintReconciler: keeps the two hub-owned taints in line with
// ManagedClusterConditionAvailable, as OCM's taint controller does —
//   Available True           → neither taint
//   Available False          → cluster.open-cluster-management.io/unavailable
//   Available Unknown/absent → cluster.open-cluster-management.io/unreachable
// both with effect NoSelect, so placements stop choosing the cluster. Other taints are left as they are.
// A cluster the hub has not seen before gets its first taint in the same write as its finalizer
// (accept.ts): this reconciler waits for that write, so the two never race for one resourceVersion.
import {
  type Condition,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterTaint,
  managedClusterFinalizer,
  type Taint,
  TaintEffect,
} from '../../api/index.ts';
import { findCondition, formatTime } from '../../kube/index.ts';
import { clusterNameProblem, type HubContext, patchCluster } from './context.ts';

const hubTaintKeys: readonly string[] = [ManagedClusterTaint.Unavailable, ManagedClusterTaint.Unreachable];

/** The hub taint `available` calls for, or undefined for none. */
export function hubTaintFor(available: Condition | undefined): string | undefined {
  if (available?.status === 'True') return undefined;
  if (available?.status === 'False') return ManagedClusterTaint.Unavailable;
  return ManagedClusterTaint.Unreachable;
}

/**
 * The taints the cluster should carry, or undefined when `current` already is right. A taint that
 * stays keeps its timeAdded; a new one is added at `now`.
 */
export function desiredTaints(
  current: readonly Taint[] | undefined,
  available: Condition | undefined,
  now: Date = new Date(),
): Taint[] | undefined {
  const list = current ?? [];
  const wanted = hubTaintFor(available);
  const next = list.filter((t) => !hubTaintKeys.includes(t.key) || t.key === wanted);
  if (wanted && !next.some((t) => t.key === wanted)) {
    next.push({ key: wanted, effect: TaintEffect.NoSelect, timeAdded: formatTime(now) });
  }
  const unchanged = next.length === list.length && next.every((t, i) => t === list[i]);
  return unchanged ? undefined : next;
}

/** The hub taints the cluster should carry now, or undefined when it carries them already. */
export function taintsOf(cluster: ManagedCluster): Taint[] | undefined {
  const available = findCondition(cluster.status?.conditions, ManagedClusterCondition.Available);
  return desiredTaints(cluster.spec?.taints, available);
}

export class ManagedClusterTaintReconciler {
  private readonly ctx: HubContext;

  constructor(ctx: HubContext) {
    this.ctx = ctx;
  }

  async reconcile(name: string): Promise<void> {
    const cached = this.ctx.clusterInformer.getByName(name);
    if (!cached || cached.metadata.deletionTimestamp || !taintsOf(cached)) return;
    // New: the accept reconcile's first write (finalizer and taint) is on its way; its echo brings
    // the cluster back here. A cluster the hub ignores for its name never gets that write.
    const named = clusterNameProblem(name) === undefined;
    if (named && !cached.metadata.finalizers?.includes(managedClusterFinalizer)) return;
    await patchCluster(
      this.ctx.clusters,
      name,
      'object',
      (current) => {
        if (current.metadata.deletionTimestamp) return undefined;
        const taints = taintsOf(current);
        if (!taints) return undefined;
        return { spec: { taints: taints.length > 0 ? taints : null } };
      },
      cached,
    );
  }
}
