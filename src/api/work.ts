// work.open-cluster-management.io/v1: ManifestWork (hub, in the cluster namespace) and
// AppliedManifestWork (managed cluster) — TS types, resource descriptors, and the condition types,
// reasons, finalizers and option values the work agent and hub controllers share (the CRDs are in
// work-crds.ts).

import { createHash } from 'node:crypto';
import type { ObjectMeta } from '../kube/types.ts';
import type { Condition } from './conditions.ts';
import type { ApiResource } from './resource.ts';

export const workApiGroup = 'work.open-cluster-management.io';

export const manifestWorkResource = {
  group: workApiGroup,
  version: 'v1',
  plural: 'manifestworks',
  kind: 'ManifestWork',
  namespaced: true,
} as const satisfies ApiResource;

export const appliedManifestWorkResource = {
  group: workApiGroup,
  version: 'v1',
  plural: 'appliedmanifestworks',
  kind: 'AppliedManifestWork',
  namespaced: false,
} as const satisfies ApiResource;

// ---- names ----

/** Condition types, both on the work (status.conditions) and on each manifest. */
export const ManifestWorkCondition = {
  Applied: 'Applied',
  Available: 'Available',
  Progressing: 'Progressing',
  Degraded: 'Degraded',
  /** Set by `Complete` condition rules; a complete manifest is no longer updated. */
  Complete: 'Complete',
  /** Work only, while the agent removes what a deleted work applied. */
  Deleting: 'Deleting',
  /** Per manifest only: whether feedback rules could be evaluated. */
  StatusFeedbackSynced: 'StatusFeedbackSynced',
} as const;

export const ManifestWorkReason = {
  // work level
  AppliedManifestWorkComplete: 'AppliedManifestWorkComplete',
  AppliedManifestWorkFailed: 'AppliedManifestWorkFailed',
  ResourcesAvailable: 'ResourcesAvailable',
  ResourcesNotAvailable: 'ResourcesNotAvailable',
  ResourcesStatusUnknown: 'ResourcesStatusUnknown',
  Applying: 'Applying',
  Completed: 'Completed',
  Failed: 'Failed',
  /** Complete: every manifest with a Complete rule is complete. */
  ManifestsComplete: 'ManifestsComplete',
  ManifestsNotComplete: 'ManifestsNotComplete',
  /** Degraded: whether some manifest's state does not match what the work asks for. */
  ManifestsDegraded: 'ManifestsDegraded',
  ManifestsNotDegraded: 'ManifestsNotDegraded',
  ManifestWorkDeleting: 'ManifestWorkDeleting',
  /** A spec field this agent cannot honour (named in the message); the work is applied without it. */
  UnsupportedConfiguration: 'UnsupportedConfiguration',
  // manifest level
  AppliedManifestComplete: 'AppliedManifestComplete',
  AppliedManifestFailed: 'AppliedManifestFailed',
  /** The manifest config's ignoreFields could not be used (a bad pointer or path). */
  AppliedManifestSSAIgnoreFieldError: 'AppliedManifestSSAIgnoreFieldError',
  ApplyConflict: 'ApplyConflict',
  ResourceAvailable: 'ResourceAvailable',
  ResourceNotAvailable: 'ResourceNotAvailable',
  FetchingResourceFailed: 'FetchingResourceFailed',
  IncompletedResourceMeta: 'IncompletedResourceMeta',
  StatusFeedbackSynced: 'StatusFeedbackSynced',
  NoStatusFeedbackSynced: 'NoStatusFeedbackSynced',
  StatusFeedbackSyncFailed: 'StatusFeedbackSyncFailed',
  // condition rules (every reason a rule sets starts with ConditionRule)
  ConditionRuleEvaluated: 'ConditionRuleEvaluated',
  ConditionRuleInvalid: 'ConditionRuleInvalid',
  ConditionRuleExpressionError: 'ConditionRuleExpressionError',
  ConditionRuleInternalError: 'ConditionRuleInternalError',
} as const;

/** Label ManifestWorkReplicaSet puts on the works it owns; those are not garbage collected by TTL. */
export const manifestWorkReplicaSetLabel = 'work.open-cluster-management.io/manifestworkreplicaset';

