// Lease health's decisions, OCM's: which add-ons it looks after, where their lease is, the
// Available condition a lease (or its absence) gives, and on the hub what an Unknown cluster gives.

import { describe, expect, it } from 'vitest';
import type { ManagedClusterAddOn } from '../../src/api/addon.ts';
import { addonInstallNamespace } from '../../src/api/addon-registration.ts';
import type { ManagedCluster } from '../../src/api/cluster.ts';
import { formatMicroTime, type Lease } from '../../src/kube/index.ts';
import {
  AddonLeaseReason,
  leaseAvailability,
  usesLeaseHealth,
} from '../../src/registration/agent/addon/lease-health.ts';
import { clusterUnknownAvailability } from '../../src/registration/hub/addon/lease-health.ts';

function addon(parts: Partial<ManagedClusterAddOn> = {}): ManagedClusterAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ManagedClusterAddOn',
    metadata: { name: 'helloworld', namespace: 'cluster1' },
    spec: {},
    ...parts,
  };
}

function leaseRenewedAt(date: Date): Lease {
  return {
    metadata: { name: 'helloworld', namespace: 'ns' },
    spec: { leaseDurationSeconds: 60, renewTime: formatMicroTime(date) },
  };
}

const graceMs = 300_000;
const now = new Date('2026-01-01T12:00:00.000Z');

describe('lease health', () => {
  it('finds the lease in status.namespace, else spec.installNamespace, else OCM default namespace', () => {
    expect(addonInstallNamespace(addon())).toBe('open-cluster-management-agent-addon');
    expect(addonInstallNamespace(addon({ spec: { installNamespace: 'spec-ns' } }))).toBe('spec-ns');
    expect(
      addonInstallNamespace(
        addon({ spec: { installNamespace: 'spec-ns' }, status: { namespace: 'status-ns' } }),
      ),
    ).toBe('status-ns');
  });

  it('looks after Lease-mode and unset-mode add-ons, not Customized or hosted ones', () => {
    expect(usesLeaseHealth(addon())).toBe(true);
    expect(usesLeaseHealth(addon({ status: { healthCheck: { mode: 'Lease' } } }))).toBe(true);
    expect(usesLeaseHealth(addon({ status: { healthCheck: { mode: 'Customized' } } }))).toBe(false);
    const hosted = addon();
    hosted.metadata.annotations = { 'addon.open-cluster-management.io/hosting-cluster-name': 'hosting' };
    expect(usesLeaseHealth(hosted)).toBe(false);
  });

  it('a lease renewed within the grace period makes the add-on Available', () => {
    const renewed = new Date(now.getTime() - graceMs + 1_000);
    expect(leaseAvailability('helloworld', leaseRenewedAt(renewed), now, graceMs)).toEqual({
      type: 'Available',
      status: 'True',
      reason: AddonLeaseReason.Updated,
      message: 'helloworld add-on is available.',
    });
  });

  it('a lease not renewed for the grace period makes it unavailable (UpdateStopped)', () => {
    const renewed = new Date(now.getTime() - graceMs);
    expect(leaseAvailability('helloworld', leaseRenewedAt(renewed), now, graceMs)).toEqual({
      type: 'Available',
      status: 'False',
      reason: 'ManagedClusterAddOnLeaseUpdateStopped',
      message: 'helloworld add-on is not available.',
    });
    const never: Lease = { metadata: { name: 'helloworld' }, spec: {} };
    expect(leaseAvailability('helloworld', never, now, graceMs).status).toBe('False');
  });

  it('no lease anywhere leaves the add-on Unknown (LeaseNotFound, OCM message)', () => {
    expect(leaseAvailability('helloworld', undefined, now, graceMs)).toEqual({
      type: 'Available',
      status: 'Unknown',
      reason: 'ManagedClusterAddOnLeaseNotFound',
      message:
        'The status of helloworld add-on is unknown because get lease from hub failed: leases.coordination.k8s.io "helloworld" not found',
    });
  });
});

describe('lease health on the hub (cluster Unknown)', () => {
  const cluster = (status?: 'True' | 'False' | 'Unknown'): ManagedCluster => ({
    apiVersion: 'cluster.open-cluster-management.io/v1',
    kind: 'ManagedCluster',
    metadata: { name: 'cluster1' },
    spec: {},
    status: status
      ? {
          conditions: [
            {
              type: 'ManagedClusterConditionAvailable',
              status,
              reason: 'ManagedClusterLeaseUpdateStopped',
              message: 'Registration agent stopped updating its lease.',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            },
          ],
        }
      : {},
  });

  it("gives the add-ons of an Unknown cluster the cluster's status, reason and message", () => {
    expect(clusterUnknownAvailability(cluster('Unknown'))).toEqual({
      type: 'Available',
      status: 'Unknown',
      reason: 'ManagedClusterLeaseUpdateStopped',
      message: 'Registration agent stopped updating its lease.',
    });
  });

  it('leaves add-ons alone while the cluster is True, False or not reported yet', () => {
    expect(clusterUnknownAvailability(cluster('True'))).toBeUndefined();
    expect(clusterUnknownAvailability(cluster('False'))).toBeUndefined();
    expect(clusterUnknownAvailability(cluster())).toBeUndefined();
    expect(clusterUnknownAvailability(undefined)).toBeUndefined();
  });
});
