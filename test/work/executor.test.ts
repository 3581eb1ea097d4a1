import { describe, expect, it } from 'vitest';
import { UpdateStrategyType } from '../../src/api/index.ts';
import { executorGroups, executorUser, requiredAccess } from '../../src/work/agent/executor.ts';

const target = (over: Partial<Parameters<typeof requiredAccess>[0]> = {}) => ({
  group: '',
  version: 'v1',
  resource: 'configmaps',
  namespace: 'apps',
  name: 'settings',
  strategy: UpdateStrategyType.Update,
  manifest: {},
  ...over,
});

describe('requiredAccess: what an executor must be allowed before a manifest is applied', () => {
  it('asks every read and write verb on the manifest itself for writing strategies', () => {
    for (const strategy of [
      UpdateStrategyType.Update,
      UpdateStrategyType.CreateOnly,
      UpdateStrategyType.ServerSideApply,
    ]) {
      const access = requiredAccess(target({ strategy }));
      expect(access.map((a) => a.verb)).toEqual([
        'get',
        'list',
        'watch',
        'create',
        'update',
        'patch',
        'delete',
      ]);
      for (const a of access)
        expect(a).toMatchObject({ group: '', resource: 'configmaps', namespace: 'apps', name: 'settings' });
    }
  });

  it('asks only read verbs for ReadOnly, even of RBAC kinds', () => {
    expect(requiredAccess(target({ strategy: UpdateStrategyType.ReadOnly })).map((a) => a.verb)).toEqual([
      'get',
      'list',
      'watch',
    ]);
    const role = target({
      group: 'rbac.authorization.k8s.io',
      resource: 'roles',
      strategy: UpdateStrategyType.ReadOnly,
    });
    expect(requiredAccess(role).map((a) => a.verb)).toEqual(['get', 'list', 'watch']);
  });

  it('asks escalate for roles and clusterroles', () => {
    const role = requiredAccess(
      target({ group: 'rbac.authorization.k8s.io', resource: 'clusterroles', namespace: undefined }),
    );
    expect(role.at(-1)).toEqual({
      verb: 'escalate',
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterroles',
      namespace: undefined,
      name: 'settings',
    });
  });

  it('asks bind on the referenced role for bindings (a Role in the binding namespace, else a ClusterRole)', () => {
    const rbac = 'rbac.authorization.k8s.io';
    const toRole = requiredAccess(
      target({
        group: rbac,
        resource: 'rolebindings',
        manifest: { roleRef: { kind: 'Role', name: 'editor' } },
      }),
    );
    expect(toRole.at(-1)).toEqual({
      verb: 'bind',
      group: rbac,
      resource: 'roles',
      namespace: 'apps',
      name: 'editor',
    });
    const toClusterRole = requiredAccess(
      target({
        group: rbac,
        resource: 'clusterrolebindings',
        namespace: undefined,
        manifest: { roleRef: { kind: 'ClusterRole', name: 'cluster-admin' } },
      }),
    );
    expect(toClusterRole.at(-1)).toEqual({
      verb: 'bind',
      group: rbac,
      resource: 'clusterroles',
      namespace: undefined,
      name: 'cluster-admin',
    });
  });

  it('names the ServiceAccount as the apiserver does', () => {
    const sa = { namespace: 'team-a', name: 'deployer' };
    expect(executorUser(sa)).toBe('system:serviceaccount:team-a:deployer');
    expect(executorGroups(sa)).toEqual([
      'system:serviceaccounts',
      'system:serviceaccounts:team-a',
      'system:authenticated',
    ]);
  });
});
