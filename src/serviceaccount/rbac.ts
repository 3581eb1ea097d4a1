// What the serviceaccount agent may do on the hub. The agent talks to the hub with its cluster's
// registration identity (group `system:open-cluster-management:<cluster>`), so one credential per
// cluster is rotated; these rules, granted in the cluster namespace only, confine it to that
// namespace's ManagedServiceAccounts and Secrets. registration-hub creates them with the rest of
// the cluster namespace's RBAC; tests create them for minted identities.
import { authenticationApiGroup, clusterAgentGroups } from '../api/index.ts';
import type { PolicyRule, Role, RoleBinding } from './core.ts';

/** Name of the Role and RoleBinding in the cluster namespace. */
export const serviceAccountAgentRoleName = 'open-cluster-management:managed-serviceaccount:agent';

export const serviceAccountAgentHubRules: readonly PolicyRule[] = [
  {
    apiGroups: [authenticationApiGroup],
    resources: ['managedserviceaccounts'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  },
  {
    apiGroups: [authenticationApiGroup],
    resources: ['managedserviceaccounts/status'],
    verbs: ['get', 'update', 'patch'],
  },
  {
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
];

/** The Role and RoleBinding granting cluster `clusterName`'s agents the rules above in its namespace. */
export function serviceAccountAgentHubRbac(clusterName: string): { role: Role; roleBinding: RoleBinding } {
  const [clusterGroup] = clusterAgentGroups(clusterName);
  const metadata = { name: serviceAccountAgentRoleName, namespace: clusterName };
  return {
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata,
      rules: serviceAccountAgentHubRules.map((r) => ({ ...r })),
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { ...metadata },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: serviceAccountAgentRoleName },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: clusterGroup ?? '' }],
    },
  };
}
