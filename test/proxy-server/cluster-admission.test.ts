// The hub's say on who may hold tunnels, as pure rules: an accepted ManagedCluster for every
// identity, and for an addon identity its ManagedClusterAddOn on that cluster as well.
import { describe, expect, it } from 'vitest';
import type { ManagedClusterAddOn } from '../../src/api/addon.ts';
import type { ManagedCluster } from '../../src/api/index.ts';
import { addonRefusal, managedClusterRefusal } from '../../src/proxy-server/cluster-admission.ts';

const mc = (spec: { hubAcceptsClient?: boolean }, deleting = false) =>
  ({
    metadata: { name: 'c1', ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec,
  }) as ManagedCluster;

const mca = (deleting = false) =>
  ({
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ManagedClusterAddOn',
    metadata: {
      name: 'cluster-proxy',
      namespace: 'c1',
      ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {},
  }) as ManagedClusterAddOn;

describe('tunnel admission rules', () => {
  it('a cluster must exist, be accepted and not be deleting', () => {
    expect(managedClusterRefusal('c1', mc({ hubAcceptsClient: true }))).toBeUndefined();
    expect(managedClusterRefusal('c1', undefined)).toMatch(/does not exist/);
    expect(managedClusterRefusal('c1', mc({ hubAcceptsClient: false }))).toMatch(/not accepted/);
    expect(managedClusterRefusal('c1', mc({ hubAcceptsClient: true }, true))).toMatch(/being deleted/);
  });

  it('an addon identity needs its addon enabled on the cluster, and not being disabled', () => {
    expect(addonRefusal('c1', 'cluster-proxy', mca())).toBeUndefined();
    expect(addonRefusal('c1', 'cluster-proxy', undefined)).toBe(
      'addon cluster-proxy is not enabled on cluster c1 (no ManagedClusterAddOn c1/cluster-proxy)',
    );
    expect(addonRefusal('c1', 'cluster-proxy', mca(true))).toBe(
      'addon cluster-proxy is being disabled on cluster c1',
    );
  });
});
