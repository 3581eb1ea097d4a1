// ManagedClusterLeaseReconciler: the hub's watchdog on each accepted cluster's
// `managed-cluster-lease`. The agent renews the lease every spec.leaseDurationSeconds; once
// renewTime + graceFactor × leaseDurationSeconds has passed (OCM: 5×), ManagedClusterConditionAvailable
// becomes Unknown (ManagedClusterLeaseUpdateStopped). No polling: each reconcile asks the work
// queue to come back exactly at the deadline, and every renewal the informer sees re-arms it.
// The hub only ever takes Available away; setting it True again is the agent's job.
// renewTime is the agent's clock against ours, as in OCM: each renewal this hub sees arrive sets
// ManagedClusterConditionClockSynced — True when renewTime is within one lease duration of the
// hub's now, False (ManagedClusterClockOutOfSync) otherwise — with an event when it changes. The
// first lease a hub process sees is only remembered: it may be an old renewal, not a skewed clock.
import {
  clusterNameLabel,
  defaultLeaseDurationSeconds,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterReason,
  managedClusterLeaseName,
  managedClusterResource,
} from '../../api/index.ts';
import {
  findCondition,
  formatMicroTime,
  isAlreadyExists,
  isConditionTrue,
  isNotFound,
  type Lease,
  type ReconcileResult,
  type ResourceClient,
} from '../../kube/index.ts';
import type { LeaseCreations } from './applied-objects.ts';
import { type HubContext, setClusterConditions } from './context.ts';
import { clockOutOfSyncMessage, clockSyncedMessage, leaseStoppedMessage } from './resources.ts';

/** Whether a renewal stamped `renewTime` and seen at `now` shows the clocks agree (OCM's rule). */
export function isClockSynced(renewTime: string, now: number, leaseDurationSeconds: number): boolean {
  const renewedAt = Date.parse(renewTime);
  if (Number.isNaN(renewedAt)) return false;
  const durationMs = leaseDurationSeconds * 1000;
  return now - renewedAt < durationMs && renewedAt - now < durationMs;
}

/**
 * When (ms since the epoch) the cluster counts as gone quiet: the lease's last renewal (or
 * acquisition, or creation) plus graceFactor × the cluster's lease duration.
 */
export function leaseDeadline(cluster: ManagedCluster, lease: Lease, graceFactor: number): number {
  const durationSeconds = cluster.spec?.leaseDurationSeconds || defaultLeaseDurationSeconds;
  const renewed = lease.spec?.renewTime ?? lease.spec?.acquireTime ?? lease.metadata?.creationTimestamp;
  const renewedAt = renewed ? Date.parse(renewed) : Number.NaN;
  // A lease without a readable time has never been renewed: its deadline has passed.
  if (Number.isNaN(renewedAt)) return 0;
  return renewedAt + graceFactor * durationSeconds * 1000;
}

