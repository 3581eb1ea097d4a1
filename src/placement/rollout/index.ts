// OCM's rollout strategies (All, Progressive, ProgressivePerGroup) as pure logic for any controller
// that deploys a workload to the clusters of a Placement (ManifestWorkReplicaSet today, add-ons
// later): decision groups from PlacementDecisions, and the next rollout step. No I/O.
export {
  clusterGroupsOf,
  clustersOf,
  groupsBesides,
  groupsWith,
  mandatoryGroupKeys,
} from './groups.ts';
export { nextRollout, parseMinSuccessTime, parseProgressDeadline, rolloutSize } from './strategy.ts';
export type { ClusterGroup, ClusterRolloutStatus, GroupKey, RolloutResult, RolloutStatus } from './types.ts';
