// `tether addon disable` on the hub: deletes ManagedClusterAddOn `<addon>` from the named clusters'
// namespaces or from every cluster that has it (a missing one is reported, not an error, as
// clusteradm does), or takes a Placement out of the ClusterManagementAddOn's installStrategy (the
// strategy stays Placements, so the hub's addon manager removes the ManagedClusterAddOns no
// remaining placement selects). Deleting a ManagedClusterAddOn is all it takes: the addon manager
// and the agents remove the ManifestWorks, RBAC and credentials that hang off it. --dry-run
// reports what would go and deletes nothing.
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterManagementAddOn } from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import type { PlacementRef } from '../../placement/cli/work-by-placement.ts';
import type { DisableTarget } from './flags.ts';
import {
  type AddonChange,
  type AddonClients,
  type AddonResult,
  addonClients,
  cmaObject,
  mcaObject,
  replaceWithRetry,
} from './hub.ts';

export interface DisableAddonsOptions {
  names: readonly string[];
  target: DisableTarget;
  dryRun: boolean;
}

export async function disableAddons(hub: KubeConfig, opts: DisableAddonsOptions): Promise<AddonResult> {
  const clients = addonClients(hub);
  const result: AddonResult = { changes: [], notes: [] };
  for (const name of opts.names) {
    const target = opts.target;
    if (target.kind === 'placement') {
      result.changes.push(await removePlacement(clients, name, target.placement, opts.dryRun));
      continue;
    }
    const clusters =
      target.kind === 'clusters'
        ? target.clusters
        : (await clients.mcas.list({ fieldSelector: `metadata.name=${name}` })).items
            .map((m) => m.metadata.namespace ?? '')
            .sort();
    if (clusters.length === 0) {
      result.changes.push({
        object: `managedclusteraddon */${name}`,
        action: 'not found',
        detail: 'no cluster has it',
      });
    }
    for (const cluster of clusters)
      result.changes.push(await deleteFromCluster(clients, name, cluster, opts.dryRun));
    const placements = placementsOf(await clients.cmas.get(name));
    if (placements.length > 0 && clusters.length > 0) {
      result.notes.push(
        `addon ${name} installs by placement (${placements.join(', ')}): the hub's addon manager creates it again on the clusters those select; to stop that: tether addon disable --names ${name} --placement <ns>/<name>`,
      );
    }
  }
  return result;
}

async function deleteFromCluster(
  clients: AddonClients,
  addon: string,
  cluster: string,
  dryRun: boolean,
): Promise<AddonChange> {
  const object = mcaObject(cluster, addon);
  if (dryRun) {
    const exists = await clients.mcas.get(addon, cluster);
    return exists
      ? { object, action: 'deleted' }
      : { object, action: 'not found', detail: 'the addon is not enabled there' };
  }
  const deleted = await clients.mcas.delete(addon, cluster, { ignoreNotFound: true });
  return deleted
    ? { object, action: 'deleted' }
    : { object, action: 'not found', detail: 'the addon is not enabled there' };
}

function placementsOf(cma: ClusterManagementAddOn | undefined): string[] {
  const strategy = cma?.spec.installStrategy;
  if (strategy?.type !== 'Placements') return [];
  return (strategy.placements ?? []).map((p) => `${String(p.namespace)}/${String(p.name)}`);
}

async function removePlacement(
  clients: AddonClients,
  addon: string,
  ref: PlacementRef,
  dryRun: boolean,
): Promise<AddonChange> {
  const object = cmaObject(addon);
  const placement = `${ref.namespace}/${ref.name}`;
  const updated = await replaceWithRetry(
    clients.cmas,
    addon,
    undefined,
    (cma: ClusterManagementAddOn) => {
      const strategy = cma.spec.installStrategy ?? {};
      const placements = strategy.placements ?? [];
      const kept = placements.filter((p) => !(p.namespace === ref.namespace && p.name === ref.name));
      if (kept.length === placements.length) return false;
      cma.spec.installStrategy = { ...strategy, placements: kept };
      return true;
    },
    { dryRun },
  );
  if (!updated) {
    throw new InvalidArgumentError(
      `no ClusterManagementAddOn named ${addon}: check the name with tether get addon`,
    );
  }
  if (!updated.changed) {
    return { object, action: 'unchanged', detail: `placement ${placement} is not in its installStrategy` };
  }
  return {
    object,
    action: 'updated',
    detail: `placement ${placement} removed from its installStrategy: the hub's addon manager removes the ManagedClusterAddOns it created on clusters no other placement selects`,
  };
}
