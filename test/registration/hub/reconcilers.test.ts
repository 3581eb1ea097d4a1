// The pure decisions behind the registration-hub reconcilers: RBAC shape, taints, lease deadline,
// certificate validity, deletion messages, cluster names.
import { describe, expect, it } from 'vitest';
import { type Condition, type ManagedCluster, ManagedClusterTaint } from '../../../src/api/index.ts';
import type { Lease } from '../../../src/kube/index.ts';
import { clusterNameProblem } from '../../../src/registration/hub/context.ts';
import { remainingMessage } from '../../../src/registration/hub/deletion.ts';
import { isClockSynced, leaseDeadline } from '../../../src/registration/hub/lease.ts';
import { clusterRbac, sharedClusterRoles } from '../../../src/registration/hub/rbac.ts';
import type { CertificateSigningRequest } from '../../../src/registration/hub/resources.ts';
import { certificateValiditySeconds } from '../../../src/registration/hub/signer.ts';
import { desiredTaints } from '../../../src/registration/hub/taints.ts';

describe('clusterRbac', () => {
  const group = {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'Group',
    name: 'system:open-cluster-management:c1',
  };

  it("binds OCM's names to the cluster group and names only the cluster's own ManagedCluster", () => {
    const rbac = clusterRbac('c1', true);
    expect(rbac.clusterRole.metadata?.name).toBe('open-cluster-management:managedcluster:c1');
    expect(rbac.clusterRoleBinding.subjects).toEqual([group]);
    const clusterRules = rbac.clusterRole.rules.filter((r) =>
      r.resources.some((x) => x.startsWith('managedclusters')),
    );
    expect(clusterRules.map((r) => [r.apiGroups[0], r.resources[0], r.resourceNames])).toEqual([
      ['register.open-cluster-management.io', 'managedclusters/clientcertificates', undefined],
      ['cluster.open-cluster-management.io', 'managedclusters', ['c1']],
      ['cluster.open-cluster-management.io', 'managedclusters/status', ['c1']],
    ]);
    expect(clusterRules[0]?.verbs).toEqual(['renew']);
    expect(
      rbac.roleBindings.map((b) => [b.metadata?.name, b.metadata?.namespace, b.roleRef.kind, b.roleRef.name]),
    ).toEqual([
      [
        'open-cluster-management:managedcluster:c1:registration',
        'c1',
        'ClusterRole',
        'open-cluster-management:managedcluster:registration',
      ],
      [
        'open-cluster-management:managedcluster:c1:work',
        'c1',
        'ClusterRole',
        'open-cluster-management:managedcluster:work',
      ],
      [
        'open-cluster-management:managedcluster:c1:serviceaccount',
        'c1',
        'ClusterRole',
        'tether:managedcluster:serviceaccount',
      ],
    ]);
    for (const binding of rbac.roleBindings) expect(binding.subjects).toEqual([group]);
    const finalizers = rbac.roleBindings.map((b) => b.metadata?.finalizers ?? []);
    expect(finalizers).toEqual([[], ['cluster.open-cluster-management.io/manifest-work-cleanup'], []]);
  });

  it('shared ClusterRoles: what OCM grants agents, add-ons included, and no wildcard', () => {
    const roles = sharedClusterRoles();
    expect(roles.map((r) => r.metadata?.name)).toEqual([
      'open-cluster-management:managedcluster:registration',
      'open-cluster-management:managedcluster:work',
      'tether:managedcluster:serviceaccount',
    ]);
    const registration = roles[0]?.rules ?? [];
    expect(registration).toContainEqual({
      apiGroups: ['addon.open-cluster-management.io'],
      resources: ['managedclusteraddons'],
      verbs: ['get', 'list', 'watch'],
    });
    expect(registration).toContainEqual({
      apiGroups: ['addon.open-cluster-management.io'],
      resources: ['managedclusteraddons/status'],
      verbs: ['patch', 'update'],
    });
    const all = [...clusterRbac('c1', true).clusterRole.rules, ...roles.flatMap((r) => r.rules)];
    expect(all.flatMap((r) => [...r.verbs, ...r.resources, ...r.apiGroups])).not.toContain('*');
  });

  it('denied: no namespace grants, and only reading its own ManagedCluster', () => {
    const rbac = clusterRbac('c1', false);
    expect(rbac.roleBindings).toEqual([]);
    expect(rbac.clusterRole.rules).toEqual([
      {
        apiGroups: ['cluster.open-cluster-management.io'],
        resources: ['managedclusters'],
        verbs: ['get', 'list', 'watch'],
        resourceNames: ['c1'],
      },
    ]);
  });
});

describe('isClockSynced', () => {
  const now = Date.parse('2024-05-01T10:00:00Z');
  it('is true within one lease duration either way, false beyond', () => {
    expect(isClockSynced('2024-05-01T10:00:30.000000Z', now, 60)).toBe(true);
    expect(isClockSynced('2024-05-01T09:59:30.000000Z', now, 60)).toBe(true);
    expect(isClockSynced('2024-05-01T10:01:01.000000Z', now, 60)).toBe(false);
    expect(isClockSynced('2024-05-01T09:58:59.000000Z', now, 60)).toBe(false);
    expect(isClockSynced('not a time', now, 60)).toBe(false);
  });
});

