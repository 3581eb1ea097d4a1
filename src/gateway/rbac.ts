// RBAC of the gateway on both sides. On the hub, its own identity needs: read ManagedClusters and
// Secrets (MSA token Secrets in cluster namespaces, credential Secrets), create SubjectAccessReviews,
// and read the front-proxy ConfigMap through the built-in kube-system Role every aggregated
// apiserver is bound to. Callers of the gateway need `clustergateways/proxy` (verbs as used)
// instead. On a managed cluster, its ServiceAccount needs only to impersonate (identity.ts), and hub
// users get rights there by bindings to their prefixed names. Callers of the `tunnel` subresource
// need `get clustergateways/tunnel`. The console's static files (resource `console`) are open to
// every authenticated hub user: consoleViewerRbac.
import type { KubeObject } from '../kube/index.ts';
import { type GatewayIdentityMode, hubAdminsGroup, managedClusterUser } from './identity.ts';

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

/**
 * What the gateway's ServiceAccount needs on a managed cluster when it impersonates its callers
 * (the default): to impersonate users and groups, nothing else. Names come prefixed (identity.ts),
 * and extras are never impersonated, so no `userextras/*`, `uids` or `serviceaccounts`.
 */
export const gatewayManagedClusterRules = [
  { apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] },
];

/**
 * The objects that let the gateway act on a managed cluster, to deliver there (e.g. by ManifestWork):
 * - `impersonate`: a ClusterRole with gatewayManagedClusterRules bound to the gateway's
 *   ServiceAccount, and (hubAdmins, default true) cluster-admin for the group
 *   `cluster:hub:system:masters`, so the hub's admins stay admins there. Nobody else gets rights.
 * - `shared`: cluster-admin for the gateway's ServiceAccount, so every caller the hub lets through is
 *   cluster-admin on the managed cluster (cluster-gateway's default; opt in knowingly).
 */
export function gatewayManagedClusterRbac(
  subject: { namespace: string; serviceAccount: string },
  opts: { identityMode?: GatewayIdentityMode; hubAdmins?: boolean } = {},
): KubeObject[] {
  const subjects = [{ kind: 'ServiceAccount', name: subject.serviceAccount, namespace: subject.namespace }];
  if (opts.identityMode === 'shared') {
    return [clusterRoleBinding(`tether-gateway:${subject.serviceAccount}`, 'cluster-admin', subjects)];
  }
  const role = 'tether-gateway:impersonator';
  const objects: KubeObject[] = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: gatewayManagedClusterRules,
    } as KubeObject,
    clusterRoleBinding(`${role}:${subject.serviceAccount}`, role, subjects),
  ];
  if (opts.hubAdmins !== false) {
    objects.push(
      clusterRoleBinding('tether-gateway:hub-admins', 'cluster-admin', [
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: hubAdminsGroup },
      ]),
    );
  }
  return objects;
}

/**
 * A ClusterRoleBinding on a managed cluster that gives hub user `hubUser` (as the gateway names it
 * there, `cluster:hub:<hubUser>`) the ClusterRole `clusterRole`, e.g. `view`.
 */
export function hubUserManagedClusterRbac(hubUser: string, clusterRole: string, name?: string): KubeObject {
  return clusterRoleBinding(name ?? `tether-gateway:hub-user:${hubUser}:${clusterRole}`, clusterRole, [
    { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: managedClusterUser(hubUser) },
  ]);
}

function clusterRoleBinding(name: string, clusterRole: string, subjects: object[]): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
    subjects,
  } as KubeObject;
}

/** The ClusterRole (and its binding) that lets every hub user load the console from the gateway. */
export const consoleViewerRoleName = 'tether:console-viewer';

/**
 * ClusterRole tether:console-viewer (get, list on `console` of cluster.core.oam.dev and nothing
 * else) bound to system:authenticated. The console resource is the gateway's static files only
 * (index.html, app.js, app.css: public, the same for everyone, no data); what the page then shows
 * is read with the viewer's own rights, so this grants nothing else.
 */
export function consoleViewerRbac(labels: Record<string, string> = {}): KubeObject[] {
  const metadata = { name: consoleViewerRoleName, ...(Object.keys(labels).length ? { labels } : {}) };
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata,
      rules: [{ apiGroups: ['cluster.core.oam.dev'], resources: ['console'], verbs: ['get', 'list'] }],
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: consoleViewerRoleName },
      subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:authenticated' }],
    } as KubeObject,
  ];
}
