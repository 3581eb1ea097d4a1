// Shared by the addon deploy e2e files: a cluster on the real hub (namespace, ManagedCluster, a real
// work agent on cluster1 with the hub's restricted work identity), an AddonManager running the test
// addons without leader election, and helpers to enable an addon and wait on its status. cleanup()
// undoes everything, also after a failed test: addons (and their works, through the manager),
// the manager, the agent, the hub namespace, the ManagedCluster, the ClusterManagementAddOns and
// the namespaces the addons were installed into on cluster1 (which outlive the addons: the
// manager marks them deletion-orphan).

import type { KubernetesObject } from '@kubernetes/client-node';
import { AddonManager, type AddonManagerOptions } from '../../src/addon/sdk/manager.ts';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import {
  type AddOnConfig,
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  addonDeployWorkName,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../src/api/addon.ts';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../src/api/cluster.ts';
import type { ManifestWork } from '../../src/api/work.ts';
import { type Condition, findCondition, formatTime, ResourceClient } from '../../src/kube/index.ts';
import type { WorkAgent } from '../../src/work/agent/index.ts';
import {
  appliedWorks,
  dropFinalizers,
  hubAdmin,
  hubHash,
  hubWorks,
  kinds,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from '../work/e2e-fixtures.ts';

export { hubWorks, kinds, onManaged, unique, waitFor };

/** A one-replica Deployment `name` running `image`, as an addon's manifests() returns it. */
export function agentDeployment(name: string, image: string): KubernetesObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image }] },
      },
    },
  } as KubernetesObject;
}

export const mcas = new ResourceClient<ManagedClusterAddOn>(hubAdmin, managedClusterAddOnResource);
export const cmas = new ResourceClient<ClusterManagementAddOn>(hubAdmin, clusterManagementAddOnResource);
export const adcs = new ResourceClient<AddOnDeploymentConfig>(hubAdmin, addOnDeploymentConfigResource);
const clusters = new ResourceClient<ManagedCluster>(hubAdmin, managedClusterResource);

export interface AddonTestCluster {
  name: string;
  manager: AddonManager;
  /** create ManagedClusterAddOn `addon` installing into `installNamespace` (removed by cleanup) */
  enable(addon: string, installNamespace: string, configs?: AddOnConfig[]): Promise<ManagedClusterAddOn>;
  /**
   * Have cleanup delete this namespace on cluster1 too: an install namespace the manager adds is
   * deletion-orphan, so it outlives the addon (name the ones a config moves the addon into).
   */
  removeNamespaceOnCleanup(namespace: string): void;
  /** wait until the addon's condition `type` matches */
  waitForCondition(
    addon: string,
    type: string,
    match: Partial<Condition>,
    timeoutMs?: number,
  ): Promise<Condition>;
  /** stop / restart the cluster's work agent */
  stopAgent(): Promise<void>;
  startAgent(): Promise<void>;
  /** set the ManagedCluster's Available condition, as the registration hub would */
  setAvailable(status: 'True' | 'Unknown'): Promise<void>;
  /** wait for the deploy work to satisfy `check` */
  waitForWork<T>(
    addon: string,
    description: string,
    check: (w: ManifestWork) => T | undefined | false,
  ): Promise<T>;
  cleanup(): Promise<void>;
}

/** A cluster with a work agent and an AddonManager running `addons` (alone unless options say otherwise). */
export async function setUpAddonCluster(
  addons: readonly AgentAddon[],
  managerOptions: Partial<AddonManagerOptions> = {},
): Promise<AddonTestCluster> {
  const work: WorkCluster = await setUpWorkCluster('addon');
  const enabled = new Set<string>();
  const installNamespaces = new Set<string>();
  let manager: AddonManager | undefined;
  let agent: WorkAgent | undefined;
  const setAvailable = async (status: 'True' | 'Unknown') => {
    const reason = status === 'True' ? 'ManagedClusterAvailable' : 'ManagedClusterLeaseUpdateStopped';
    const condition = { type: ManagedClusterCondition.Available, status, reason, message: '' };
    await clusters.patchStatus(work.name, {
      status: { conditions: [{ ...condition, lastTransitionTime: formatTime(new Date()) }] },
    });
  };
  const cleanup = async () => {
    // Deleting the addons while the manager and the agent run removes their works and objects.
    for (const a of enabled) await mcas.delete(a, work.name, { ignoreNotFound: true }).catch(() => undefined);
    await waitFor('the addons to be gone', async () => {
      for (const a of enabled) if (await mcas.get(a, work.name)) return false;
      return true;
    }).catch(async () => {
      for (const a of enabled) {
        await dropFinalizers(hubWorks, addonDeployWorkName(a), work.name);
        await dropFinalizers(mcas, a, work.name);
      }
    });
    await manager?.stop();
    for (const a of enabled) {
      await dropFinalizers(appliedWorks, `${hubHash}-${addonDeployWorkName(a)}`);
      await appliedWorks.delete(`${hubHash}-${addonDeployWorkName(a)}`, undefined, { ignoreNotFound: true });
    }
    await work.cleanup();
    await clusters.delete(work.name, undefined, { ignoreNotFound: true });
    for (const a of addons) await cmas.delete(a.name, undefined, { ignoreNotFound: true });
    for (const ns of installNamespaces)
      await onManaged(kinds.namespace).delete(ns, undefined, { ignoreNotFound: true });
  };
  try {
    await clusters.create({ metadata: { name: work.name }, spec: { hubAcceptsClient: true } });
    // Available, as the registration hub would report it: removal waits for the work agent then.
    await setAvailable('True');
    agent = await work.startAgent();
    manager = new AddonManager({ hubKubeConfig: hubAdmin, leaderElection: false, ...managerOptions });
    for (const a of addons) manager.add(a);
    await manager.start();
  } catch (err) {
    await cleanup();
    throw err;
  }
  const started = manager;
  return {
    name: work.name,
    manager: started,
    async enable(addon, installNamespace, configs) {
      enabled.add(addon);
      installNamespaces.add(installNamespace);
      return mcas.create({
        metadata: { name: addon, namespace: work.name },
        spec: { installNamespace, ...(configs ? { configs } : {}) },
      });
    },
    async waitForCondition(addon, type, match, timeoutMs = 60_000) {
      let last: ManagedClusterAddOn | undefined;
      try {
        return await waitFor(
          `addon ${addon} ${type} ${JSON.stringify(match)}`,
          async () => {
            last = await mcas.get(addon, work.name);
            const c = findCondition(last?.status?.conditions, type);
            if (!c) return undefined;
            const ok = Object.entries(match).every(([k, v]) => c[k as keyof Condition] === v);
            return ok ? c : undefined;
          },
          timeoutMs,
        );
      } catch (err) {
        throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}`);
      }
    },
    stopAgent: async () => {
      await agent?.stop();
      agent = undefined;
    },
    startAgent: async () => {
      agent = await work.startAgent();
    },
    setAvailable,
    removeNamespaceOnCleanup(namespace) {
      installNamespaces.add(namespace);
    },
    waitForWork: (addon, description, check) =>
      work.waitForWork(addonDeployWorkName(addon), description, check),
    cleanup,
  };
}
