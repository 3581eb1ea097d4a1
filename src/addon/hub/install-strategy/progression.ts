// How far a config change has rolled out, as OCM's addon-manager tracks it. Pure functions.
//   - per ManagedClusterAddOn a rollout status (OCM's setRolloutStatus): ToApply while its
//     status.configReferences do not carry the desired configs and hashes; Progressing (or Failed,
//     after the deploy controller's Progressing condition) while lastAppliedConfig lags behind
//     desiredConfig; Succeeded once every desired config is applied;
//   - per placement the rollout strategy (src/placement/rollout: All, Progressive,
//     ProgressivePerGroup) picks which ToApply add-ons get their new desired configs now; add-ons
//     outside every placement (Manual, or a cluster no placement decides) all get them at once;
//   - ClusterManagementAddOn status: defaultconfigReferences from the defaults, and one
//     installProgressions[] entry per placement (its configs, with lastAppliedConfig and
//     lastKnownGoodConfig once every decided cluster succeeded, and a Progressing condition with
//     OCM's counts and wording).
//   - an add-on's part of its status after its verdict: configReferences and Configured.
import type {
  ClusterManagementAddOn,
  ConfigSpecHash,
  DefaultConfigReference,
  ManagedClusterAddOn,
  ManagedClusterAddOnStatus,
} from '../../../api/addon.ts';
import { InvalidArgumentError } from '../../../errors.ts';
import { canonicalJson } from '../../../kube/canonical-json.ts';
import { type Condition, type ConditionUpdate, findCondition, setCondition } from '../../../kube/index.ts';
import { type ClusterRolloutStatus, clusterGroupsOf, nextRollout } from '../../../placement/rollout/index.ts';
import {
  type ConfigSelection,
  configuredTrue,
  configuredUnsupported,
  configuredWaiting,
  defaultConfigs,
  type GroupResource,
  groupResourceKey,
  mergeConfigReferences,
  overrideConfigs,
  type ResolvedSelection,
  sameReferent,
  sameSpecHash,
  sortedSelections,
  specHashOf,
  unsupportedKinds,
  withoutKinds,
} from '../config/references.ts';
import type { PlacementNode } from './index.ts';

/** Progressing condition reasons OCM uses on ManagedClusterAddOns and install progressions. */
const ProgressingReason = { Progressing: 'Progressing', Completed: 'Completed', Failed: 'Failed' } as const;

/** The rollout status of one add-on against the configs it should have (OCM's setRolloutStatus). */
export function addonRolloutStatus(
  mca: ManagedClusterAddOn,
  desired: readonly ResolvedSelection[],
): ClusterRolloutStatus {
  const clusterName = mca.metadata.namespace ?? '';
  const actual = mca.status?.configReferences ?? [];
  if (actual.length !== desired.length) return { clusterName, status: 'ToApply' };
  const progressing = findCondition(mca.status?.conditions, 'Progressing');
  const since = (c: Condition | undefined) => {
    const t = c ? Date.parse(c.lastTransitionTime) : Number.NaN;
    return Number.isFinite(t) ? { lastTransitionTime: t } : {};
  };
  for (const ref of actual) {
    const want = desired.find(
      (d) => groupResourceKey(d) === groupResourceKey(ref) && sameReferent(d.referent, ref.desiredConfig),
    );
    if (!want || !sameSpecHash(specHashOf(want), ref.desiredConfig))
      return { clusterName, status: 'ToApply' };
    if (!sameSpecHash(ref.lastAppliedConfig, ref.desiredConfig)) {
      if (progressing?.reason === ProgressingReason.Failed)
        return { clusterName, status: 'Failed', ...since(progressing) };
      if (progressing?.reason === ProgressingReason.Progressing)
        return { clusterName, status: 'Progressing', ...since(progressing) };
      return { clusterName, status: 'Progressing' };
    }
  }
  return {
    clusterName,
    status: 'Succeeded',
    ...(progressing?.reason === ProgressingReason.Completed ? since(progressing) : {}),
  };
}

/** One add-on in the rollout: its desired configs and where it stands. */
export interface AddonInRollout {
  mca: ManagedClusterAddOn;
  desired: ResolvedSelection[];
  status: ClusterRolloutStatus;
}

