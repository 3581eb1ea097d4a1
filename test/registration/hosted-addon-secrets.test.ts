// Where the registration agent keeps an add-on's Secrets: the managed cluster, or for a hosted
// add-on the hosted agent's own namespace on the hosting cluster; and why it cannot otherwise.
import { describe, expect, it } from 'vitest';
import type { ManagedClusterAddOn } from '../../src/api/addon.ts';
import {
  addonSecretPlace,
  managedKubeconfigSecret,
} from '../../src/registration/agent/addon/hosted-addon.ts';

const mca = (annotations?: Record<string, string>, namespace?: string): ManagedClusterAddOn => ({
  apiVersion: 'addon.open-cluster-management.io/v1alpha1',
  kind: 'ManagedClusterAddOn',
  metadata: { name: 'cluster-proxy', namespace: 'cluster2', ...(annotations ? { annotations } : {}) },
  spec: {},
  ...(namespace ? { status: { namespace } } : {}),
});
const hosted = { 'addon.open-cluster-management.io/hosting-cluster-name': 'cluster1' };

describe('hosted add-on Secrets', () => {
  it('keeps a default add-on on the managed cluster, a hosted one in the hosted agent namespace', () => {
    expect(addonSecretPlace(mca(), 'cluster2', undefined)).toEqual({ where: 'managed' });
    expect(addonSecretPlace(mca(), 'cluster2', 'klusterlet-cluster2')).toEqual({ where: 'managed' });
    expect(addonSecretPlace(mca(hosted, 'klusterlet-cluster2'), 'cluster2', 'klusterlet-cluster2')).toEqual({
      where: 'hosting',
    });
  });

  it('says why when the agent is not hosted, or the install namespace is not its own', () => {
    expect(addonSecretPlace(mca(hosted, 'klusterlet-cluster2'), 'cluster2', undefined)).toEqual({
      problem:
        'add-on cluster-proxy is asked to run on hosting cluster cluster1, but the klusterlet agent of cluster2 runs on cluster2 itself: join cluster2 with --mode hosted on the hosting cluster',
    });
    expect(addonSecretPlace(mca(hosted, 'elsewhere'), 'cluster2', 'klusterlet-cluster2')).toEqual({
      problem:
        "hosted add-on cluster-proxy has install namespace elsewhere; its Secrets can go only to the hosted agent's namespace klusterlet-cluster2 on the hosting cluster",
    });
  });

  it('writes the managed kubeconfig as OCM names it, under key kubeconfig', () => {
    const s = managedKubeconfigSecret('cluster-proxy', 'klusterlet-cluster2', 'apiVersion: v1', { a: 'b' });
    expect(s.metadata).toEqual({
      name: 'cluster-proxy-managed-kubeconfig',
      namespace: 'klusterlet-cluster2',
      labels: { a: 'b' },
    });
    expect(Buffer.from(s.data?.['kubeconfig'] ?? '', 'base64').toString()).toBe('apiVersion: v1');
  });
});
