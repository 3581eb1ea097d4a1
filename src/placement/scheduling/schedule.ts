// One scheduling pass for one Placement, OCM's pipeline: drop the clusters the hub has not accepted
// (spec.hubAcceptsClient not true — tether's rule, not OCM's, which only taints them unreachable: a
// Placement tolerating that taint would otherwise hand a cluster anyone with a bootstrap token can
// create to everything that follows decisions), filter the eligible clusters by the predicates (a cluster passes when it matches any predicate: label AND claim AND CEL selector; no
// predicates pass everything) and by taints/tolerations; score the rest with the policy's
// prioritizers (sum of score × weight); sort by total score, highest first, ties by name; take
// numberOfClusters of them (all when unset); group them and lay out the PlacementDecisions; and say
// what PlacementSatisfied and PlacementMisconfigured should read. A misconfiguration selects
// nothing (the decisions are emptied, as OCM does). Also reports when to run again: the earliest
// moment a toleration or an AddOn score used here runs out. Pure: the caller brings every input.
import type { ManagedCluster } from '../../api/cluster.ts';
import type { ConditionUpdate } from '../../kube/conditions.ts';
import { celClusterMatcher, type ScoreLookup } from './cel.ts';
import type { EligibleClusters } from './cluster-sets.ts';
import { type DecisionLayout, decisionGroups, GroupStrategyError, layoutDecisions } from './groups.ts';
import {
  PrioritizerConfigError,
  type PrioritizerInputs,
  prioritizersOf,
  runPrioritizer,
  type WeightedPrioritizer,
} from './prioritizers.ts';
import { type ClusterMatcher, labelAndClaimMatcher, SelectorError } from './selectors.ts';
import { clusterTolerated, validateTolerations } from './taints.ts';
import { PlacementCondition, PlacementReason, type SchedulingPlacement } from './types.ts';

export type ScheduleCode = 'Success' | 'Warning' | 'Misconfigured';

export interface ScheduleStatus {
  code: ScheduleCode;
  /** the plugin that reported it: Predicate, TaintToleration, a prioritizer, or "" */
  plugin: string;
  message: string;
}

export interface ScheduleInputs extends PrioritizerInputs {
  eligible: EligibleClusters;
}

export interface ScheduleResult {
  /** the chosen clusters, best first */
  selected: ManagedCluster[];
  /** total score per feasible cluster */
  scores: Map<string, number>;
  /** numberOfClusters minus the clusters chosen (0 without numberOfClusters) */
  unscheduled: number;
  layout: DecisionLayout;
  status: ScheduleStatus;
  conditions: ConditionUpdate[];
  /** ms since the epoch at which to schedule again, if anything used here expires */
  requeueAt?: number;
}

const success: ScheduleStatus = { code: 'Success', plugin: '', message: '' };

function misconfigured(plugin: string, err: unknown): ScheduleStatus {
  return { code: 'Misconfigured', plugin, message: err instanceof Error ? err.message : String(err) };
}

