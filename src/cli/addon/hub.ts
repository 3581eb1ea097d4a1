// What the `tether addon …` verbs share on the hub: typed clients for the addon kinds, the
// ClusterManagementAddOn lookup with clusteradm's refusal of an unknown addon, the one-line change
// report every verb prints, and the read → change → replace loop that retries when another writer
// got there first (409). Writes only what a verb hands it; never touches status.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  type ManagedCluster,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
  managedClusterResource,
  type Placement,
  placementResource,
} from '../../api/index.ts';
import { TetherError } from '../../errors.ts';
import { isConflict, type KubeObject, ResourceClient } from '../../kube/index.ts';

export function addonClients(hub: KubeConfig) {
  return {
    clusters: new ResourceClient<ManagedCluster>(hub, managedClusterResource),
    cmas: new ResourceClient<ClusterManagementAddOn>(hub, clusterManagementAddOnResource),
    mcas: new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource),
    deploymentConfigs: new ResourceClient<AddOnDeploymentConfig>(hub, addOnDeploymentConfigResource),
    placements: new ResourceClient<Placement>(hub, placementResource),
  };
}

export type AddonClients = ReturnType<typeof addonClients>;

/** One object a verb created, changed, left or removed; printed as one line. */
export interface AddonChange {
  /** `managedclusteraddon <cluster>/<addon>` or `clustermanagementaddon <addon>` */
  object: string;
  action: 'created' | 'updated' | 'unchanged' | 'deleted' | 'not found';
  /** what the change means to the user */
  detail?: string;
}

/** What a verb did (or, with --dry-run, would do), and what the user should know about it. */
export interface AddonResult {
  changes: AddonChange[];
  /** warnings for stderr: the change is made, but something may not turn out as expected */
  notes: string[];
}

export function formatChange(change: AddonChange, dryRun: boolean): string {
  const detail = change.detail ? `: ${change.detail}` : '';
  return `${change.object} ${change.action}${dryRun ? ' (dry run)' : ''}${detail}\n`;
}

export const mcaObject = (cluster: string, addon: string): string =>
  `managedclusteraddon ${cluster}/${addon}`;
export const cmaObject = (addon: string): string => `clustermanagementaddon ${addon}`;

/**
 * The ClusterManagementAddOns of `names`. One that does not exist stops the verb before it writes
 * anything, with clusteradm's words and the addons the hub does have.
 */
export async function requireClusterManagementAddOns(
  clients: AddonClients,
  names: readonly string[],
): Promise<Map<string, ClusterManagementAddOn>> {
  const found = new Map<string, ClusterManagementAddOn>();
  const missing: string[] = [];
  for (const name of names) {
    const cma = await clients.cmas.get(name);
    if (cma) found.set(name, cma);
    else missing.push(name);
  }
  if (missing.length > 0) {
    const known = (await clients.cmas.list()).items.map((c) => c.metadata.name ?? '').sort();
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `enabling the unknown addon ${missing.join(', ')} is not supported: the hub has no ClusterManagementAddOn named so (it has: ${known.length > 0 ? known.join(', ') : 'none'}; tether install hub-addon --names … installs tether's built-in ones)`,
    );
  }
  return found;
}

/** Refuses clusters that have no ManagedCluster, naming all of them at once. */
export async function requireManagedClusters(
  clients: AddonClients,
  clusters: readonly string[],
): Promise<void> {
  const missing: string[] = [];
  for (const name of clusters) if (!(await clients.clusters.get(name))) missing.push(name);
  if (missing.length > 0) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `no ManagedCluster named ${missing.join(', ')}: check the names with tether get clusters (a cluster appears once its agent has joined)`,
    );
  }
}

/** How many times a read → change → replace is tried when another writer changes the object between. */
export const maxConflictRetries = 5;

/**
 * Reads an object, lets `change` edit a copy, and replaces it with the read resourceVersion;
 * on 409 it starts over from a fresh read. `change` returns false when nothing needs writing.
 * Returns the object as written (or as read when unchanged), or undefined when it does not exist.
 */
export async function replaceWithRetry<T extends KubeObject>(
  client: ResourceClient<T>,
  name: string,
  namespace: string | undefined,
  change: (copy: T) => boolean,
  options: { dryRun: boolean },
): Promise<{ object: T; changed: boolean } | undefined> {
  for (let attempt = 1; ; attempt++) {
    const current = await client.get(name, namespace);
    if (!current) return undefined;
    const copy = structuredClone(current);
    if (!change(copy)) return { object: current, changed: false };
    try {
      return { object: await client.replace(copy, { dryRun: options.dryRun }), changed: true };
    } catch (err) {
      if (!isConflict(err) || attempt >= maxConflictRetries) throw err;
    }
  }
}
