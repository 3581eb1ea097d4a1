// What the gateway's own hub identity needs: read ManagedClusters and Secrets (MSA token Secrets in
// cluster namespaces, credential Secrets), read the front-proxy ConfigMap, and create
// SubjectAccessReviews. Callers of the gateway need `clustergateways/proxy` (verbs as used) instead.
import type { KubeObject } from '../kube/index.ts';

export const gatewayHubRules = [
  {
    apiGroups: ['cluster.open-cluster-management.io'],
    resources: ['managedclusters'],
    verbs: ['get', 'list', 'watch'],
  },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/** ClusterRole + ClusterRoleBinding granting gatewayHubRules to a hub ServiceAccount. */
export function gatewayHubRbac(
  subject: { namespace: string; serviceAccount: string },
  name = 'tether:gateway',
): KubeObject[] {
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
      subjects: [{ kind: 'ServiceAccount', name: subject.serviceAccount, namespace: subject.namespace }],
    } as KubeObject,
  ];
}
