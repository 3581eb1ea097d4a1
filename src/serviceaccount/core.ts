// The built-in Kubernetes kinds the serviceaccount components read and write — ServiceAccount,
// Secret, Namespace, TokenRequest, TokenReview, Role, RoleBinding — as plain JSON types and
// ResourceDescriptors for src/kube's ResourceClient. Only the fields tether uses are typed.
import type { KubeObject, ObjectMeta, ResourceDescriptor } from '../kube/index.ts';

export {
  namespaceResource,
  roleBindingResource,
  roleResource,
  secretResource,
  serviceAccountResource,
  tokenReviewResource,
} from '../kube/index.ts';

const core = (plural: string, kind: string, namespaced = true): ResourceDescriptor => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
});

/**
 * TokenRequest is the `token` subresource of one ServiceAccount, created with a POST. A descriptor
 * whose plural is that subresource path lets ResourceClient.create send it (with its timeouts and
 * ApiError messages) instead of a second request path through client-node's typed CoreV1Api.
 */
export function tokenRequestResource(serviceAccountName: string): ResourceDescriptor {
  return core(`serviceaccounts/${encodeURIComponent(serviceAccountName)}/token`, 'TokenRequest');
}

export interface ServiceAccount extends KubeObject {
  metadata: ObjectMeta;
}

export interface Namespace extends KubeObject {
  metadata: ObjectMeta;
}

export interface Secret extends KubeObject {
  metadata: ObjectMeta;
  type?: string;
  /** base64 values */
  data?: Record<string, string>;
}

export interface TokenRequest extends KubeObject {
  spec: { expirationSeconds?: number; audiences?: string[] };
  status?: { token: string; expirationTimestamp: string };
}

export interface TokenReview extends KubeObject {
  spec: { token: string; audiences?: string[] };
  status?: {
    authenticated?: boolean;
    error?: string;
    audiences?: string[];
    user?: { username?: string; uid?: string; groups?: string[] };
  };
}

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface Role extends KubeObject {
  metadata: ObjectMeta;
  rules: PolicyRule[];
}

export interface RoleBinding extends KubeObject {
  metadata: ObjectMeta;
  roleRef: { apiGroup: 'rbac.authorization.k8s.io'; kind: 'Role' | 'ClusterRole'; name: string };
  subjects: Array<{
    apiGroup?: string;
    kind: 'Group' | 'User' | 'ServiceAccount';
    name: string;
    namespace?: string;
  }>;
}
