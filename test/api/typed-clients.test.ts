// The OCM kinds in src/api are the JSON ResourceClient reads and writes: each descriptor goes
// straight into `new ResourceClient<Kind>(…)`. Mostly a compile-time check (npm run typecheck).
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AddOnDeploymentConfig,
  type ApiResource,
  type AppliedManifestWork,
  addOnDeploymentConfigResource,
  apiVersionOf,
  appliedManifestWorkResource,
  type ClusterClaim,
  type ClusterManagementAddOn,
  clusterClaimResource,
  clusterManagementAddOnResource,
  type ManagedCluster,
  type ManagedClusterAddOn,
  type ManagedServiceAccount,
  type ManifestWork,
  managedClusterAddOnResource,
  managedClusterResource,
  managedServiceAccountResource,
  manifestWorkResource,
} from '../../src/api/index.ts';
import {
  type KubeObject,
  type ObjectMeta,
  ResourceClient,
  type ResourceDescriptor,
} from '../../src/kube/index.ts';

const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
  users: [{ name: 'u', token: 't' }],
  contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
  currentContext: 'x',
});

describe('OCM kinds with ResourceClient', () => {
  it('every kind gets a client from its descriptor, with the apiVersion and kind it declares', () => {
    const clients = [
      new ResourceClient<ManagedCluster>(kc, managedClusterResource),
      new ResourceClient<ClusterClaim>(kc, clusterClaimResource),
      new ResourceClient<ManifestWork>(kc, manifestWorkResource),
      new ResourceClient<AppliedManifestWork>(kc, appliedManifestWorkResource),
      new ResourceClient<ManagedServiceAccount>(kc, managedServiceAccountResource),
      new ResourceClient<ClusterManagementAddOn>(kc, clusterManagementAddOnResource),
      new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnResource),
      new ResourceClient<AddOnDeploymentConfig>(kc, addOnDeploymentConfigResource),
    ];
    for (const client of clients) expect(client.apiVersion).toBe(apiVersionOf(client.descriptor));
    expect(clients.map((c) => c.descriptor.kind)).toEqual([
      'ManagedCluster',
      'ClusterClaim',
      'ManifestWork',
      'AppliedManifestWork',
      'ManagedServiceAccount',
      'ClusterManagementAddOn',
      'ManagedClusterAddOn',
      'AddOnDeploymentConfig',
    ]);
  });

  it('types metadata as the JSON the apiserver sends: timestamps are strings', () => {
    expectTypeOf<ManagedCluster['metadata']>().toEqualTypeOf<ObjectMeta>();
    expectTypeOf<ObjectMeta['creationTimestamp']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ManifestWork>().toExtend<KubeObject>();
    expectTypeOf<ApiResource>().toEqualTypeOf<ResourceDescriptor>();
    const fromJson: ManagedCluster = JSON.parse(
      '{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster",' +
        '"metadata":{"name":"c1","creationTimestamp":"2025-03-01T10:00:00Z"},"spec":{}}',
    );
    expect(Date.parse(fromJson.metadata.creationTimestamp ?? '')).toBe(Date.UTC(2025, 2, 1, 10));
  });
});
