// What the serviceaccount agent may do on the hub. The agent talks to the hub with its cluster's
// registration identity (group `system:open-cluster-management:<cluster>`) or, as the
// managed-serviceaccount add-on, with that add-on's identity (group
// `system:open-cluster-management:cluster:<cluster>:addon:managed-serviceaccount`). A managed-cluster
// admin holds both credentials, so neither may read or rewrite Secrets hub users keep in the cluster
// namespace:
//   - static rules (serviceAccountAgentHubRules): the namespace's ManagedServiceAccounts, and only
//     `create` on Secrets (the hub admission policy managedcluster-secrets.open-cluster-management.io
//     lets it create nothing but MSA token Secrets);
//   - per cluster namespace (tokenSecretsRbac, kept by the hub's ManagedServiceAccount controller):
//     get/update/patch/delete on the Secrets named like the namespace's MSAs, and nothing when it
//     has none (an empty resourceNames would mean every Secret).
// registration-hub binds the static rules with the rest of the cluster namespace's RBAC; tests
// create them for minted identities. Pure data.
import { addonClusterGroup } from '../api/addon-registration.ts';
import { authenticationApiGroup, clusterAgentGroups } from '../api/index.ts';
import type { PolicyRule, Role, RoleBinding } from './core.ts';

/** Name of the Role and RoleBinding in the cluster namespace. */
export const serviceAccountAgentRoleName = 'open-cluster-management:managed-serviceaccount:agent';

/** OCM's name of the add-on that runs the agent with its own hub identity. */
export const managedServiceAccountAddonName = 'managed-serviceaccount';

/** Name of the per-namespace Role and RoleBinding granting the MSA token Secrets by name. */
export const tokenSecretsRoleName = 'open-cluster-management:managed-serviceaccount:token-secrets';

/** Verbs on its token Secrets, by name, beyond the static `create`. */
export const tokenSecretVerbs: readonly string[] = ['get', 'list', 'watch', 'update', 'patch', 'delete'];

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
  // A name is not known before the Secret exists: create is granted for any, admission narrows it.
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
];

const rbacGroup = 'rbac.authorization.k8s.io';

/** The groups the token Secrets are granted to: the cluster's and its managed-serviceaccount add-on's. */
export function tokenSecretsSubjects(clusterName: string): string[] {
  const [clusterGroup] = clusterAgentGroups(clusterName);
  return [clusterGroup ?? '', addonClusterGroup(clusterName, managedServiceAccountAddonName)];
}

/**
 * The Role and RoleBinding granting `clusterName`'s agents their token Secrets, named like the MSAs
 * in `msaNames` (sorted, deduplicated). Throws on an empty list: that Role would grant every Secret.
 */
export function tokenSecretsRbac(
  clusterName: string,
  msaNames: readonly string[],
): { role: Role; roleBinding: RoleBinding } {
  const names = [...new Set(msaNames)].filter((n) => n !== '').sort();
  if (names.length === 0) {
    throw new Error(`no ManagedServiceAccount in ${clusterName}: delete the token Secrets Role instead`);
  }
  const metadata = { name: tokenSecretsRoleName, namespace: clusterName };
  return {
    role: {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'Role',
      metadata,
      rules: [
        { apiGroups: [''], resources: ['secrets'], verbs: [...tokenSecretVerbs], resourceNames: names },
      ],
    },
    roleBinding: {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'RoleBinding',
      metadata: { ...metadata },
      roleRef: { apiGroup: rbacGroup, kind: 'Role', name: tokenSecretsRoleName },
      subjects: tokenSecretsSubjects(clusterName).map((name) => ({
        apiGroup: rbacGroup,
        kind: 'Group',
        name,
      })),
    },
  };
}

/** The Role and RoleBinding granting cluster `clusterName`'s agents the static rules in its namespace. */
export function serviceAccountAgentHubRbac(clusterName: string): { role: Role; roleBinding: RoleBinding } {
  const [clusterGroup] = clusterAgentGroups(clusterName);
  const metadata = { name: serviceAccountAgentRoleName, namespace: clusterName };
  return {
    role: {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'Role',
      metadata,
      rules: serviceAccountAgentHubRules.map((r) => ({ ...r, verbs: [...r.verbs] })),
    },
    roleBinding: {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'RoleBinding',
      metadata: { ...metadata },
      roleRef: { apiGroup: rbacGroup, kind: 'Role', name: serviceAccountAgentRoleName },
      subjects: [{ apiGroup: rbacGroup, kind: 'Group', name: clusterGroup ?? '' }],
    },
  };
}
