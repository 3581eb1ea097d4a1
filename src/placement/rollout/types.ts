// The shapes OCM's rollout helpers (cluster v1alpha1 RolloutStrategy, as sdk-go's RolloutHandler
// reads it) work with: a cluster's rollout status, the decision groups a Placement's decisions form,
// and what a rollout step returns. Pure types; nothing here talks to an apiserver.

/** Where one cluster stands for a workload (OCM's ClusterRolloutStatus values). */
export type RolloutStatus = 'ToApply' | 'Progressing' | 'Succeeded' | 'Failed' | 'TimeOut' | 'Skip';

/** A decision group: its index and name as PlacementDecision labels carry them. */
export interface GroupKey {
  groupIndex: number;
  /** '' for a group without a name */
  groupName: string;
}

/** The clusters of one decision group. */
export interface ClusterGroup {
  key: GroupKey;
  clusters: readonly string[];
}

export interface ClusterRolloutStatus {
  clusterName: string;
  status: RolloutStatus;
  groupKey?: GroupKey;
  /** ms since the epoch: when the status last changed (counts soak time and deadlines from here) */
  lastTransitionTime?: number;
  /** ms since the epoch: when this cluster's soak time or deadline ends */
  recheckTime?: number;
}

export interface RolloutResult {
  /** clusters to apply now, and clusters still progressing (or soaking) within the current step */
  clustersToRollout: ClusterRolloutStatus[];
  /** clusters whose progressDeadline passed */
  clustersTimeOut: ClusterRolloutStatus[];
  /** clusters that have the workload but are no longer decided: their workload goes */
  clustersRemoved: ClusterRolloutStatus[];
  /** the rollout stopped because more clusters failed than maxFailures allows */
  maxFailureBreach: boolean;
  /** look again after this long (a soak time or a deadline ends) */
  recheckAfterMs?: number;
}
