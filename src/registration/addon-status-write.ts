// How every writer of a ManagedClusterAddOn's status writes it, since several parts share that
// status (the deploy controller, the config manager, addon registration on both ends, Lease health,
// the cluster-gateway hub): from the latest copy, each changes only its own fields and conditions,
// replaces the status at that copy's resourceVersion, and on a conflict (409) reads the addon again
// and recomputes, so another writer's change is never overwritten. No other writes.
import type { ManagedClusterAddOn } from '../api/addon.ts';
import { canonicalJson } from '../kube/canonical-json.ts';
import { type ConditionUpdate, findCondition, setCondition } from '../kube/conditions.ts';
import { isConflict, isNotFound, type ResourceClient } from '../kube/index.ts';

/** How often a status write is tried against concurrent writers before it gives up. */
export const addonStatusWriteAttempts = 5;

type AddonStatus = NonNullable<ManagedClusterAddOn['status']>;

export interface AddonStatusWriteOptions {
  /** the addon's latest copy after a conflict (default: GET from the apiserver) */
  latest?: (name: string, namespace?: string) => Promise<ManagedClusterAddOn | undefined>;
  /** tries, the first included (default addonStatusWriteAttempts) */
  attempts?: number;
}

/**
 * Write the status `change` makes of the addon's current one, starting from `mca`. `change`
 * returns the whole new status, or undefined to write nothing (no longer ours to write); a status
 * equal to the current one is not written either. An addon that is gone is left alone. Resolves
 * whether it wrote; throws the conflict once the attempts are used up, and any other error.
 */
export async function writeAddonStatus(
  client: ResourceClient<ManagedClusterAddOn>,
  mca: ManagedClusterAddOn,
  change: (current: ManagedClusterAddOn) => AddonStatus | undefined,
  opts: AddonStatusWriteOptions = {},
): Promise<boolean> {
  const attempts = opts.attempts ?? addonStatusWriteAttempts;
  const latest = opts.latest ?? ((name: string, namespace?: string) => client.get(name, namespace));
  let current: ManagedClusterAddOn | undefined = mca;
  for (let attempt = 1; current; attempt++) {
    const status = change(current);
    if (!status || canonicalJson(status) === canonicalJson(current.status ?? {})) return false;
    try {
      await client.replaceStatus({ ...current, status });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= attempts) throw err;
    }
    current = await latest(current.metadata.name ?? '', current.metadata.namespace);
  }
  return false;
}

/** The addon's status with `update` set, or undefined when the condition already says just that. */
export function withCondition(mca: ManagedClusterAddOn, update: ConditionUpdate): AddonStatus | undefined {
  const existing = findCondition(mca.status?.conditions, update.type);
  if (
    existing?.status === update.status &&
    existing.reason === update.reason &&
    existing.message === update.message
  )
    return undefined;
  return { ...mca.status, conditions: setCondition(mca.status?.conditions, update) };
}
