// `tether addon enable` on the hub. With --clusters it does what clusteradm's `addon enable` does:
// every ManagedCluster and ClusterManagementAddOn must exist, then ManagedClusterAddOn `<addon>`
// is created in each cluster's namespace, or, when it exists, gets the flags' labels and
// annotations (replacing the old ones wholesale), the install namespace and, when given, the configs.
// With --placement it adds the Placement to the ClusterManagementAddOn's installStrategy
// (type Placements, no duplicate entry); the hub's addon manager then creates the
// ManagedClusterAddOns. Unlike clusteradm, --dry-run writes nothing: each write goes to the
// apiserver as a server-side dry run, so what is printed was also validated.
import type { KubeConfig } from '@kubernetes/client-node';
import { LifecycleValue, lifecycleAnnotation } from '../../addon/hub/install-strategy/index.ts';
import {
  type AddOnConfig,
  addOnDeploymentConfigResource,
  addonApiGroup,
  type ClusterManagementAddOn,
  type ManagedClusterAddOn,
} from '../../api/index.ts';
import { InvalidArgumentError, TetherError } from '../../errors.ts';
import { canonicalJson } from '../../kube/canonical-json.ts';
import { isNotFound } from '../../kube/index.ts';
import type { PlacementRef } from '../../placement/cli/work-by-placement.ts';
import type { EnableTarget } from './flags.ts';
import {
  type AddonChange,
  type AddonClients,
  type AddonResult,
  addonClients,
  cmaObject,
  mcaObject,
  replaceWithRetry,
  requireClusterManagementAddOns,
  requireManagedClusters,
} from './hub.ts';

export interface EnableAddonsOptions {
  names: readonly string[];
  target: EnableTarget;
  /** spec.configs of each ManagedClusterAddOn, or the placement strategy's configs; none: left as they are */
  configs: readonly AddOnConfig[];
  dryRun: boolean;
}

/** Enables each addon of `names` on the target; checks everything before the first write. */
export async function enableAddons(hub: KubeConfig, opts: EnableAddonsOptions): Promise<AddonResult> {
  const clients = addonClients(hub);
  if (opts.target.kind === 'clusters') await requireManagedClusters(clients, opts.target.clusters);
  else await requirePlacement(clients, opts.target.placement);
  const cmas = await requireClusterManagementAddOns(clients, opts.names);
  for (const cma of cmas.values()) checkSupportedConfigs(cma, opts.configs);
  await requireDeploymentConfigs(clients, opts.configs);

  const result: AddonResult = { changes: [], notes: [] };
  for (const name of opts.names) {
    if (opts.target.kind === 'clusters') {
      for (const cluster of opts.target.clusters) {
        result.changes.push(await enableOnCluster(clients, name, cluster, opts.target, opts));
      }
    } else {
      result.changes.push(await addPlacement(clients, name, opts.target.placement, opts, result.notes));
    }
  }
  return result;
}

async function requirePlacement(clients: AddonClients, ref: PlacementRef): Promise<void> {
  if (!(await clients.placements.get(ref.name, ref.namespace))) {
    throw new InvalidArgumentError(
      `Placement ${ref.namespace}/${ref.name} not found: create it first (its namespace needs a ManagedClusterSetBinding: tether clusterset bind)`,
    );
  }
}

/** A config kind the addon does not list in spec.supportedConfigs would only be reported unsupported later. */
function checkSupportedConfigs(cma: ClusterManagementAddOn, configs: readonly AddOnConfig[]): void {
  const supported = (cma.spec.supportedConfigs ?? []).map((c) => `${c.group ?? ''}/${c.resource}`);
  for (const c of configs) {
    const kind = `${c.group ?? ''}/${c.resource}`;
    if (!supported.includes(kind)) {
      throw new InvalidArgumentError(
        `addon ${cma.metadata.name} takes no config of kind ${kind} (its ClusterManagementAddOn supports: ${supported.length > 0 ? supported.join(', ') : 'none'})`,
      );
    }
  }
}

/** AddOnDeploymentConfigs are tether's to check: a misspelt one would leave the addon waiting. */
async function requireDeploymentConfigs(
  clients: AddonClients,
  configs: readonly AddOnConfig[],
): Promise<void> {
  for (const c of configs) {
    if (c.group !== addonApiGroup || c.resource !== addOnDeploymentConfigResource.plural) continue;
    if (c.namespace === undefined) {
      throw new InvalidArgumentError(
        `--config ${c.group}/${c.resource}:${c.name}: an AddOnDeploymentConfig is namespaced; write <namespace>/${c.name}`,
      );
    }
    if (!(await clients.deploymentConfigs.get(c.name, c.namespace))) {
      throw new InvalidArgumentError(
        `AddOnDeploymentConfig ${c.namespace}/${c.name} not found: create it first`,
      );
    }
  }
}

