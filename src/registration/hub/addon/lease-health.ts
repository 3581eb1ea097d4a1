// The hub's complement of add-on Lease health (OCM's ManagedClusterAddOnHealthCheckController, run
// by the registration hub): the registration agent reports its add-ons' health, so when the agent
// itself is gone — its ManagedCluster's `Available` is Unknown (lease stopped) — nobody would. Then
// every ManagedClusterAddOn in the cluster's namespace gets `Available` with the cluster's status,
// reason and message, as OCM does. Available False on the cluster (its apiserver unhealthy) is left
// to each add-on's own health. Runs on the HUB, not on a managed cluster; it lives next to
// lease-health.ts because the two together are Lease health. Owns only the add-ons' `Available`
// while their cluster is Unknown (read → change that condition → replace at the resourceVersion
// read, retried on 409); the registration agent's lease health takes over when it is back.
import type { KubeConfig } from '@kubernetes/client-node';
import { AddOnCondition, type ManagedClusterAddOn, managedClusterAddOnResource } from '../../../api/addon.ts';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../../api/cluster.ts';
import {
  type ConditionUpdate,
  type Controller,
  findCondition,
  Informer,
  ResourceClient,
  runController,
} from '../../../kube/index.ts';
import type { Logger } from '../../../log.ts';
import { withCondition, writeAddonStatus } from '../../addon-status-write.ts';

/** Available for the cluster's add-ons: the cluster's own when it is Unknown, else none. */
export function clusterUnknownAvailability(cluster: ManagedCluster | undefined): ConditionUpdate | undefined {
  const available = findCondition(cluster?.status?.conditions, ManagedClusterCondition.Available);
  if (available?.status !== 'Unknown') return undefined;
  return {
    type: AddOnCondition.Available,
    status: 'Unknown',
    reason: available.reason ?? '',
    message: available.message ?? '',
  };
}

export interface AddonClusterHealthOptions {
  hubKubeConfig: KubeConfig;
  log: Logger;
  /** only ManagedClusters with these labels (the registration hub's clusterLabelSelector) */
  clusterLabelSelector?: string;
}

/** Keep the add-ons of clusters whose Available is Unknown Unknown too. */
export function startAddonClusterHealth(opts: AddonClusterHealthOptions): { stop(): Promise<void> } {
  const { log } = opts;
  const addons = new ResourceClient<ManagedClusterAddOn>(opts.hubKubeConfig, managedClusterAddOnResource);
  const clusterInformer = new Informer<ManagedCluster>(
    new ResourceClient<ManagedCluster>(opts.hubKubeConfig, managedClusterResource),
    { name: 'addon-cluster-health clusters', log, labelSelector: opts.clusterLabelSelector },
  );
  const addonInformer = new Informer<ManagedClusterAddOn>(addons, { name: 'addon-cluster-health', log });

  const reconcile = async (clusterName: string) => {
    const update = clusterUnknownAvailability(clusterInformer.get(clusterName));
    if (!update) return;
    const inCluster = addonInformer.list().filter((a) => a.metadata.namespace === clusterName);
    let changed = 0;
    for (const addon of inCluster) {
      if (await writeAddonStatus(addons, addon, (current) => withCondition(current, update))) changed++;
    }
    if (changed > 0)
      log.info({ cluster: clusterName, addons: changed }, 'add-ons of an Unknown cluster set Unknown');
  };

  const controller: Controller = runController({
    name: 'addon-cluster-health',
    informers: [clusterInformer as Informer, addonInformer as Informer],
    // key: the cluster; an add-on's is its namespace (a new add-on of an Unknown cluster)
    keyFunc: (obj, informer) =>
      informer === (clusterInformer as Informer) ? obj.metadata?.name : obj.metadata?.namespace,
    reconcile,
    log,
  });
  return { stop: () => controller.stop() };
}