/** On a ManifestWork: the hub waits for the agent to remove what it applied. */
export const manifestWorkFinalizer = 'cluster.open-cluster-management.io/manifest-work-cleanup';

/** On an AppliedManifestWork: the agent deletes the applied resources before letting it go. */
export const appliedManifestWorkFinalizer =
  'cluster.open-cluster-management.io/applied-manifest-work-cleanup';

/** Annotation on applied resources with the hash of the manifest they came from. */
export const objectSpecHashAnnotation = 'open-cluster-management.io/object-hash';

/** Annotation on server-side applied objects with ignoreFields: the hash of what the agent applied. */
export const configSpecHashAnnotation = 'open-cluster-management.io/config-spec-hash';

/** Field manager for server-side apply unless a manifest config names another `work-agent…` one. */
export const defaultWorkFieldManager = 'work-agent';

/** Longest JsonRaw feedback value the CRD accepts; longer values must be dropped or truncated. */
export const feedbackJsonRawMaxLength = 1024;

export type DeletePropagationPolicy = 'Foreground' | 'Orphan' | 'SelectivelyOrphan';
export type UpdateStrategyType = 'Update' | 'CreateOnly' | 'ServerSideApply' | 'ReadOnly';
export type FeedbackType = 'WellKnownStatus' | 'JSONPaths';
export type FieldValueType = 'Integer' | 'String' | 'Boolean' | 'JsonRaw';

export const DeletePropagationPolicy = {
  Foreground: 'Foreground',
  Orphan: 'Orphan',
  SelectivelyOrphan: 'SelectivelyOrphan',
} as const satisfies Record<DeletePropagationPolicy, DeletePropagationPolicy>;

export const UpdateStrategyType = {
  Update: 'Update',
  CreateOnly: 'CreateOnly',
  ServerSideApply: 'ServerSideApply',
  ReadOnly: 'ReadOnly',
} as const satisfies Record<UpdateStrategyType, UpdateStrategyType>;

export const FeedbackType = {
  WellKnownStatus: 'WellKnownStatus',
  JSONPaths: 'JSONPaths',
} as const satisfies Record<FeedbackType, FeedbackType>;

export const FieldValueType = {
  Integer: 'Integer',
  String: 'String',
  Boolean: 'Boolean',
  JsonRaw: 'JsonRaw',
} as const satisfies Record<FieldValueType, FieldValueType>;

// ---- types ----

/** Identifies one resource by group, resource (plural), name and namespace ('' = core / cluster scope). */
export interface ResourceIdentifier {
  group?: string;
  resource: string;
  name: string;
  namespace?: string;
}

export interface DeleteOption {
  /** Defaults to Foreground on the server. */
  propagationPolicy?: DeletePropagationPolicy;
  selectivelyOrphans?: { orphaningRules?: ResourceIdentifier[] };
  ttlSecondsAfterFinished?: number;
}

export interface JsonPathFeedback {
  name: string;
  path: string;
  version?: string;
}

export interface FeedbackRule {
  type: FeedbackType;
  jsonPaths?: JsonPathFeedback[];
}

export type IgnoreFieldsCondition = 'OnSpokePresent' | 'OnSpokeChange';

export const IgnoreFieldsCondition = {
  OnSpokePresent: 'OnSpokePresent',
  OnSpokeChange: 'OnSpokeChange',
} as const satisfies Record<IgnoreFieldsCondition, IgnoreFieldsCondition>;

/** Fields of a server-side applied object the agent leaves as the managed cluster has them. */
export interface IgnoreField {
  /** Defaults to OnSpokePresent on the server. */
  condition: IgnoreFieldsCondition;
  /** RFC 6901 pointers, e.g. `/spec/replicas`. */
  jsonPointers?: string[];
  /** jq path expressions, e.g. `.spec.template.spec.containers[].image`. */
  jqPathExpressions?: string[];
  /** Older OCM spelling of jsonPointers' purpose; kept so such works round-trip. */
  jsonPaths?: string[];
}