async function enableOnCluster(
  clients: AddonClients,
  addon: string,
  cluster: string,
  target: Extract<EnableTarget, { kind: 'clusters' }>,
  opts: EnableAddonsOptions,
): Promise<AddonChange> {
  const object = mcaObject(cluster, addon);
  const detail = `install namespace ${target.installNamespace}`;
  const labels = Object.keys(target.labels).length > 0 ? target.labels : undefined;
  const annotations = Object.keys(target.annotations).length > 0 ? target.annotations : undefined;
  const configs = opts.configs.length > 0 ? [...opts.configs] : undefined;
  const updated = await replaceWithRetry(
    clients.mcas,
    addon,
    cluster,
    (mca: ManagedClusterAddOn) => {
      const before = canonicalJson([mca.metadata.labels, mca.metadata.annotations, mca.spec]);
      // clusteradm replaces labels and annotations wholesale; configs only when given.
      mca.metadata.labels = labels;
      mca.metadata.annotations = annotations;
      mca.spec = {
        ...mca.spec,
        installNamespace: target.installNamespace,
        ...(configs ? { configs } : {}),
      };
      return canonicalJson([mca.metadata.labels, mca.metadata.annotations, mca.spec]) !== before;
    },
    { dryRun: opts.dryRun },
  );
  if (updated) return { object, action: updated.changed ? 'updated' : 'unchanged', detail };
  try {
    await clients.mcas.create(
      {
        metadata: {
          name: addon,
          namespace: cluster,
          ...(labels ? { labels } : {}),
          ...(annotations ? { annotations } : {}),
        },
        spec: { installNamespace: target.installNamespace, ...(configs ? { configs } : {}) },
      },
      { dryRun: opts.dryRun },
    );
  } catch (err) {
    // The ManagedCluster exists (checked), so a 404 here is its namespace: not accepted yet.
    if (!isNotFound(err)) throw err;
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `cluster ${cluster} has no namespace on the hub yet: accept it first (tether accept --clusters ${cluster})`,
    );
  }
  return { object, action: 'created', detail };
}

interface PlacementStrategy {
  name: string;
  namespace: string;
  configs?: AddOnConfig[];
  [field: string]: unknown;
}

async function addPlacement(
  clients: AddonClients,
  addon: string,
  ref: PlacementRef,
  opts: EnableAddonsOptions,
  notes: string[],
): Promise<AddonChange> {
  const object = cmaObject(addon);
  const placement = `${ref.namespace}/${ref.name}`;
  // What the last (successful) read showed, for the report.
  const seen = { wasManual: false, existingEntry: false };
  const updated = await replaceWithRetry(
    clients.cmas,
    addon,
    undefined,
    (cma: ClusterManagementAddOn) => {
      const strategy = cma.spec.installStrategy ?? {};
      seen.wasManual = strategy.type !== 'Placements';
      const placements = (strategy.placements ?? []) as PlacementStrategy[];
      const entry = placements.find((p) => p.namespace === ref.namespace && p.name === ref.name);
      seen.existingEntry = entry !== undefined;
      const configs = opts.configs.length > 0 ? [...opts.configs] : undefined;
      if (entry) {
        const sameConfigs = !configs || canonicalJson(entry.configs ?? []) === canonicalJson(configs);
        if (!seen.wasManual && sameConfigs) return false;
        if (configs) entry.configs = configs;
      } else {
        placements.push({ namespace: ref.namespace, name: ref.name, ...(configs ? { configs } : {}) });
      }
      cma.spec.installStrategy = { ...strategy, type: 'Placements', placements };
      return true;
    },
    { dryRun: opts.dryRun },
  );
  if (!updated) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `ClusterManagementAddOn ${addon} disappeared; run again`,
    );
  }
  if (updated.object.metadata.annotations?.[lifecycleAnnotation] === LifecycleValue.Self) {
    notes.push(
      `addon ${addon} installs itself (annotation ${lifecycleAnnotation}: self): the hub's addon manager leaves its installStrategy to the addon's own controller`,
    );
  }
  if (updated.changed && seen.wasManual) {
    // The hub's addon manager only removes ManagedClusterAddOns it created (controller owner: the
    // ClusterManagementAddOn); ones enabled by hand stay wherever the placements decide.
    const byHand = (await clients.mcas.list({ fieldSelector: `metadata.name=${addon}` })).items
      .filter(
        (m) => !m.metadata.ownerReferences?.some((o) => o.controller && o.kind === 'ClusterManagementAddOn'),
      )
      .map((m) => m.metadata.namespace ?? '')
      .sort();
    if (byHand.length > 0) {
      notes.push(
        `addon ${addon} is also enabled by hand on ${byHand.join(', ')}: it stays there whatever the placements select (tether addon disable --names ${addon} --clusters … removes it)`,
      );
    }
  }
  if (!updated.changed) {
    return {
      object,
      action: 'unchanged',
      detail: `already installs on the clusters placement ${placement} selects`,
    };
  }
  return {
    object,
    action: 'updated',
    detail: seen.existingEntry
      ? `installs on the clusters placement ${placement} selects, with the given configs`
      : `installs on the clusters placement ${placement} selects (installStrategy Placements)`,
  };
}
