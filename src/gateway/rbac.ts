// What the gateway's own hub identity needs: read ManagedClusters and Secrets (MSA token Secrets in
// cluster namespaces, credential Secrets), create SubjectAccessReviews, and read the front-proxy
// ConfigMap through the built-in kube-system Role every aggregated apiserver is bound to. Callers of
// the gateway need `clustergateways/proxy` (verbs as used) instead.
import type { KubeObject } from '../kube/index.ts';

export const gatewayHubRules = [
  {
    apiGroups: ['cluster.open-cluster-management.io'],
    resources: ['managedclusters'],
    verbs: ['get', 'list', 'watch'],
  },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/**
 * ClusterRole + ClusterRoleBinding granting gatewayHubRules to a hub ServiceAccount, and a
 * RoleBinding in kube-system to `extension-apiserver-authentication-reader` (the ConfigMap with
 * the front-proxy CA and header names).
 */
export function gatewayHubRbac(
  subject: { namespace: string; serviceAccount: string },
  name = 'tether:gateway',
): KubeObject[] {
  const subjects = [{ kind: 'ServiceAccount', name: subject.serviceAccount, namespace: subject.namespace }];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: gatewayHubRules,
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects,
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${name}:authentication-reader`, namespace: 'kube-system' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'extension-apiserver-authentication-reader',
      },
      subjects,
    } as KubeObject,
  ];
}
