// The deploy controller's part of a ManagedClusterAddOn's status: ManifestApplied, Available (for
// hub-probed modes), HostingClusterValidity and HostingManifestApplied (hosted mode), Progressing with configReferences[].lastAppliedConfig, status.namespace,
// healthCheck.mode, addOnMeta and supportedConfigs. Other parts write other conditions and fields
// (registrations, RegistrationApplied, Configured, desiredConfig, Lease-mode Available) into the same
// status, so every write starts from the latest object, changes only these, and goes with its
// resourceVersion; a conflict re-reads and tries again.
import type {
  ClusterManagementAddOn,
  ConfigGroupResource,
  ManagedClusterAddOn,
  ManagedClusterAddOnStatus,
} from '../../../api/addon.ts';
import type { ManifestWork } from '../../../api/work.ts';
import { type ConditionUpdate, removeCondition, setCondition } from '../../../kube/conditions.ts';
import type { ResourceClient } from '../../../kube/resources.ts';
import { writeAddonStatus } from '../../../registration/addon-status-write.ts';
import type { AddonHealthProber, AgentAddon } from '../../sdk/types.ts';
import { AddonConditionType } from '../addon-conditions.ts';
import { progressing } from './progressing.ts';
import { healthCheckMode } from './work-health.ts';

export interface AddonStatusChange {
  addon: AgentAddon;
  cma: ClusterManagementAddOn | undefined;
  installNamespace: string;
  /** the addon's health probe on this cluster (AgentAddon.healthFor); default: the addon's own */
  health?: AddonHealthProber;
  /** undefined: leave ManifestApplied as it is */
  manifestApplied?: ConditionUpdate;
  /** undefined: leave Available as it is */
  available?: ConditionUpdate;
  /** the deploy works as the cache has them; undefined: leave Progressing as it is */
  works?: readonly ManifestWork[];
  /** HostingClusterValidity: set it, or 'none' to drop it (the add-on is no longer asked to be hosted) */
  hostingClusterValidity?: ConditionUpdate | 'none';
  /** HostingManifestApplied (the hosting works): set it, 'none' to drop it, undefined to leave it */
  hostingManifestApplied?: ConditionUpdate | 'none';
}

/** Supported configs: the ClusterManagementAddOn's, else the addon's own. */
export function supportedConfigsOf(
  addon: AgentAddon,
  cma: ClusterManagementAddOn | undefined,
): ConfigGroupResource[] {
  const list = cma?.spec.supportedConfigs ?? addon.supportedConfigs ?? [];
  return list.map((c) => ({ group: c.group ?? '', resource: c.resource }));
}

/** The status with `change` applied (a copy). */
export function changedStatus(
  mca: ManagedClusterAddOn,
  change: AddonStatusChange,
): ManagedClusterAddOnStatus {
  const status: ManagedClusterAddOnStatus = structuredClone(mca.status ?? {});
  status.namespace = change.installNamespace;
  status.healthCheck = {
    ...(status.healthCheck ?? {}),
    mode: healthCheckMode(change.health ?? change.addon.health),
  };
  const meta = change.cma?.spec.addOnMeta ?? {
    ...(change.addon.displayName ? { displayName: change.addon.displayName } : {}),
    ...(change.addon.description ? { description: change.addon.description } : {}),
  };
  if (Object.keys(meta).length > 0) status.addOnMeta = meta;
  const supported = supportedConfigsOf(change.addon, change.cma);
  if (supported.length > 0) status.supportedConfigs = supported;
  else delete status.supportedConfigs;
  if (change.manifestApplied) status.conditions = setCondition(status.conditions, change.manifestApplied);
  if (change.available) status.conditions = setCondition(status.conditions, change.available);
  if (change.hostingClusterValidity === 'none')
    status.conditions = removeCondition(status.conditions, AddonConditionType.HostingClusterValidity);
  else if (change.hostingClusterValidity)
    status.conditions = setCondition(status.conditions, change.hostingClusterValidity);
  if (change.hostingManifestApplied === 'none')
    status.conditions = removeCondition(status.conditions, AddonConditionType.HostingManifestApplied);
  else if (change.hostingManifestApplied)
    status.conditions = setCondition(status.conditions, change.hostingManifestApplied);
  if (change.works) {
    const result = progressing({ ...mca, status }, status.conditions, supported, change.works);
    if (result.condition) status.conditions = setCondition(status.conditions, result.condition);
    if (result.configReferences) status.configReferences = result.configReferences;
  }
  return status;
}

/** Write `change` onto the addon's latest status; nothing when it changes nothing. */
export async function updateAddonStatus(
  client: ResourceClient<ManagedClusterAddOn>,
  mca: ManagedClusterAddOn,
  change: AddonStatusChange,
): Promise<void> {
  await writeAddonStatus(client, mca, (current) => changedStatus(current, change));
}
