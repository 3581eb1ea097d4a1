// The registration agent's side of Lease health (OCM's ManagedClusterAddOnLeaseController): for
// each ManagedClusterAddOn in its cluster namespace on the hub whose status.healthCheck.mode is
// Lease (or unset), read Lease `<addon>` in the add-on's install namespace on the managed cluster
// (falling back to Lease `<addon>` in the cluster namespace on the hub, as OCM does for agents that
// renew there) and set the add-on's `Available` condition with OCM's reasons:
//   True    ManagedClusterAddOnLeaseUpdated       renewTime within the grace period (5 × 60 s)
//   False   ManagedClusterAddOnLeaseUpdateStopped  renewTime older than that
//   Unknown ManagedClusterAddOnLeaseNotFound       no Lease on either cluster
// Every add-on is looked at again every 30 s (OCM's sync interval), and once more just after its
// lease would go stale, so an agent that stops shows False within the grace period plus moments.
// Owns only the `Available` condition of Lease-mode add-ons: a status write reads the add-on,
// changes that one condition and replaces the status at the resourceVersion read (409: read again).
// Each change is also an event (events.k8s.io, reason ManagedClusterAddOnStatusUpdated, OCM's) in
// the cluster namespace, best effort.
// Customized-mode add-ons (the hub's probes decide) and hosted add-ons (their lease is on a hosting
// cluster tether does not reach) are left alone.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AddOnCondition,
  defaultAddonLeaseDurationSeconds,
  hostingClusterNameAnnotation,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../../api/addon.ts';
import { addonInstallNamespace } from '../../../api/addon-registration.ts';
import { errorMessage } from '../../../errors.ts';
import {
  type ConditionUpdate,
  type Controller,
  eventResource,
  formatMicroTime,
  Informer,
  type KubeObject,
  type Lease,
  leaseResource,
  ResourceClient,
  runController,
  splitKey,
} from '../../../kube/index.ts';
import type { Logger } from '../../../log.ts';
import { withCondition, writeAddonStatus } from '../../addon-status-write.ts';

/** The Available reasons of Lease health (OCM's). */
export const AddonLeaseReason = {
  Updated: 'ManagedClusterAddOnLeaseUpdated',
  UpdateStopped: 'ManagedClusterAddOnLeaseUpdateStopped',
  NotFound: 'ManagedClusterAddOnLeaseNotFound',
} as const;

/** A lease counts as renewed for this many lease durations after its renewTime (OCM's). */
export const addonLeaseGraceDurations = 5;
/** OCM's AddOnLeaseControllerSyncInterval. */
export const addonLeaseSyncIntervalMs = 30_000;

/** After the moment a lease goes stale, look again this much later (clock granularity). */
const staleMarginMs = 1_000;
/** The registration agent's role may create these in its cluster namespace (not core/v1 events). */
const eventReason = 'ManagedClusterAddOnStatusUpdated';
const eventInstance = hostname();

/** Whether Lease health applies: healthCheck.mode Lease or unset, and not hosted. */
export function usesLeaseHealth(addon: ManagedClusterAddOn): boolean {
  if (addon.status?.healthCheck?.mode === 'Customized') return false;
  return !addon.metadata.annotations?.[hostingClusterNameAnnotation];
}

/**
 * The Available condition for `addon` given its lease (undefined: found on neither cluster),
 * OCM's statuses, reasons and messages. `graceMs` is how long after renewTime the lease counts.
 */
export function leaseAvailability(
  addonName: string,
  lease: Lease | undefined,
  now: Date,
  graceMs: number,
): ConditionUpdate {
  if (!lease) {
    return {
      type: AddOnCondition.Available,
      status: 'Unknown',
      reason: AddonLeaseReason.NotFound,
      message: `The status of ${addonName} add-on is unknown because get lease from hub failed: leases.coordination.k8s.io "${addonName}" not found`,
    };
  }
  if (now.getTime() < staleAt(lease, graceMs)) {
    return {
      type: AddOnCondition.Available,
      status: 'True',
      reason: AddonLeaseReason.Updated,
      message: `${addonName} add-on is available.`,
    };
  }
  return {
    type: AddOnCondition.Available,
    status: 'False',
    reason: AddonLeaseReason.UpdateStopped,
    message: `${addonName} add-on is not available.`,
  };
}

/** When the lease stops counting as renewed (ms since the epoch); 0 when it was never renewed. */
function staleAt(lease: Lease, graceMs: number): number {
  const renewed = Date.parse(lease.spec?.renewTime ?? '');
  return Number.isNaN(renewed) ? 0 : renewed + graceMs;
}

