// The scheduler's view of OCM's placement API: the types and names of src/api/placement.ts, plus the
// few names only scheduling uses (OCM's NoIntersection reason, the DecisionDelete event, the
// scheduling-disable annotation, score bounds). Types and constants only.
import {
  PlacementEventReason as ApiPlacementEventReason,
  PlacementReason as ApiPlacementReason,
  type DecisionStrategy,
  maxDecisionsPerPlacementDecision,
  type Placement,
  type PlacementSpec,
} from '../../api/placement.ts';

export type {
  AddOnPlacementScoreItem,
  ClusterClaimSelector,
  ClusterDecision,
  ClusterSelector,
  DecisionGroup,
  DecisionGroupStatus,
  LabelSelector,
  LabelSelectorRequirement,
  PlacementSpec,
  PrioritizerConfig,
  PrioritizerPolicy,
  ScoreCoordinate,
  Toleration,
} from '../../api/placement.ts';
export {
  clusterSetLabel,
  decisionGroupIndexLabel,
  decisionGroupNameLabel,
  PlacementCondition,
  placementLabel,
} from '../../api/placement.ts';

/** What the scheduler reads of a Placement. */
export interface SchedulingPlacement {
  metadata: Placement['metadata'];
  spec?: PlacementSpec;
}

export type GroupStrategy = NonNullable<DecisionStrategy['groupStrategy']>;

/** Most cluster decisions in one PlacementDecision. */
export const maxDecisionsPerObject = maxDecisionsPerPlacementDecision;

/** Annotation "true" on a Placement: the scheduler leaves it alone (OCM's experimental switch). */
export const placementDisableAnnotation =
  'cluster.open-cluster-management.io/experimental-scheduling-disable';

/** Reasons of PlacementSatisfied and PlacementMisconfigured, as OCM's scheduler writes them. */
export const PlacementReason = {
  ...ApiPlacementReason,
  /** spec.clusterSets names no set bound to the namespace */
  NoIntersection: 'NoIntersection',
} as const;

/** Event reasons on a Placement (OCM also records DecisionDelete when it removes a decision). */
export const PlacementEventReason = {
  ...ApiPlacementEventReason,
  DecisionDelete: 'DecisionDelete',
} as const;

/** The built-in prioritizers this scheduler runs. */
export const BuiltInPrioritizer = {
  Balance: 'Balance',
  Steady: 'Steady',
  ResourceAllocatableCPU: 'ResourceAllocatableCPU',
  ResourceAllocatableMemory: 'ResourceAllocatableMemory',
} as const;

export const maxClusterScore = 100;
export const minClusterScore = -100;
