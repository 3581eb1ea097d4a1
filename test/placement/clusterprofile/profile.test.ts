import { describe, expect, it } from 'vitest';
import type { ManagedCluster } from '../../../src/api/index.ts';
import { newProfile, profileLabels, profileStatus } from '../../../src/placement/clusterprofile/index.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T01:00:00Z');
const cluster = (available: 'True' | 'False' | 'Unknown'): ManagedCluster => ({
  apiVersion: 'cluster.open-cluster-management.io/v1',
  kind: 'ManagedCluster',
  metadata: { name: 'c1', labels: { 'cluster.open-cluster-management.io/clusterset': 'prod' } },
  spec: { hubAcceptsClient: true },
  status: {
    conditions: [
      {
        type: 'ManagedClusterConditionAvailable',
        status: available,
        reason: 'R',
        message: 'm',
        lastTransitionTime: '',
      },
    ],
    version: { kubernetes: 'v1.30.0' },
    clusterClaims: [{ name: 'platform', value: 'kind' }],
  },
});
const access = { server: 'https://hub:6443', caPem: 'CA' };

describe('ClusterProfile of a ManagedCluster', () => {
  it("carries OCM's labels and cluster manager", () => {
    expect(profileLabels(cluster('True'))).toEqual({
      'x-k8s.io/cluster-manager': 'open-cluster-management',
      'multicluster.x-k8s.io/clusterset': 'prod',
      'open-cluster-management.io/cluster-name': 'c1',
    });
    expect(newProfile(cluster('True'), 'ns').spec).toEqual({
      displayName: 'c1',
      clusterManager: { name: 'open-cluster-management' },
    });
  });

  it('mirrors Available as ControlPlaneHealthy, keeping the transition time while the status holds', () => {
    const first = profileStatus(cluster('True'), undefined, access, t0);
    expect(first.conditions).toEqual([
      {
        type: 'ControlPlaneHealthy',
        status: 'True',
        reason: 'R',
        message: 'm',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ]);
    expect(profileStatus(cluster('True'), first, access, t1).conditions?.[0]?.lastTransitionTime).toBe(
      '2026-01-01T00:00:00Z',
    );
    const down = profileStatus(cluster('Unknown'), first, access, t1).conditions?.[0];
    expect([down?.status, down?.lastTransitionTime]).toEqual(['Unknown', '2026-01-01T01:00:00Z']);
  });

  it('takes version and claims, and points its access provider at the gateway with the hub CA', () => {
    const s = profileStatus(cluster('True'), undefined, access, t0);
    expect(s.version).toEqual({ kubernetes: 'v1.30.0' });
    expect(s.properties).toEqual([{ name: 'platform', value: 'kind' }]);
    expect(s.accessProviders).toEqual([
      {
        name: 'tether',
        cluster: {
          server: 'https://hub:6443/apis/cluster.core.oam.dev/v1alpha1/clustergateways/c1/proxy',
          'certificate-authority-data': Buffer.from('CA').toString('base64'),
          extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'c1' } }],
        },
      },
    ]);
    expect(s.credentialProviders).toEqual(s.accessProviders);
    expect(profileStatus(cluster('True'), undefined, undefined, t0).accessProviders).toBeUndefined();
  });
});
