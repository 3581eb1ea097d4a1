// `tether install hub-addon --names …`: registers the hub side of addons tether ships, as
// clusteradm's `install hub-addon` does for OCM's (argocd, governance-policy-framework): a
// ClusterManagementAddOn with installStrategy Manual, so nothing is installed on any cluster until
// `tether addon enable` says where. The addons and what their ClusterManagementAddOns say come from
// src/addon/builtin. tether's addon manager serves every ClusterManagementAddOn, so the lifecycle
// annotation says so as OCM's addon-manager expects. An existing ClusterManagementAddOn
// is left as it is (its installStrategy may already hold placements). --dry-run writes nothing.
import type { KubeConfig } from '@kubernetes/client-node';
import { type BuiltinAddonMeta, builtinAddonMetas } from '../../addon/builtin/index.ts';
import { LifecycleValue, lifecycleAnnotation } from '../../addon/hub/install-strategy/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { isAlreadyExists } from '../../kube/index.ts';
import { type AddonResult, addonClients, cmaObject } from './hub.ts';

/** The definitions of `names`; an unknown name stops before anything is written, listing the known ones. */
export function hubAddonDefinitions(
  names: readonly string[],
  known: readonly BuiltinAddonMeta[] = builtinAddonMetas,
): BuiltinAddonMeta[] {
  const unknown = names.filter((n) => !known.some((d) => d.name === n));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `no hub addon named ${unknown.join(', ')}: tether ships ${known.map((d) => d.name).join(', ')}`,
    );
  }
  return names.map((n) => known.find((d) => d.name === n) as BuiltinAddonMeta);
}

/** Creates the ClusterManagementAddOn of each definition that the hub does not have yet. */
export async function installHubAddons(
  hub: KubeConfig,
  definitions: readonly BuiltinAddonMeta[],
  opts: { dryRun: boolean },
): Promise<AddonResult> {
  const { cmas } = addonClients(hub);
  const result: AddonResult = { changes: [], notes: [] };
  for (const d of definitions) {
    const object = cmaObject(d.name);
    if (await cmas.get(d.name)) {
      result.changes.push({ object, action: 'unchanged', detail: 'already installed' });
      continue;
    }
    try {
      await cmas.create(
        {
          metadata: { name: d.name, annotations: { [lifecycleAnnotation]: LifecycleValue.AddonManager } },
          spec: {
            addOnMeta: { displayName: d.displayName, description: d.description },
            supportedConfigs: [...d.supportedConfigs],
            installStrategy: { type: 'Manual' },
          },
        },
        { dryRun: opts.dryRun },
      );
    } catch (err) {
      // Someone else created it since the read: installed all the same.
      if (!isAlreadyExists(err)) throw err;
      result.changes.push({ object, action: 'unchanged', detail: 'already installed' });
      continue;
    }
    result.changes.push({
      object,
      action: 'created',
      detail: `enable it with tether addon enable --names ${d.name} --clusters … or --placement …`,
    });
  }
  return result;
}
