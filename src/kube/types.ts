// The JSON shapes every Kubernetes object shares and where a kind lives in the API. OCM kinds are
// typed in src/api on top of these; nothing here talks to an apiserver.

/** Where a kind lives in the API: `group` is '' for the core group (Secret, Namespace, …). */
export interface ResourceDescriptor {
  readonly group: string;
  readonly version: string;
  /** lower-case plural used in URLs, e.g. `managedclusters` */
  readonly plural: string;
  readonly kind: string;
  /** true for namespaced kinds, false for cluster-scoped ones */
  readonly namespaced: boolean;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** metav1.ObjectMeta as JSON (timestamps are RFC 3339 strings). */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

/** Any Kubernetes object as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** A JSON merge patch (RFC 7386): null deletes a field. */
export type MergePatch = { [field: string]: unknown };

/** "group/version", or "version" for the core group. */
export function apiVersionOf(d: ResourceDescriptor): string {
  return d.group ? `${d.group}/${d.version}` : d.version;
}

/** URL path of a collection, an object or an object's subresource. */
export function resourcePath(
  d: ResourceDescriptor,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let path = d.group ? `/apis/${d.group}/${d.version}` : `/api/${d.version}`;
  if (d.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${d.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export const ConditionStatus = {
  True: 'True',
  False: 'False',
  Unknown: 'Unknown',
} as const satisfies Record<ConditionStatus, ConditionStatus>;

/**
 * One observation about an object (metav1.Condition). The API server requires `type`, `status`,
 * `reason`, `message` (may be empty) and `lastTransitionTime` on every entry.
 */
export interface Condition {
  type: string;
  status: ConditionStatus;
  /** CamelCase, 1–1024 characters. */
  reason: string;
  message: string;
  /** RFC 3339; changes only when `status` changes. */
  lastTransitionTime: string;
  observedGeneration?: number;
}