describe('desiredTaints', () => {
  const available = (status: Condition['status']): Condition => ({
    type: 'ManagedClusterConditionAvailable',
    status,
    reason: 'x',
    message: '',
    lastTransitionTime: '2024-01-01T00:00:00Z',
  });
  const now = new Date('2024-05-01T10:00:00Z');
  const user = { key: 'example.com/gpu', effect: 'NoSelect' as const };

  it('unreachable when Available is Unknown or missing, unavailable when False, none when True', () => {
    expect(desiredTaints([], undefined, now)).toEqual([
      { key: ManagedClusterTaint.Unreachable, effect: 'NoSelect', timeAdded: '2024-05-01T10:00:00Z' },
    ]);
    expect(desiredTaints([user], available('Unknown'), now)?.map((t) => t.key)).toEqual([
      user.key,
      ManagedClusterTaint.Unreachable,
    ]);
    const unreachable = { key: ManagedClusterTaint.Unreachable, effect: 'NoSelect' as const };
    expect(desiredTaints([unreachable, user], available('False'), now)?.map((t) => t.key)).toEqual([
      user.key,
      ManagedClusterTaint.Unavailable,
    ]);
    expect(desiredTaints([unreachable, user], available('True'), now)).toEqual([user]);
  });

  it('undefined when nothing changes (the taint keeps its timeAdded)', () => {
    const taint = {
      key: ManagedClusterTaint.Unreachable,
      effect: 'NoSelect' as const,
      timeAdded: '2020-01-01T00:00:00Z',
    };
    expect(desiredTaints([taint], available('Unknown'), now)).toBeUndefined();
    expect(desiredTaints([user], available('True'), now)).toBeUndefined();
    expect(desiredTaints(undefined, available('True'), now)).toBeUndefined();
  });
});

describe('leaseDeadline', () => {
  const cluster = (leaseDurationSeconds?: number) => ({ spec: { leaseDurationSeconds } }) as ManagedCluster;
  const lease = (spec: Lease['spec'], creationTimestamp?: string): Lease => ({
    metadata: { creationTimestamp },
    spec,
  });

  it('is the last renewal plus factor × the cluster lease duration (default 60 s)', () => {
    const renewTime = '2024-01-01T00:00:00.250000Z';
    expect(leaseDeadline(cluster(2), lease({ renewTime }), 5)).toBe(Date.parse('2024-01-01T00:00:10.250Z'));
    expect(leaseDeadline(cluster(), lease({ renewTime }), 5)).toBe(Date.parse('2024-01-01T00:05:00.250Z'));
  });

  it('falls back to acquireTime, then creation; a lease without any time is already past', () => {
    expect(leaseDeadline(cluster(1), lease({ acquireTime: '2024-01-01T00:00:00.000000Z' }), 5)).toBe(
      Date.parse('2024-01-01T00:00:05Z'),
    );
    expect(leaseDeadline(cluster(1), lease({}, '2024-01-01T00:00:00Z'), 5)).toBe(
      Date.parse('2024-01-01T00:00:05Z'),
    );
    expect(leaseDeadline(cluster(1), lease({}), 5)).toBe(0);
  });
});

describe('certificateValiditySeconds', () => {
  const limits = { defaultValiditySeconds: 86_400, maxValiditySeconds: 7 * 86_400 };
  const now = new Date('2024-01-01T00:00:00Z');
  const caNotAfter = new Date('2025-01-01T00:00:00Z');
  const csr = (expirationSeconds?: number) => ({ spec: { expirationSeconds } }) as CertificateSigningRequest;

  it('honours spec.expirationSeconds within 10 min … the cap and the CA expiry', () => {
    expect(certificateValiditySeconds(csr(3600), limits, caNotAfter, now)).toBe(3600);
    expect(certificateValiditySeconds(csr(), limits, caNotAfter, now)).toBe(86_400);
    expect(certificateValiditySeconds(csr(60), limits, caNotAfter, now)).toBe(600);
    expect(certificateValiditySeconds(csr(30 * 86_400), limits, caNotAfter, now)).toBe(7 * 86_400);
    expect(certificateValiditySeconds(csr(), limits, new Date('2024-01-01T01:00:00Z'), now)).toBe(3600);
  });
});

describe('remainingMessage and clusterNameProblem', () => {
  it('names what remains, a few per kind', () => {
    const remaining = new Map([
      ['manifestworks', ['w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7']],
      ['managedclusteraddons', []],
    ]);
    expect(remainingMessage(remaining)).toBe(
      'waiting for these to be deleted from the cluster namespace: manifestworks w1, w2, w3, w4, w5 (+2 more)',
    );
  });

  it('refuses names that cannot be or must not be the cluster namespace', () => {
    expect(clusterNameProblem('cluster1')).toBeUndefined();
    expect(clusterNameProblem('Cluster_1')).toMatch(/DNS-1123/);
    expect(clusterNameProblem('default')).toMatch(/system namespace/);
    expect(clusterNameProblem('kube-system')).toMatch(/system namespace/);
    expect(clusterNameProblem('open-cluster-management-hub')).toMatch(/system namespace/);
  });
});