/** What happens to one add-on's status in this pass. */
export type AddonVerdict =
  /** write the desired configs now; Configured=True */
  | 'configure'
  /** new configs wait for their turn; Configured=False */
  | 'wait'
  /** configs applied; Configured=True */
  | 'configured'
  /** still progressing outside the current step: leave as is */
  | 'keep';

export interface PlacementRollout {
  /** the placement's own desired configs (defaults overridden by the placement's configs) */
  desired: ResolvedSelection[];
  /** add-ons of clusters under this placement */
  addons: AddonInRollout[];
  toRollout: ClusterRolloutStatus[];
  timedOut: number;
  recheckAfterMs?: number;
  /** why the rollout strategy could not be read (nothing rolls out then) */
  error?: string;
}

/**
 * Run the placement's rollout strategy over its add-ons. Progressive without maxConcurrency rolls
 * out clustersPerDecisionGroup at a time, as OCM does.
 */
export function rolloutPlacement(
  node: PlacementNode,
  desired: ResolvedSelection[],
  addons: AddonInRollout[],
  now: number = Date.now(),
): PlacementRollout {
  let strategy = node.rolloutStrategy;
  if (strategy?.type === 'Progressive' && strategy.progressive?.maxConcurrency === undefined) {
    const perGroup = node.placement?.spec?.decisionStrategy?.groupStrategy?.clustersPerDecisionGroup;
    if (perGroup !== undefined)
      strategy = { ...strategy, progressive: { ...(strategy.progressive ?? {}), maxConcurrency: perGroup } };
  }
  const existing = addons.map((a) => a.status).sort((a, b) => (a.clusterName < b.clusterName ? -1 : 1));
  try {
    const result = nextRollout(strategy, clusterGroupsOf(node.decisions), existing, now);
    return {
      desired,
      addons,
      toRollout: result.clustersToRollout,
      timedOut: result.clustersTimeOut.length,
      ...(result.recheckAfterMs !== undefined ? { recheckAfterMs: result.recheckAfterMs } : {}),
    };
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    return { desired, addons, toRollout: [], timedOut: 0, error: err.message };
  }
}

/** The verdict for every add-on of one rollout (by cluster). */
export function verdicts(
  addons: readonly AddonInRollout[],
  toRollout: readonly ClusterRolloutStatus[] | 'all',
) {
  const chosen = new Set(
    toRollout === 'all'
      ? addons.filter((a) => a.status.status !== 'Succeeded').map((a) => a.status.clusterName)
      : toRollout.map((s) => s.clusterName),
  );
  const out = new Map<string, AddonVerdict>();
  for (const a of addons) {
    const cluster = a.status.clusterName;
    if (chosen.has(cluster)) out.set(cluster, 'configure');
    else if (a.status.status === 'ToApply') out.set(cluster, 'wait');
    else if (a.status.status === 'Succeeded') out.set(cluster, 'configured');
    else out.set(cluster, 'keep');
  }
  return out;
}

const sameSelections = (a: readonly ResolvedSelection[], b: readonly ResolvedSelection[]) =>
  a.length === b.length &&
  a.every(
    (x, i) =>
      groupResourceKey(x) === groupResourceKey(b[i] as ResolvedSelection) &&
      sameSpecHash(specHashOf(x), specHashOf(b[i] as ResolvedSelection)),
  );

/** OCM's install progression condition for one placement. */
export function progressionCondition(
  r: PlacementRollout,
  total: number,
): { condition: ConditionUpdate; completed: boolean } {
  const inStep = new Set(r.toRollout.map((s) => s.clusterName));
  let upgrading = 0;
  let done = 0;
  let failed = 0;
  for (const a of r.addons) {
    const cluster = a.status.clusterName;
    if (inStep.has(cluster)) {
      upgrading++;
      continue;
    }
    if (!sameSelections(a.desired, r.desired)) continue;
    if (a.status.status === 'Succeeded') done++;
    else if (a.status.status === 'Failed') failed++;
  }
  if ((total === 0 && done === 0) || done !== total) {
    return {
      completed: false,
      condition: {
        type: 'Progressing',
        status: 'True',
        reason: ProgressingReason.Progressing,
        message: `${upgrading + done}/${total} progressing..., ${failed} failed ${r.timedOut} timeout.${r.error ? ` ${r.error}` : ''}`,
      },
    };
  }
  return {
    completed: true,
    condition: {
      type: 'Progressing',
      status: 'False',
      reason: ProgressingReason.Completed,
      message: `${done}/${total} completed with no errors, ${failed} failed ${r.timedOut} timeout.`,
    },
  };
}

