// The shape the page needs of any Kubernetes object: metadata, and status/spec as loose records
// that the views read field by field through the helpers in format.ts. The OCM types of src/api
// describe these objects fully; the page reads a few fields of many kinds and must cope with
// whatever an apiserver of another version sends, so it does not rely on them.

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: Condition[] };
  [field: string]: unknown;
}
