// Placement APIs of OCM: ManagedClusterSet and ManagedClusterSetBinding
// (cluster.open-cluster-management.io/v1beta2), Placement and PlacementDecision (v1beta1),
// AddOnPlacementScore (v1alpha1) and ManifestWorkReplicaSet (work.open-cluster-management.io/v1alpha1)
// — TS types, resource descriptors, and the labels, condition types and reasons OCM components and
// tools (clusteradm, Argo CD's ClusterDecisionResource generator) key on. The CRDs are in
// placement-crds.ts; controllers live in src/placement.

import type { ObjectMeta } from '../kube/types.ts';
import { clusterApiGroup, type TaintEffect } from './cluster.ts';
import type { Condition } from './conditions.ts';
import type { ApiResource } from './resource.ts';
import { type ManifestWorkSpec, workApiGroup } from './work.ts';

export const managedClusterSetResource = {
  group: clusterApiGroup,
  version: 'v1beta2',
  plural: 'managedclustersets',
  kind: 'ManagedClusterSet',
  namespaced: false,
} as const satisfies ApiResource;

export const managedClusterSetBindingResource = {
  group: clusterApiGroup,
  version: 'v1beta2',
  plural: 'managedclustersetbindings',
  kind: 'ManagedClusterSetBinding',
  namespaced: true,
} as const satisfies ApiResource;

export const placementResource = {
  group: clusterApiGroup,
  version: 'v1beta1',
  plural: 'placements',
  kind: 'Placement',
  namespaced: true,
} as const satisfies ApiResource;

export const placementDecisionResource = {
  group: clusterApiGroup,
  version: 'v1beta1',
  plural: 'placementdecisions',
  kind: 'PlacementDecision',
  namespaced: true,
} as const satisfies ApiResource;

export const addOnPlacementScoreResource = {
  group: clusterApiGroup,
  version: 'v1alpha1',
  plural: 'addonplacementscores',
  kind: 'AddOnPlacementScore',
  namespaced: true,
} as const satisfies ApiResource;

export const manifestWorkReplicaSetResource = {
  group: workApiGroup,
  version: 'v1alpha1',
  plural: 'manifestworkreplicasets',
  kind: 'ManifestWorkReplicaSet',
  namespaced: true,
} as const satisfies ApiResource;

// ---- names ----

/** A ManagedCluster's set (ExclusiveClusterSetLabel sets select by it). */
export const clusterSetLabel = 'cluster.open-cluster-management.io/clusterset';

/** The set every cluster without a set label belongs to (selectorType ExclusiveClusterSetLabel). */
export const defaultClusterSetName = 'default';

/** The set of all clusters (selectorType LabelSelector with an empty selector). */
export const globalClusterSetName = 'global';

/** On a PlacementDecision: the Placement it belongs to. */
export const placementLabel = 'cluster.open-cluster-management.io/placement';
/** On a PlacementDecision: the index of its decision group. */
export const decisionGroupIndexLabel = 'cluster.open-cluster-management.io/decision-group-index';
/** On a PlacementDecision: the name of its decision group ('' when the group has none). */
export const decisionGroupNameLabel = 'cluster.open-cluster-management.io/decision-group-name';

/** OCM puts at most this many decisions into one PlacementDecision. */
export const maxDecisionsPerPlacementDecision = 100;

/** `<placement>-decision-<n>`, n from 1: the names OCM gives a Placement's PlacementDecisions. */
export function placementDecisionName(placementName: string, index: number): string {
  return `${placementName}-decision-${index}`;
}

export type ClusterSetSelectorType = 'ExclusiveClusterSetLabel' | 'LabelSelector';

export const ClusterSetSelectorType = {
  ExclusiveClusterSetLabel: 'ExclusiveClusterSetLabel',
  LabelSelector: 'LabelSelector',
} as const satisfies Record<ClusterSetSelectorType, ClusterSetSelectorType>;

/** Condition types on ManagedClusterSet / ManagedClusterSetBinding. */
export const ClusterSetCondition = {
  /** True when no ManagedCluster is in the set. */
  Empty: 'ClusterSetEmpty',
  /** On a binding: True when the set it names exists. */
  Bound: 'Bound',
} as const;

export const ClusterSetReason = {
  NoClusterMatched: 'NoClusterMatched',
  ClustersSelected: 'ClustersSelected',
  ClusterSetBound: 'ClusterSetBound',
  ClusterSetNotFound: 'ClusterSetNotFound',
} as const;

/** Condition types on Placement.status.conditions. */
export const PlacementCondition = {
  Satisfied: 'PlacementSatisfied',
  Misconfigured: 'PlacementMisconfigured',
} as const;

export const PlacementReason = {
  AllDecisionsScheduled: 'AllDecisionsScheduled',
  NotAllDecisionsScheduled: 'NotAllDecisionsScheduled',
  NoManagedClusterSetBindings: 'NoManagedClusterSetBindings',
  AllManagedClusterSetsEmpty: 'AllManagedClusterSetsEmpty',
  NoManagedClusterMatched: 'NoManagedClusterMatched',
  Succeedconfigured: 'Succeedconfigured',
  Misconfigured: 'Misconfigured',
} as const;

