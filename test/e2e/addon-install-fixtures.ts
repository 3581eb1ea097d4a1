// Shared by the add-on manager e2e files (test/e2e/addon-install*.test.ts): admin clients for the
// add-on kinds on the shared hub, cluster namespaces (no registration hub runs here, so nobody
// else makes them), ClusterManagementAddOns, Placements scheduled by a real placement controller
// scoped to the test's namespace, and the add-on manager itself — each cleaned up by `cleanups`.

import { type AddonHub, type AddonHubOptions, startAddonHub } from '../../src/addon/hub/index.ts';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  type ClusterManagementAddOnSpec,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../src/api/addon.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { startPlacementController } from '../../src/placement/hub/placement-controller.ts';
import {
  admin,
  type Cleanups,
  createBoundSet,
  createClusters,
  createNamespace,
  hub,
} from '../placement/scheduling/e2e-fixtures.ts';
import { uniqueName } from './helpers.ts';

export const addonAdmin = {
  cmas: new ResourceClient<ClusterManagementAddOn>(hub, clusterManagementAddOnResource),
  mcas: new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource),
  deploymentConfigs: new ResourceClient<AddOnDeploymentConfig>(hub, addOnDeploymentConfigResource),
};

/** A namespace per cluster, as the registration hub would make it. */
export async function createClusterNamespaces(
  cleanups: Cleanups,
  clusters: readonly string[],
): Promise<void> {
  for (const name of clusters) {
    cleanups.add(() => admin.namespaces.delete(name, undefined, { ignoreNotFound: true }));
    await admin.namespaces.create({ metadata: { name } });
  }
}

/**
 * A namespace for the test's Placements (`<prefix>-…`) with a ClusterSet bound to it, and `count`
 * clusters in that set (with `labels`), each with its cluster namespace.
 */
export async function placementClusters(
  cleanups: Cleanups,
  prefix: string,
  count: number,
  labels?: Record<string, string>,
): Promise<{ ns: string; clusters: string[] }> {
  const ns = await createNamespace(cleanups, prefix);
  const set = await createBoundSet(cleanups, ns);
  const clusters = await createClusters(cleanups, set, count, labels ? { labels } : {});
  await createClusterNamespaces(cleanups, clusters);
  return { ns, clusters };
}

/** A ClusterManagementAddOn with a unique name, deleted by `cleanups`. */
export async function createAddon(cleanups: Cleanups, spec: ClusterManagementAddOnSpec): Promise<string> {
  const name = uniqueName('hello');
  cleanups.add(() => addonAdmin.cmas.delete(name, undefined, { ignoreNotFound: true }));
  await addonAdmin.cmas.create({ metadata: { name }, spec });
  return name;
}

/**
 * The placement scheduler for `namespace` and the add-on manager (as admin, alone, unless `options`
 * say otherwise); stopped by `cleanups` first.
 */
export async function startControllers(
  cleanups: Cleanups,
  namespace: string,
  options: Partial<AddonHubOptions> = {},
): Promise<AddonHub> {
  const placement = startPlacementController({ hubKubeConfig: hub, namespace });
  cleanups.add(() => placement.stop());
  const addonHub = await startAddonHub({ hubKubeConfig: hub, leaderElection: false, ...options });
  cleanups.add(() => addonHub.stop());
  return addonHub;
}

/** The clusters (namespaces) holding a ManagedClusterAddOn `name`, sorted. */
export async function addonClusters(name: string): Promise<string[]> {
  const list = await addonAdmin.mcas.list({ fieldSelector: `metadata.name=${name}` });
  return list.items
    .filter((m) => !m.metadata.deletionTimestamp)
    .map((m) => m.metadata.namespace ?? '')
    .sort();
}
