// ManagedClusterTaintReconciler: keeps the two hub-owned taints in line with
// ManagedClusterConditionAvailable, as OCM's taint controller does —
//   Available True           → neither taint
//   Available False          → cluster.open-cluster-management.io/unavailable
//   Available Unknown/absent → cluster.open-cluster-management.io/unreachable
// both with effect NoSelect, so placements stop choosing the cluster. Other taints are left as they are.
import {
  type Condition,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterTaint,
  type Taint,
  TaintEffect,
} from '../../api/index.ts';
import { findCondition, formatTime } from '../../kube/index.ts';
import { type HubContext, patchCluster } from './context.ts';

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

function taintsOf(cluster: ManagedCluster): Taint[] | undefined {
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
