// Taints and tolerations, as OCM's TaintToleration filter: a cluster is selectable when each of its
// taints is tolerated. PreferNoSelect never excludes; NoSelectIfNew excludes only clusters not yet
// in this placement's decisions; NoSelect excludes unless a toleration matches (effect empty or
// equal, key empty or equal, operator Equal — the default — with an equal value, or Exists). A
// toleration with tolerationSeconds holds until the taint's timeAdded + tolerationSeconds: the
// cluster is dropped then, so the scheduler reports that instant for a requeue (no polling). Pure.
import type { ManagedCluster, Taint } from '../../api/cluster.ts';
import type { Toleration } from './types.ts';

/** Why the tolerations cannot be used, or undefined when they are valid (OCM's checks and messages). */
export function validateTolerations(tolerations: readonly Toleration[] | undefined): string | undefined {
  for (const t of tolerations ?? []) {
    if (!t.key && t.operator !== 'Exists') return 'If the key is empty, operator must be Exists.';
    if (t.operator === 'Exists' && t.value) return 'If the operator is Exists, the value should be empty.';
  }
  return undefined;
}

export interface ToleranceResult {
  tolerated: boolean;
  /** ms since the epoch at which a time-limited toleration of this cluster runs out */
  expiresAt?: number;
}

/** Whether one toleration matches one taint, and until when (undefined: forever). */
function matchToleration(taint: Taint, t: Toleration, now: number): ToleranceResult {
  if (t.effect && t.effect !== taint.effect) return { tolerated: false };
  if (t.key && t.key !== taint.key) return { tolerated: false };
  const operator = t.operator || 'Equal';
  const matched =
    operator === 'Exists' ? true : operator === 'Equal' ? (t.value ?? '') === (taint.value ?? '') : false;
  if (!matched) return { tolerated: false };
  if (t.tolerationSeconds === undefined || t.tolerationSeconds === null) return { tolerated: true };
  // a taint without timeAdded counts as added at the epoch: a limited toleration of it has run out
  const added = taint.timeAdded ? Date.parse(taint.timeAdded) : 0;
  const expiresAt = (Number.isNaN(added) ? 0 : added) + t.tolerationSeconds * 1000;
  return now < expiresAt ? { tolerated: true, expiresAt } : { tolerated: false };
}

function tolerateTaint(
  taint: Taint,
  tolerations: readonly Toleration[],
  inDecision: boolean,
  now: number,
): ToleranceResult {
  if (taint.effect === 'PreferNoSelect') return { tolerated: true };
  if (taint.effect === 'NoSelectIfNew' && inDecision) return { tolerated: true };
  // the first toleration that matches decides, as in OCM
  for (const t of tolerations) {
    const result = matchToleration(taint, t, now);
    if (result.tolerated) return result;
  }
  return { tolerated: false };
}

/**
 * Whether `cluster` may be selected; expiresAt is the earliest moment one of its time-limited
 * tolerations runs out. `inDecision`: the cluster is in the placement's current decisions.
 */
export function clusterTolerated(
  cluster: ManagedCluster,
  tolerations: readonly Toleration[] | undefined,
  inDecision: boolean,
  now: number,
): ToleranceResult {
  let expiresAt: number | undefined;
  for (const taint of cluster.spec?.taints ?? []) {
    const result = tolerateTaint(taint, tolerations ?? [], inDecision, now);
    if (!result.tolerated) return { tolerated: false };
    if (result.expiresAt !== undefined && (expiresAt === undefined || result.expiresAt < expiresAt)) {
      expiresAt = result.expiresAt;
    }
  }
  return { tolerated: true, expiresAt };
}