export interface AddonLeaseHealthOptions {
  /** the registration agent's hub credential (reads its add-ons, writes their status, reads hub leases) */
  hubKubeConfig: KubeConfig;
  /** the managed cluster, where add-on agents renew their leases */
  managedKubeConfig: KubeConfig;
  clusterName: string;
  log: Logger;
  /** what agents renew at; the grace period is 5 of these (default 60 s, OCM's) */
  leaseDurationSeconds?: number;
  /** how often every add-on is looked at again (default 30 s, OCM's) */
  syncIntervalMs?: number;
}

export interface AddonLeaseHealth {
  /** true once the add-on cache synced; false when stopped before */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** Keep `Available` of the cluster's Lease-mode add-ons in step with their agents' leases. */
export function startAddonLeaseHealth(opts: AddonLeaseHealthOptions): AddonLeaseHealth {
  const { clusterName, log } = opts;
  const graceMs =
    addonLeaseGraceDurations * (opts.leaseDurationSeconds ?? defaultAddonLeaseDurationSeconds) * 1000;
  const syncIntervalMs = opts.syncIntervalMs ?? addonLeaseSyncIntervalMs;
  const addons = new ResourceClient<ManagedClusterAddOn>(opts.hubKubeConfig, managedClusterAddOnResource);
  const managedLeases = new ResourceClient<Lease>(opts.managedKubeConfig, leaseResource, {
    requestTimeoutMs: 15_000,
  });
  const hubLeases = new ResourceClient<Lease>(opts.hubKubeConfig, leaseResource, {
    requestTimeoutMs: 15_000,
  });
  const events = new ResourceClient<KubeObject>(opts.hubKubeConfig, eventResource, {
    requestTimeoutMs: 15_000,
  });
  const informer = new Informer<ManagedClusterAddOn>(addons, {
    namespace: clusterName,
    name: 'addon-lease-health',
    log,
  });

  const leaseOf = async (addon: ManagedClusterAddOn): Promise<Lease | undefined> =>
    (await managedLeases.get(addon.metadata.name ?? '', addonInstallNamespace(addon))) ??
    (await hubLeases.get(addon.metadata.name ?? '', clusterName));

  const reconcile = async (key: string) => {
    const cached = informer.get(key);
    if (!cached || !usesLeaseHealth(cached)) return;
    const name = splitKey(key).name;
    const lease = await leaseOf(cached);
    const now = new Date();
    const update = leaseAvailability(name, lease, now, graceMs);
    if (await writeAvailable(addons, cached, update)) {
      log.info(
        { addon: name, status: update.status, reason: update.reason },
        'add-on Available condition updated from its lease',
      );
      const note = `update managed cluster addon "${name}" available condition to "${update.status}" with its lease "${addonInstallNamespace(cached)}/${name}" status`;
      await recordEvent(events, cached, note).catch((err: unknown) =>
        log.warn({ addon: name, err: errorMessage(err) }, 'cannot record an event on the hub'),
      );
    }
    // look again at OCM's interval, and just after a fresh lease would go stale
    const stale = lease ? staleAt(lease, graceMs) - now.getTime() : 0;
    const untilStale = update.status === 'True' ? stale + staleMarginMs : syncIntervalMs;
    return { requeueAfterMs: Math.max(staleMarginMs, Math.min(syncIntervalMs, untilStale)) };
  };

  const controller: Controller = runController({
    name: 'addon-lease-health',
    informers: [informer],
    reconcile,
    log,
  });
  return {
    ready: controller.ready,
    stop: () => controller.stop(),
  };
}

/**
 * Set `update` on the add-on's status unless it is already there; only the Available condition
 * changes. Whether it wrote.
 */
async function writeAvailable(
  addons: ResourceClient<ManagedClusterAddOn>,
  cached: ManagedClusterAddOn,
  update: ConditionUpdate,
): Promise<boolean> {
  const { name, namespace } = cached.metadata;
  try {
    return await writeAddonStatus(addons, cached, (current) =>
      // switched to Customized since the cache saw it: no longer ours to write
      usesLeaseHealth(current) ? withCondition(current, update) : undefined,
    );
  } catch (err) {
    throw new Error(`cannot set Available on add-on ${namespace}/${name}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
}

/** OCM's event about an Available change, regarding the add-on, in its cluster namespace. */
async function recordEvent(
  events: ResourceClient<KubeObject>,
  addon: ManagedClusterAddOn,
  note: string,
): Promise<void> {
  const { name = '', namespace = '' } = addon.metadata;
  await events.create({
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
    eventTime: formatMicroTime(new Date()),
    reportingController: 'klusterlet-agent',
    reportingInstance: eventInstance,
    action: eventReason,
    reason: eventReason,
    type: 'Normal',
    note,
    regarding: { apiVersion: addon.apiVersion, kind: addon.kind, name, namespace, uid: addon.metadata.uid },
  } as KubeObject);
}
