// Shared by the placement e2e files (test/e2e/clusterset-*.test.ts, placement-*.test.ts): admin
// clients for the placement kinds on the shared hub, ManagedClusters without agents (no
// registration hub runs here, so nothing holds them with a finalizer), namespaces, and a placement
// hub that stops with the file.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ManagedCluster,
  type ManagedClusterSet,
  type ManagedClusterSetBinding,
  managedClusterResource,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementResource,
} from '../../src/api/index.ts';
import { findCondition, type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import {
  type PlacementHub,
  type PlacementHubOptions,
  startPlacementHub,
} from '../../src/placement/hub/index.ts';
import { uniqueName } from '../e2e/helpers.ts';
import { Cleanups, hub, waitFor } from '../registration/hub/e2e-fixtures.ts';

export { Cleanups, hub, waitFor };

export function placementClientsFor(kc: KubeConfig) {
  return {
    clusters: new ResourceClient<ManagedCluster>(kc, managedClusterResource),
    clusterSets: new ResourceClient<ManagedClusterSet>(kc, managedClusterSetResource),
    bindings: new ResourceClient<ManagedClusterSetBinding>(kc, managedClusterSetBindingResource),
    placements: new ResourceClient<Placement>(kc, placementResource),
    decisions: new ResourceClient<PlacementDecision>(kc, placementDecisionResource),
    namespaces: new ResourceClient<KubeObject>(kc, {
      group: '',
      version: 'v1',
      plural: 'namespaces',
      kind: 'Namespace',
      namespaced: false,
    }),
  };
}

export const admin = placementClientsFor(hub);

/**
 * The cluster-set part of the placement hub on the shared hub, alone (no leader election, no
 * scheduler or ManifestWorkReplicaSet controller unless `options` asks); stopped by `cleanups`.
 */
export async function startTestPlacementHub(
  cleanups: Cleanups,
  options: Partial<PlacementHubOptions> = {},
): Promise<PlacementHub> {
  const running = await startPlacementHub({
    hubKubeConfig: hub,
    leaderElection: false,
    installAdmission: false,
    placementControllers: false,
    ...options,
  });
  cleanups.add(() => running.stop());
  return running;
}

/**
 * A ManagedCluster without an agent, with `labels`, accepted when `accepted` (a Placement decides
 * only accepted clusters); deleted by `cleanups`.
 */
export async function createBareCluster(
  cleanups: Cleanups,
  labels: Record<string, string> = {},
  prefix = 'pl',
  accepted = false,
): Promise<string> {
  const name = uniqueName(prefix);
  cleanups.add(() => admin.clusters.delete(name, undefined, { ignoreNotFound: true }));
  await admin.clusters.create({ metadata: { name, labels }, spec: { hubAcceptsClient: accepted } });
  return name;
}

/** A ManagedClusterSet (ExclusiveClusterSetLabel unless `spec` says otherwise); deleted by `cleanups`. */
export async function createClusterSet(
  cleanups: Cleanups,
  spec?: ManagedClusterSet['spec'],
  prefix = 'set',
): Promise<string> {
  const name = uniqueName(prefix);
  cleanups.add(() => admin.clusterSets.delete(name, undefined, { ignoreNotFound: true }));
  await admin.clusterSets.create({ metadata: { name }, ...(spec ? { spec } : {}) });
  return name;
}

/** A namespace; deleted by `cleanups`. */
export async function createNamespace(cleanups: Cleanups, prefix = 'plns'): Promise<string> {
  const name = uniqueName(prefix);
  cleanups.add(() => admin.namespaces.delete(name, undefined, { ignoreNotFound: true }));
  await admin.namespaces.create({ metadata: { name } });
  return name;
}

/** The status, reason and message of condition `type` on a set, once it exists. */
export async function setCondition(name: string, type: string) {
  return findCondition((await admin.clusterSets.get(name))?.status?.conditions, type);
}

export async function bindingCondition(namespace: string, name: string, type: string) {
  return findCondition((await admin.bindings.get(name, namespace))?.status?.conditions, type);
}
