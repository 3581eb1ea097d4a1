// What a ManifestWorkReplicaSet's ManifestWorks look like and how the controller reads them, as
// OCM does: the work it wants in a cluster namespace (named after the set, its labels plus the
// `work.open-cluster-management.io/manifestworkreplicaset` = `<ns>.<name>` and `placementname`
// labels, spec = the template), whether a work already carries the current template, where a work
// stands for the rollout (Applied, then Progressing or else Available, Degraded — each counted only
// once the agent observed the work's generation), and the status counts and ManifestworkApplied
// condition. Pure functions; the controller does the I/O.
import {
  type ManifestWork,
  ManifestWorkCondition,
  type ManifestWorkReplicaSet,
  ManifestWorkReplicaSetCondition,
  ManifestWorkReplicaSetReason,
  type ManifestWorkReplicaSetSummary,
  manifestWorkReplicaSetLabel,
  manifestWorkReplicaSetPlacementLabel,
} from '../../api/index.ts';
import { type Condition, type ConditionUpdate, findCondition } from '../../kube/index.ts';
import type { ClusterRolloutStatus } from '../rollout/index.ts';

/** The value of the manifestworkreplicaset label: `<namespace>.<name>`. */
export function replicaSetLabelValue(mwrs: ManifestWorkReplicaSet): string {
  return `${mwrs.metadata.namespace ?? ''}.${mwrs.metadata.name ?? ''}`;
}

/** The `namespace/name` key of the set a work's label names; undefined without one. */
export function replicaSetKeyOfWork(work: ManifestWork): string | undefined {
  const value = work.metadata.labels?.[manifestWorkReplicaSetLabel];
  if (!value) return undefined;
  // A namespace is a DNS label (no dots); the set's name may have some.
  const dot = value.indexOf('.');
  if (dot <= 0 || dot === value.length - 1) return undefined;
  return `${value.slice(0, dot)}/${value.slice(dot + 1)}`;
}

/** The ManifestWork the set wants in `cluster`'s namespace for `placement`. */
export function desiredWork(mwrs: ManifestWorkReplicaSet, cluster: string, placement: string) {
  return {
    metadata: {
      name: mwrs.metadata.name ?? '',
      namespace: cluster,
      labels: {
        ...(mwrs.metadata.labels ?? {}),
        [manifestWorkReplicaSetLabel]: replicaSetLabelValue(mwrs),
        [manifestWorkReplicaSetPlacementLabel]: placement,
      },
    },
    spec: structuredClone(mwrs.spec.manifestWorkTemplate ?? {}),
  };
}

/** Equal as JSON, object key order aside. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a ?? {}) === canonical(b ?? {});
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** True when `work` carries the set's current template and labels (nothing to write). */
export function workIsCurrent(work: ManifestWork, mwrs: ManifestWorkReplicaSet, placement: string): boolean {
  const want = desiredWork(mwrs, work.metadata.namespace ?? '', placement);
  const labels = work.metadata.labels ?? {};
  return (
    Object.entries(want.metadata.labels).every(([k, v]) => labels[k] === v) && sameJson(work.spec, want.spec)
  );
}

function observed(c: Condition | undefined, generation: number): c is Condition {
  return c !== undefined && (c.observedGeneration ?? 0) === generation;
}

const at = (c: Condition | undefined) =>
  c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : undefined;

/**
 * Where `work` stands for the rollout, as OCM reads it: ToApply until the agent reports Applied=True
 * for the work's generation and Progressing or Available for it; then Progressing=True with
 * Degraded=True is Failed, Progressing=True is Progressing, Progressing=False is Succeeded; without
 * a current Progressing, Degraded=True is Failed, Available=True Succeeded, else Progressing.
 */
export function workRolloutStatus(cluster: string, work: ManifestWork): ClusterRolloutStatus {
  const generation = work.metadata.generation ?? 0;
  const conditions = work.status?.conditions;
  const applied = findCondition(conditions, ManifestWorkCondition.Applied);
  const progressing = findCondition(conditions, ManifestWorkCondition.Progressing);
  const available = findCondition(conditions, ManifestWorkCondition.Available);
  const degraded = findCondition(conditions, ManifestWorkCondition.Degraded);
  const toApply: ClusterRolloutStatus = { clusterName: cluster, status: 'ToApply' };
  if (!observed(applied, generation) || applied.status !== 'True') return toApply;
  if (!observed(progressing, generation) && !observed(available, generation)) return toApply;
  if (degraded && !observed(degraded, generation)) return toApply;
  const withTime = (
    status: ClusterRolloutStatus['status'],
    c: Condition | undefined,
  ): ClusterRolloutStatus => {
    const time = at(c);
    return { clusterName: cluster, status, ...(time !== undefined ? { lastTransitionTime: time } : {}) };
  };
  if (observed(progressing, generation)) {
    if (progressing.status === 'True' && degraded?.status === 'True') return withTime('Failed', degraded);
    if (progressing.status === 'False') return withTime('Succeeded', progressing);
    return withTime('Progressing', progressing);
  }
  if (degraded?.status === 'True') return withTime('Failed', degraded);
  if (available?.status === 'True') return withTime('Succeeded', available);
  if (available) return withTime('Progressing', available);
  return { clusterName: cluster, status: 'Progressing' };
}

/** applied / available / degraded / progressing over the set's works not being deleted. */
export function workCounts(
  works: readonly ManifestWork[],
): Required<Pick<ManifestWorkReplicaSetSummary, 'applied' | 'available' | 'degraded' | 'progressing'>> {
  const counts = { applied: 0, available: 0, degraded: 0, progressing: 0 };
  for (const w of works) {
    if (w.metadata.deletionTimestamp) continue;
    const isTrue = (type: string) => findCondition(w.status?.conditions, type)?.status === 'True';
    if (isTrue(ManifestWorkCondition.Applied)) counts.applied++;
    if (isTrue(ManifestWorkCondition.Available)) counts.available++;
    if (isTrue(ManifestWorkCondition.Degraded)) counts.degraded++;
    if (isTrue(ManifestWorkCondition.Progressing)) counts.progressing++;
  }
  return counts;
}

/**
 * ManifestworkApplied as OCM derives it from the summary: AsExpected (True) when every work is
 * Available and none Progressing or Degraded; Processing while some progress and none is degraded;
 * NotAsExpected otherwise; PlacementDecisionEmpty when there are no works because nothing is decided.
 */
export function manifestworkAppliedCondition(
  summary: ManifestWorkReplicaSetSummary,
  placementVerifiedReason: string | undefined,
): ConditionUpdate {
  const type = ManifestWorkReplicaSetCondition.ManifestworkApplied;
  const cond = (reason: string, status: 'True' | 'False' = 'False'): ConditionUpdate => ({
    type,
    status,
    reason,
    message: '',
  });
  const total = summary.total ?? 0;
  if (total === 0) {
    return placementVerifiedReason === ManifestWorkReplicaSetReason.PlacementDecisionEmpty
      ? cond(ManifestWorkReplicaSetReason.PlacementDecisionEmpty)
      : cond(ManifestWorkReplicaSetReason.NotAsExpected);
  }
  const { available = 0, progressing = 0, degraded = 0 } = summary;
  if (available === total && progressing === 0 && degraded === 0) {
    return cond(ManifestWorkReplicaSetReason.AsExpected, 'True');
  }
  if (progressing > 0 && degraded === 0) return cond(ManifestWorkReplicaSetReason.Processing);
  return cond(ManifestWorkReplicaSetReason.NotAsExpected);
}
