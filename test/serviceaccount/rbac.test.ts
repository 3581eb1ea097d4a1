// The hub rights of the ManagedServiceAccount agent's identities, pinned: the static rules (cluster
// identity's `…:serviceaccount` grant and the add-on's hubPermissions) create Secrets but read none;
// the per-namespace Role names exactly the MSAs and is never built with an empty resourceNames.
import { describe, expect, it } from 'vitest';
import { managedServiceAccountHubPermissions } from '../../src/addon/builtin/managed-serviceaccount.ts';
import { sharedClusterRoleRules } from '../../src/registration/hub/rbac.ts';
import { defaultTokenSecretCheckPeriodMs } from '../../src/serviceaccount/agent/index.ts';
import {
  serviceAccountAgentHubRules,
  tokenSecretsRbac,
  tokenSecretsRoleName,
} from '../../src/serviceaccount/rbac.ts';

const msaGroup = 'authentication.open-cluster-management.io';

describe('ManagedServiceAccount agent hub RBAC', () => {
  it('static rules: the namespace MSAs, and only create on Secrets (cluster identity and add-on alike)', () => {
    const expected = [
      {
        apiGroups: [msaGroup],
        resources: ['managedserviceaccounts'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      {
        apiGroups: [msaGroup],
        resources: ['managedserviceaccounts/status'],
        verbs: ['get', 'update', 'patch'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    ];
    expect(serviceAccountAgentHubRules).toEqual(expected);
    expect(sharedClusterRoleRules('serviceaccount')).toEqual(expected);
    expect(managedServiceAccountHubPermissions()).toEqual(expected);
  });

  it('the token Secrets Role names exactly the MSAs, sorted once each, bound to the cluster and its add-on', () => {
    const { role, roleBinding } = tokenSecretsRbac('c1', ['b', 'a', 'b']);
    expect(role.metadata).toEqual({ name: tokenSecretsRoleName, namespace: 'c1' });
    expect(tokenSecretsRoleName).toBe('open-cluster-management:managed-serviceaccount:token-secrets');
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
        resourceNames: ['a', 'b'],
      },
    ]);
    expect(roleBinding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: tokenSecretsRoleName,
    });
    expect(roleBinding.subjects.map((s) => `${s.kind}:${s.name}`)).toEqual([
      'Group:system:open-cluster-management:c1',
      'Group:system:open-cluster-management:cluster:c1:addon:managed-serviceaccount',
    ]);
  });

  it('refuses to build the Role without a name: an empty resourceNames would grant every Secret', () => {
    expect(() => tokenSecretsRbac('c1', [])).toThrow(/no ManagedServiceAccount in c1/);
    expect(() => tokenSecretsRbac('c1', [''])).toThrow(/no ManagedServiceAccount in c1/);
  });

  it('the agent re-reads each token Secret every 30 s by default', () => {
    expect(defaultTokenSecretCheckPeriodMs).toBe(30_000);
  });
});