export interface ServerSideApplyConfig {
  /** Defaults to `work-agent`; must start with it. */
  fieldManager?: string;
  force?: boolean;
  ignoreFields?: IgnoreField[];
}

export interface UpdateStrategy {
  /** Required by the CRD; defaults to Update on the server. */
  type: UpdateStrategyType;
  serverSideApply?: ServerSideApplyConfig;
}

export type ConditionRuleType = 'WellKnownConditions' | 'CEL';

export const ConditionRuleType = {
  WellKnownConditions: 'WellKnownConditions',
  CEL: 'CEL',
} as const satisfies Record<ConditionRuleType, ConditionRuleType>;

/** A condition the agent computes for one manifest from its live object. */
export interface ConditionRule {
  /** The condition type it sets (e.g. `Complete`); the list is keyed by it. */
  condition: string;
  type: ConditionRuleType;
  celExpressions?: string[];
  message?: string;
  messageExpression?: string;
}

export type FeedbackScrapeType = 'Poll' | 'Watch';

export interface ManifestConfigOption {
  resourceIdentifier: ResourceIdentifier;
  feedbackRules?: FeedbackRule[];
  /** Defaults to Poll on the server. */
  feedbackScrapeType?: FeedbackScrapeType;
  updateStrategy?: UpdateStrategy;
  conditionRules?: ConditionRule[];
}

/** A complete Kubernetes object (apiVersion, kind, metadata, …) to apply on the managed cluster. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata?: ObjectMeta;
  [field: string]: unknown;
}

/** spec.executor: whose permissions bound what the work agent applies (see src/work/agent/executor.ts). */
export interface ManifestWorkExecutor {
  subject?: { type?: 'ServiceAccount'; serviceAccount?: { namespace: string; name: string } };
}

export interface ManifestWorkSpec {
  workload?: { manifests?: Manifest[] };
  deleteOption?: DeleteOption;
  manifestConfigs?: ManifestConfigOption[];
  executor?: ManifestWorkExecutor;
}

export interface ManifestResourceMeta {
  ordinal: number;
  group?: string;
  version?: string;
  kind?: string;
  resource?: string;
  name?: string;
  namespace?: string;
}

export interface FieldValue {
  type: FieldValueType;
  integer?: number;
  string?: string;
  boolean?: boolean;
  /** JSON text, at most feedbackJsonRawMaxLength characters. */
  jsonRaw?: string;
}

export interface FeedbackValue {
  name: string;
  fieldValue: FieldValue;
}

export interface ManifestCondition {
  resourceMeta: ManifestResourceMeta;
  /** Always present as OCM writes it: `{}` when there are no values. */
  statusFeedback?: { values?: FeedbackValue[] };
  conditions: Condition[];
}

export interface ManifestWorkStatus {
  conditions?: Condition[];
  resourceStatus?: { manifests?: ManifestCondition[] };
}

export interface ManifestWork {
  apiVersion: 'work.open-cluster-management.io/v1';
  kind: 'ManifestWork';
  metadata: ObjectMeta;
  spec: ManifestWorkSpec;
  status?: ManifestWorkStatus;
}

export interface AppliedManifestWorkSpec {
  /** Hash identifying the hub the ManifestWork came from. */
  hubHash: string;
  manifestWorkName: string;
  agentID?: string;
}

export interface AppliedManifestResourceMeta {
  group?: string;
  version: string;
  resource: string;
  namespace?: string;
  name: string;
  uid?: string;
}

export interface AppliedManifestWorkStatus {
  appliedResources?: AppliedManifestResourceMeta[];
  evictionStartTime?: string;
}

export interface AppliedManifestWork {
  apiVersion: 'work.open-cluster-management.io/v1';
  kind: 'AppliedManifestWork';
  metadata: ObjectMeta;
  spec: AppliedManifestWorkSpec;
  status?: AppliedManifestWorkStatus;
}

/** OCM's hub hash: hex sha256 of the hub apiserver URL as the agent's hub kubeconfig names it. */
export function hubHashOf(hubServer: string): string {
  return createHash('sha256').update(hubServer).digest('hex');
}
