// Placement scheduling (pure logic, no I/O): which clusters a Placement may choose from, the
// predicates, taints and tolerations, prioritizers, decision groups and PlacementDecision layout.
// The hub's placement controller (src/placement/hub/placement-controller.ts) feeds it from caches.
export { celClusterMatcher, compareVersions, type ScoreLookup } from './cel.ts';
export { type EligibleClusters, eligibleClusters, type SchedulingClusterSetBinding } from './cluster-sets.ts';
export {
  type ClusterGroup,
  type DecisionLayout,
  type DesiredDecision,
  decisionGroups,
  groupLength,
  layoutDecisions,
} from './groups.ts';
export { type PrioritizerInputs, prioritizersOf } from './prioritizers.ts';
export {
  type ScheduleInputs,
  type ScheduleResult,
  type ScheduleStatus,
  schedule,
} from './schedule.ts';
export {
  clusterSetMatcher,
  labelSelectorMatcher,
  type SchedulingClusterSet,
  SelectorError,
} from './selectors.ts';
export { clusterTolerated, validateTolerations } from './taints.ts';
export * from './types.ts';