/** One status.installProgressions[] entry (v1alpha1 shape). */
export interface InstallProgression {
  name: string;
  namespace: string;
  configReferences?: {
    group: string;
    resource: string;
    desiredConfig?: ConfigSpecHash;
    lastAppliedConfig?: ConfigSpecHash;
    lastKnownGoodConfig?: ConfigSpecHash;
  }[];
  conditions?: Condition[];
}

/** The configs of a placement: the defaults overridden by the placement's own configs (supported kinds only). */
export function placementSelections(cma: ClusterManagementAddOn, node: PlacementNode): ConfigSelection[] {
  const supported = withoutKinds(node.configs, unsupportedKinds(cma, node.configs));
  return sortedSelections(overrideConfigs(defaultConfigs(cma), supported));
}

/** The default configs of the ClusterManagementAddOn, in status order. */
export function defaultSelections(cma: ClusterManagementAddOn): ConfigSelection[] {
  return sortedSelections(defaultConfigs(cma));
}

/** status.defaultconfigReferences from the resolved default configs (defaultSelections). */
export function defaultConfigReferences(defaults: readonly ResolvedSelection[]): DefaultConfigReference[] {
  return defaults.map((s) => ({ group: s.group, resource: s.resource, desiredConfig: specHashOf(s) }));
}

/**
 * status.installProgressions for the placements (in spec order). An entry keeps its conditions and
 * its configs' lastAppliedConfig / lastKnownGoodConfig while it references the same objects; once
 * every decided cluster succeeded both become the desired config.
 */
export function installProgressions(
  existing: readonly InstallProgression[],
  placements: readonly { node: PlacementNode; rollout: PlacementRollout }[],
  now: Date = new Date(),
): InstallProgression[] {
  return placements.map(({ node, rollout }) => {
    const before = existing.find((p) => p.name === node.name && p.namespace === node.namespace);
    const beforeRefs = before?.configReferences ?? [];
    const { condition, completed } = progressionCondition(rollout, node.clusters.size);
    const configReferences = rollout.desired.map((s) => {
      const desiredConfig = specHashOf(s);
      const old = beforeRefs.find(
        (r) => groupResourceKey(r) === groupResourceKey(s) && sameReferent(r.desiredConfig, s.referent),
      );
      const ref: NonNullable<InstallProgression['configReferences']>[number] = {
        group: s.group,
        resource: s.resource,
        desiredConfig,
      };
      const lastApplied = completed ? desiredConfig : old?.lastAppliedConfig;
      const lastKnownGood = completed ? desiredConfig : old?.lastKnownGoodConfig;
      if (lastApplied) ref.lastAppliedConfig = lastApplied;
      if (lastKnownGood) ref.lastKnownGoodConfig = lastKnownGood;
      return ref;
    });
    return {
      name: node.name,
      namespace: node.namespace,
      configReferences,
      conditions: setCondition(before?.conditions, condition, undefined, now),
    };
  });
}

/** This manager's part of an add-on's status after `verdict`; undefined when nothing changes. */
export function addonConfigStatus(
  m: ManagedClusterAddOn,
  verdict: AddonVerdict,
  desired: readonly ResolvedSelection[],
  refused: readonly GroupResource[],
): ManagedClusterAddOnStatus | undefined {
  const before = m.status ?? {};
  const next: ManagedClusterAddOnStatus = { ...before };
  if (verdict === 'configure')
    next.configReferences = mergeConfigReferences(before.configReferences, desired);
  const condition =
    refused.length > 0
      ? configuredUnsupported(refused)
      : verdict === 'configure' || verdict === 'configured'
        ? configuredTrue
        : verdict === 'wait'
          ? configuredWaiting
          : undefined;
  if (condition) next.conditions = setCondition(before.conditions, condition);
  return canonicalJson(next) === canonicalJson(before) ? undefined : next;
}