function predicateMatchers(placement: SchedulingPlacement, scores: ScoreLookup): ClusterMatcher[] {
  return (placement.spec?.predicates ?? []).map((predicate) => {
    const selector = predicate.requiredClusterSelector;
    const byLabels = labelAndClaimMatcher(selector?.labelSelector, selector?.claimSelector);
    const byCel = celClusterMatcher(selector?.celSelector?.celExpressions ?? [], scores);
    return (cluster) => byLabels(cluster) && byCel(cluster);
  });
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

function compareByScore(scores: Map<string, number>) {
  return (a: ManagedCluster, b: ManagedCluster) => {
    const an = a.metadata.name ?? '';
    const bn = b.metadata.name ?? '';
    const d = (scores.get(bn) ?? 0) - (scores.get(an) ?? 0);
    return d !== 0 ? d : an < bn ? -1 : an > bn ? 1 : 0;
  };
}

/**
 * Whether the hub accepted `cluster`. Only accepted clusters are ever decided, so nothing that
 * follows decisions (ManifestWorkReplicaSets, GitOpsClusters, add-on install strategies) reaches a
 * cluster a hub admin has not accepted; one that loses acceptance leaves the decisions.
 */
export function hubAccepted(cluster: ManagedCluster): boolean {
  return cluster.spec?.hubAcceptsClient === true;
}

/** The feasible clusters, or the misconfiguration that prevents filtering. */
function filterClusters(
  placement: SchedulingPlacement,
  inputs: ScheduleInputs,
): { feasible: ManagedCluster[]; requeueAt?: number } | ScheduleStatus {
  // OCM checks a placement's selectors only when there are clusters to filter
  if (inputs.eligible.clusters.length === 0) return { feasible: [] };
  const accepted = inputs.eligible.clusters.filter(hubAccepted);
  const scoreLookup: ScoreLookup = (cluster, resource) => inputs.addOnScore(cluster, resource)?.scores;
  let matchers: ClusterMatcher[];
  try {
    matchers = predicateMatchers(placement, scoreLookup);
  } catch (err) {
    if (err instanceof SelectorError) return misconfigured('Predicate', err);
    throw err;
  }
  let feasible = accepted.filter(
    (cluster) => matchers.length === 0 || matchers.some((matches) => matches(cluster)),
  );
  const tolerations = placement.spec?.tolerations;
  const invalid = validateTolerations(tolerations);
  if (invalid && feasible.length > 0) return misconfigured('TaintToleration', invalid);
  let requeueAt: number | undefined;
  feasible = feasible.filter((cluster) => {
    const inDecision = inputs.ownDecisions.has(cluster.metadata.name ?? '');
    const result = clusterTolerated(cluster, tolerations, inDecision, inputs.now);
    if (result.tolerated) requeueAt = earliest(requeueAt, result.expiresAt);
    return result.tolerated;
  });
  return { feasible, requeueAt };
}

/**
 * Fields of OCM's Placement tether's scheduler does not act on, refused (PlacementMisconfigured)
 * rather than ignored: topology spread constraints, and decisions sorted by score. scoreRateLimit
 * is accepted: tether re-decides on a score change at once, never later than the limit asks.
 */
function unsupportedSpec(placement: SchedulingPlacement): { plugin: string; message: string } | undefined {
  if ((placement.spec?.spreadPolicy?.spreadConstraints ?? []).length > 0)
    return { plugin: 'SpreadPolicy', message: 'spreadPolicy.spreadConstraints is not supported by tether' };
  if (placement.spec?.sortBy === 'Score')
    return {
      plugin: 'SortBy',
      message: 'sortBy Score is not supported by tether (decisions list clusters by name)',
    };
  return undefined;
}

/** Schedule `placement` over the eligible clusters. */
export function schedule(placement: SchedulingPlacement, inputs: ScheduleInputs): ScheduleResult {
  const name = placement.metadata.name ?? '';
  let status: ScheduleStatus = success;
  let feasible: ManagedCluster[] = [];
  const scores = new Map<string, number>();
  let requeueAt: number | undefined;

  const refused = unsupportedSpec(placement);
  const filtered = refused
    ? misconfigured(refused.plugin, refused.message)
    : filterClusters(placement, inputs);
  if ('code' in filtered) status = filtered;
  else {
    feasible = filtered.feasible;
    requeueAt = filtered.requeueAt;
    let prioritizers: WeightedPrioritizer[] = [];
    try {
      prioritizers = prioritizersOf(placement.spec?.prioritizerPolicy);
    } catch (err) {
      if (!(err instanceof PrioritizerConfigError)) throw err;
      status = misconfigured('', err);
      feasible = [];
    }
    for (const cluster of feasible) scores.set(cluster.metadata.name ?? '', 0);
    for (const p of prioritizers) {
      const outcome = runPrioritizer(p, feasible, inputs);
      if (outcome.warning && status.code === 'Success')
        status = { code: 'Warning', plugin: p.name, message: outcome.warning };
      requeueAt = earliest(requeueAt, outcome.validUntil);
      for (const [cluster, score] of outcome.scores)
        scores.set(cluster, (scores.get(cluster) ?? 0) + score * p.weight);
    }
    feasible.sort(compareByScore(scores));
  }

  const wanted = placement.spec?.numberOfClusters;
  const count =
    wanted === undefined || wanted === null
      ? feasible.length
      : Math.max(0, Math.min(wanted, feasible.length));
  const selected = feasible.slice(0, count);
  const unscheduled = wanted === undefined || wanted === null ? 0 : wanted - selected.length;

  let layout: DecisionLayout;
  try {
    layout = layoutDecisions(name, decisionGroups(placement.spec?.decisionStrategy?.groupStrategy, selected));
  } catch (err) {
    if (!(err instanceof GroupStrategyError || err instanceof SelectorError)) throw err;
    status = misconfigured('', err);
    layout = { objects: [], groups: [] };
  }
  const conditions = [
    misconfiguredCondition(status),
    satisfiedCondition(placement, inputs.eligible, selected.length, unscheduled),
  ];
  return { selected, scores, unscheduled, layout, status, conditions, requeueAt };
}

function misconfiguredCondition(status: ScheduleStatus): ConditionUpdate {
  if (status.code === 'Misconfigured') {
    return {
      type: PlacementCondition.Misconfigured,
      status: 'True',
      reason: PlacementReason.Misconfigured,
      message: `${status.plugin}:${status.message}`,
    };
  }
  return {
    type: PlacementCondition.Misconfigured,
    status: 'False',
    reason: PlacementReason.Succeedconfigured,
    message: 'Placement configurations check pass',
  };
}

function satisfiedCondition(
  placement: SchedulingPlacement,
  eligible: EligibleClusters,
  selected: number,
  unscheduled: number,
): ConditionUpdate {
  const type = PlacementCondition.Satisfied;
  if (eligible.validBindings === 0) {
    return {
      type,
      status: 'False',
      reason: PlacementReason.NoManagedClusterSetBindings,
      message: 'No valid ManagedClusterSetBindings found in placement namespace',
    };
  }
  if (eligible.clusterSets.length === 0) {
    const requested = (placement.spec?.clusterSets ?? []).join(',');
    return {
      type,
      status: 'False',
      reason: PlacementReason.NoIntersection,
      message: `None of ManagedClusterSets [${requested}] is bound to placement namespace`,
    };
  }
  if (eligible.clusters.length === 0) {
    return {
      type,
      status: 'False',
      reason: PlacementReason.AllManagedClusterSetsEmpty,
      message: `All ManagedClusterSets [${eligible.clusterSets.join(',')}] have no member ManagedCluster`,
    };
  }
  if (selected === 0) {
    return {
      type,
      status: 'False',
      reason: PlacementReason.NoManagedClusterMatched,
      message: 'No ManagedCluster matches any of the cluster predicate',
    };
  }
  if (unscheduled === 0) {
    return {
      type,
      status: 'True',
      reason: PlacementReason.AllDecisionsScheduled,
      message: 'All cluster decisions scheduled',
    };
  }
  return {
    type,
    status: 'False',
    reason: PlacementReason.NotAllDecisionsScheduled,
    message: `${unscheduled} cluster decisions unscheduled`,
  };
}