/** Event reasons the placement controller records. */
export const PlacementEventReason = {
  DecisionCreate: 'DecisionCreate',
  DecisionUpdate: 'DecisionUpdate',
  ScoreUpdate: 'ScoreUpdate',
} as const;

/** Condition types on ManifestWorkReplicaSet.status.conditions. */
export const ManifestWorkReplicaSetCondition = {
  PlacementVerified: 'PlacementVerified',
  PlacementRolledOut: 'PlacementRolledOut',
  ManifestworkApplied: 'ManifestworkApplied',
} as const;

export const ManifestWorkReplicaSetReason = {
  AsExpected: 'AsExpected',
  PlacementDecisionNotFound: 'PlacementDecisionNotFound',
  PlacementDecisionEmpty: 'PlacementDecisionEmpty',
  NotAsExpected: 'NotAsExpected',
  Processing: 'Processing',
  Progressing: 'Progressing',
  Complete: 'Complete',
} as const;

// The label OCM sets on each ManifestWork a ManifestWorkReplicaSet creates (`<namespace>.<name>`) is
// manifestWorkReplicaSetLabel in work.ts.
/** Label naming the Placement a ManifestWorkReplicaSet's ManifestWork came from. */
export const manifestWorkReplicaSetPlacementLabel = 'work.open-cluster-management.io/placementname';
/** Finalizer holding a ManifestWorkReplicaSet until its ManifestWorks are gone. */
export const manifestWorkReplicaSetFinalizer = 'work.open-cluster-management.io/manifest-work-cleanup';

// ---- shared shapes ----

export interface LabelSelectorRequirement {
  key: string;
  /** In, NotIn, Exists, DoesNotExist */
  operator: string;
  values?: string[];
}

/** metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** Like a label selector, on `status.clusterClaims` (no matchLabels). */
export interface ClusterClaimSelector {
  matchExpressions?: LabelSelectorRequirement[];
}

// ---- ManagedClusterSet / ManagedClusterSetBinding ----

export interface ManagedClusterSelector {
  selectorType: ClusterSetSelectorType;
  /** Only with selectorType LabelSelector; empty selects every cluster. */
  labelSelector?: LabelSelector;
}

export interface ManagedClusterSetSpec {
  /** Defaults to `{selectorType: ExclusiveClusterSetLabel}`. */
  clusterSelector?: ManagedClusterSelector;
  managedNamespaces?: Array<{ name: string }>;
}

export interface ManagedClusterSet {
  apiVersion: 'cluster.open-cluster-management.io/v1beta2';
  kind: 'ManagedClusterSet';
  metadata: ObjectMeta;
  spec?: ManagedClusterSetSpec;
  status?: { conditions?: Condition[] };
}

export interface ManagedClusterSetBinding {
  apiVersion: 'cluster.open-cluster-management.io/v1beta2';
  kind: 'ManagedClusterSetBinding';
  /** The name must equal spec.clusterSet (enforced on the hub). */
  metadata: ObjectMeta;
  spec: { clusterSet: string };
  status?: { conditions?: Condition[] };
}

// ---- Placement / PlacementDecision ----

export interface ClusterSelector {
  labelSelector?: LabelSelector;
  claimSelector?: ClusterClaimSelector;
  celSelector?: { celExpressions?: string[] };
}

export interface ClusterPredicate {
  requiredClusterSelector?: ClusterSelector;
}

export type ScoreCoordinateType = 'BuiltIn' | 'AddOn';

export interface ScoreCoordinate {
  type: ScoreCoordinateType;
  /** Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory, Spread */
  builtIn?: string;
  addOn?: { resourceName: string; scoreName: string };
}

export interface PrioritizerConfig {
  scoreCoordinate: ScoreCoordinate;
  /** −10…10, default 1. */
  weight?: number;
}

export type PrioritizerPolicyMode = 'Additive' | 'Exact';

export const PrioritizerPolicyMode = {
  Additive: 'Additive',
  Exact: 'Exact',
} as const satisfies Record<PrioritizerPolicyMode, PrioritizerPolicyMode>;

export const BuiltInPrioritizer = {
  Balance: 'Balance',
  Steady: 'Steady',
  ResourceAllocatableCPU: 'ResourceAllocatableCPU',
  ResourceAllocatableMemory: 'ResourceAllocatableMemory',
  Spread: 'Spread',
} as const;

export interface PrioritizerPolicy {
  /** Default Additive. */
  mode?: PrioritizerPolicyMode | string;
  configurations?: PrioritizerConfig[];
}

export interface SpreadConstraint {
  topologyKey: string;
  topologyKeyType: 'Label' | 'Claim';
  maxSkew?: number;
  whenUnsatisfiable?: 'DoNotSchedule' | 'ScheduleAnyway';
}