/** Create the cluster's lease (renewed now) unless it exists; OCM's hub does this on accept too. */
export async function ensureClusterLease(
  leases: ResourceClient<Lease>,
  cluster: ManagedCluster,
  cached: Lease | undefined,
  creations: LeaseCreations,
): Promise<void> {
  const name = cluster.metadata.name ?? '';
  if (cached || creations.recent(name)) return;
  const now = formatMicroTime(new Date());
  try {
    await leases.create({
      metadata: { name: managedClusterLeaseName, namespace: name, labels: { [clusterNameLabel]: name } },
      spec: {
        holderIdentity: managedClusterLeaseName,
        leaseDurationSeconds: cluster.spec?.leaseDurationSeconds || defaultLeaseDurationSeconds,
        renewTime: now,
      },
    });
    creations.add(name);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

export class ManagedClusterLeaseReconciler {
  private readonly ctx: HubContext;
  private readonly leases: ResourceClient<Lease>;
  private readonly graceFactor: number;
  /** the last renewTime seen per cluster: a different one is a renewal that just arrived */
  private readonly seenRenewals = new Map<string, string>();

  constructor(ctx: HubContext, leases: ResourceClient<Lease>, graceFactor: number) {
    this.ctx = ctx;
    this.leases = leases;
    this.graceFactor = graceFactor;
  }

  private async checkClock(cluster: ManagedCluster, lease: Lease): Promise<void> {
    const name = cluster.metadata.name ?? '';
    const renewTime = lease.spec?.renewTime;
    if (!renewTime) return;
    const previous = this.seenRenewals.get(name);
    this.seenRenewals.set(name, renewTime);
    if (previous === undefined || previous === renewTime) return;
    const duration = cluster.spec?.leaseDurationSeconds || defaultLeaseDurationSeconds;
    const synced = isClockSynced(renewTime, Date.now(), duration);
    const status = synced ? 'True' : 'False';
    const before = findCondition(cluster.status?.conditions, ManagedClusterCondition.ClockSynced);
    if (before?.status === status) return;
    await setClusterConditions(
      this.ctx.clusters,
      name,
      [
        {
          type: ManagedClusterCondition.ClockSynced,
          status,
          reason: synced
            ? ManagedClusterReason.ManagedClusterClockSynced
            : ManagedClusterReason.ManagedClusterClockOutOfSync,
          message: synced ? clockSyncedMessage : clockOutOfSyncMessage,
        },
      ],
      cluster,
    );
    await this.ctx.events.record(
      {
        apiVersion: `${managedClusterResource.group}/${managedClusterResource.version}`,
        kind: managedClusterResource.kind,
        name,
        uid: cluster.metadata.uid,
      },
      'ManagedClusterClockSyncedConditionUpdated',
      `update managed cluster "${name}" clock synced condition to ${status}.`,
    );
  }

  /** `name` is the cluster's (and its namespace's) name. */
  async reconcile(name: string): Promise<ReconcileResult | undefined> {
    const cluster = this.ctx.clusterInformer.getByName(name);
    if (!cluster || cluster.metadata.deletionTimestamp || cluster.spec?.hubAcceptsClient !== true) {
      this.seenRenewals.delete(name);
      return undefined;
    }
    const lease = this.ctx.leaseInformer.getByName(managedClusterLeaseName, name);
    if (lease) await this.checkClock(cluster, lease);
    if (!lease) {
      // Until the hub has accepted it, the namespace may not exist: accepting creates the lease.
      if (!isConditionTrue(cluster.status?.conditions, ManagedClusterCondition.HubAccepted)) return undefined;
      try {
        await ensureClusterLease(this.leases, cluster, undefined, this.ctx.leaseCreations);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return undefined; // the informer brings the new lease back here
    }
    const leftMs = leaseDeadline(cluster, lease, this.graceFactor) - Date.now();
    if (leftMs > 0) return { requeueAfterMs: leftMs + 1 };

    const available = findCondition(cluster.status?.conditions, ManagedClusterCondition.Available);
    if (available?.status === 'Unknown') return undefined;
    // The cache may not have the latest renewal yet: only a live read may take availability away.
    const live = await this.leases.get(managedClusterLeaseName, name);
    if (!live) return undefined;
    const liveLeftMs = leaseDeadline(cluster, live, this.graceFactor) - Date.now();
    if (liveLeftMs > 0) return { requeueAfterMs: liveLeftMs + 1 };
    this.ctx.log.info(
      { cluster: name, renewTime: lease.spec?.renewTime },
      'lease expired: availability unknown',
    );
    await setClusterConditions(
      this.ctx.clusters,
      name,
      (fresh) => {
        const current = findCondition(fresh.status?.conditions, ManagedClusterCondition.Available);
        if (current?.status === 'Unknown') return [];
        return [
          {
            type: ManagedClusterCondition.Available,
            status: 'Unknown',
            reason: ManagedClusterReason.ManagedClusterLeaseUpdateStopped,
            message: leaseStoppedMessage,
          },
        ];
      },
      cluster,
    );
    return undefined;
  }
}