export interface Toleration {
  key?: string;
  /** Equal (default) or Exists. */
  operator?: 'Equal' | 'Exists';
  value?: string;
  /** Empty matches every effect. */
  effect?: TaintEffect;
  /** Counted from the taint's timeAdded; absent tolerates forever. */
  tolerationSeconds?: number;
}

export interface DecisionGroup {
  groupName: string;
  groupClusterSelector: { labelSelector?: LabelSelector; claimSelector?: ClusterClaimSelector };
}

export interface DecisionStrategy {
  groupStrategy?: {
    decisionGroups?: DecisionGroup[];
    /** A count or a percentage ("25%"); default "100%". */
    clustersPerDecisionGroup?: number | string;
  };
}

export interface PlacementSpec {
  clusterSets?: string[];
  numberOfClusters?: number;
  predicates?: ClusterPredicate[];
  prioritizerPolicy?: PrioritizerPolicy;
  spreadPolicy?: { spreadConstraints?: SpreadConstraint[] };
  tolerations?: Toleration[];
  decisionStrategy?: DecisionStrategy;
  /** ClusterName (default) or Score. */
  sortBy?: 'ClusterName' | 'Score';
  /** Minimum time between score-driven re-decisions, e.g. "1m" (default). */
  scoreRateLimit?: string;
}

export interface DecisionGroupStatus {
  decisionGroupIndex?: number;
  decisionGroupName?: string;
  /** Names of the PlacementDecisions of this group. */
  decisions?: string[];
  clusterCount?: number;
}

export interface PlacementStatus {
  numberOfSelectedClusters?: number;
  decisionGroups?: DecisionGroupStatus[];
  conditions?: Condition[];
  lastScoreUpdateTime?: string;
}

export interface Placement {
  apiVersion: 'cluster.open-cluster-management.io/v1beta1';
  kind: 'Placement';
  metadata: ObjectMeta;
  spec: PlacementSpec;
  status?: PlacementStatus;
}

export interface ClusterDecision {
  clusterName: string;
  /** OCM writes ''. */
  reason: string;
  score?: number;
}

export interface PlacementDecision {
  apiVersion: 'cluster.open-cluster-management.io/v1beta1';
  kind: 'PlacementDecision';
  metadata: ObjectMeta;
  status?: { decisions: ClusterDecision[] };
}

// ---- AddOnPlacementScore ----

export interface AddOnPlacementScoreItem {
  name: string;
  /** −100…100. */
  value: number;
}

export interface AddOnPlacementScore {
  apiVersion: 'cluster.open-cluster-management.io/v1alpha1';
  kind: 'AddOnPlacementScore';
  metadata: ObjectMeta;
  status?: {
    conditions?: Condition[];
    scores?: AddOnPlacementScoreItem[];
    /** After this time the scores count as 0. */
    validUntil?: string;
  };
}

// ---- ManifestWorkReplicaSet ----

export type RolloutType = 'All' | 'Progressive' | 'ProgressivePerGroup';

export const RolloutType = {
  All: 'All',
  Progressive: 'Progressive',
  ProgressivePerGroup: 'ProgressivePerGroup',
} as const satisfies Record<RolloutType, RolloutType>;

export interface MandatoryDecisionGroup {
  groupName?: string;
  groupIndex?: number;
}

export interface RolloutConfig {
  /** Duration ("5m"), default "0". */
  minSuccessTime?: string;
  /** Duration or "None" (default). */
  progressDeadline?: string;
  /** Count or percentage, default 0. */
  maxFailures?: number | string;
}

export interface RolloutStrategy {
  type?: RolloutType;
  all?: RolloutConfig;
  progressive?: RolloutConfig & {
    mandatoryDecisionGroups?: MandatoryDecisionGroup[];
    maxConcurrency?: number | string;
  };
  progressivePerGroup?: RolloutConfig & { mandatoryDecisionGroups?: MandatoryDecisionGroup[] };
}

export interface LocalPlacementReference {
  name: string;
  rolloutStrategy?: RolloutStrategy;
}

export interface ManifestWorkReplicaSetSpec {
  manifestWorkTemplate?: ManifestWorkSpec;
  placementRefs: LocalPlacementReference[];
  /** Background (default) or Foreground. */
  cascadeDeletionPolicy: 'Background' | 'Foreground';
}

export interface ManifestWorkReplicaSetSummary {
  total?: number;
  desiredTotal?: number;
  applied?: number;
  available?: number;
  degraded?: number;
  progressing?: number;
  updated?: number;
}

export interface ManifestWorkReplicaSetStatus {
  conditions?: Condition[];
  summary?: ManifestWorkReplicaSetSummary;
  placementSummary?: Array<{
    name?: string;
    availableDecisionGroups?: string;
    summary?: ManifestWorkReplicaSetSummary;
  }>;
}

export interface ManifestWorkReplicaSet {
  apiVersion: 'work.open-cluster-management.io/v1alpha1';
  kind: 'ManifestWorkReplicaSet';
  metadata: ObjectMeta;
  spec: ManifestWorkReplicaSetSpec;
  status?: ManifestWorkReplicaSetStatus;
}
