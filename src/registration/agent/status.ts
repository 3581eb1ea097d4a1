// ManagedClusterStatusReconciler: what the agent reports about its cluster on the hub, in one
// server-side apply of the status subresource per change (field manager `registration-agent`):
//   joining      ManagedClusterJoined True once the hub accepted the cluster (we hold a hub credential)
//   availability ManagedClusterConditionAvailable from the managed apiserver probe, version, capacity
//   claims       status.clusterClaims from the managed cluster's ClusterClaims
// Conditions are a list map keyed by type, so the apply owns only our two entries and the hub's
// (HubAccepted, its lease watchdog's Available Unknown, …) stay as they are; force takes Available
// back from the watchdog. Fields we keep but did not refresh this time are re-stated from the hub's
// copy, because a server-side apply that leaves out a field its manager owned deletes it. Before
// the hub accepts, nothing is written (OCM's agent waits the same way). Spec: only
// managedClusterClientConfigs is kept current.
// One owner per transition of Available: the hub's lease watchdog takes it to Unknown
// (ManagedClusterLeaseUpdateStopped) and the agent does not overwrite that until a lease renewal
// made after it has landed — otherwise the watchdog, still seeing the old lease, takes it away
// again, and the two would flap (and the unreachable taint with them) until the next renewal.
import type { KubeConfig } from '@kubernetes/client-node';
import type { ManagedClusterClaim } from '../../api/cluster.ts';
import {
  type ClientConfig,
  type ClusterClaim,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterReason,
  type ManagedClusterStatus,
  managedClusterResource,
} from '../../api/index.ts';
import { ApiError } from '../../errors.ts';
import {
  type Condition,
  conditionsEqualIgnoringTime,
  findCondition,
  type Informer,
  isConditionTrue,
  type ReconcileResult,
  ResourceClient,
  setCondition,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { ManagedClusterProbe } from './availability.ts';
import { exposeClaims } from './claims.ts';
import { fieldManager } from './hub-kubeconfig-secret.ts';

export interface StatusReconcilerOptions {
  hubKubeConfig: KubeConfig;
  clusterName: string;
  clusterInformer: Informer<ManagedCluster>;
  claimInformer: Informer<ClusterClaim>;
  probe: ManagedClusterProbe;
  clientConfigs: ClientConfig[];
  maxCustomClusterClaims: number;
  /** the agent's own reserved claims, exposed whatever ClusterClaim objects say */
  agentClaims?: readonly ManagedClusterClaim[];
  /** reconcile again this often even without events (the probe interval) */
  intervalMs: number;
  /** the hub answered 401 this many times in a row */
  onUnauthorized(): void;
  /** the hub's ManagedCluster shows Joined True */
  onJoined(): void;
  /** the ManagedCluster is not in the cache (deleted on the hub) */
  onClusterMissing?(): void;
  /** successful lease renewals so far, and a way to ask for one now */
  leaseRenewals(): number;
  requestLeaseRenewal(): void;
  log: Logger;
}

const ourConditions: readonly string[] = [ManagedClusterCondition.Joined, ManagedClusterCondition.Available];

export class ManagedClusterStatusReconciler {
  private readonly opts: StatusReconcilerOptions;
  private readonly clusters: ResourceClient<ManagedCluster>;
  private unauthorizedInARow = 0;
  private lastTruncated = 0;
  private lastWaitLog = 0;
  /** the watchdog's Unknown last seen (its transition time) and the renewals made before it */
  private leaseStopped?: { since: string; renewals: number };
  /**
   * Our conditions as the last apply returned them, for the ManagedCluster with this uid: the
   * informer may not have delivered that write yet, and a condition missing from its stale copy
   * must keep the transition time already written, not get a new one.
   */
  private lastApplied?: { uid: string; conditions: Condition[] };

  constructor(opts: StatusReconcilerOptions) {
    this.opts = opts;
    this.clusters = new ResourceClient<ManagedCluster>(opts.hubKubeConfig, managedClusterResource);
  }

  async reconcile(): Promise<ReconcileResult> {
    try {
      await this.sync();
      this.unauthorizedInARow = 0;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401 && ++this.unauthorizedInARow >= 3) {
        this.opts.onUnauthorized();
      }
      throw err;
    }
    return { requeueAfterMs: this.opts.intervalMs };
  }

  private async sync(): Promise<void> {
    const { clusterName, log } = this.opts;
    const cluster = this.opts.clusterInformer.getByName(clusterName);
    if (!cluster || cluster.metadata.deletionTimestamp) {
      this.opts.onClusterMissing?.();
      return;
    }
    const current = cluster.status ?? {};
    if (!isConditionTrue(current.conditions, ManagedClusterCondition.HubAccepted)) {
      if (Date.now() - this.lastWaitLog >= 60_000) {
        this.lastWaitLog = Date.now();
        log.info('waiting for a hub admin to accept the cluster (hubAcceptsClient)');
      }
      return;
    }
    if (isConditionTrue(current.conditions, ManagedClusterCondition.Joined)) this.opts.onJoined();
    await this.syncClientConfigs(cluster);

    const desired = await this.desiredStatus(current, this.appliedConditionsOf(cluster));
    if (sameStatus(desired, current)) return;
    const applied = await this.clusters.applyStatus(
      { metadata: { name: clusterName }, status: desired },
      { fieldManager, force: true },
    );
    this.lastApplied = {
      uid: applied.metadata?.uid ?? '',
      conditions: (applied.status?.conditions ?? []).filter((c) => ourConditions.includes(c.type)),
    };
    log.debug({ resourceVersion: applied.metadata?.resourceVersion }, 'managed cluster status updated');
    if (isConditionTrue(applied.status?.conditions, ManagedClusterCondition.Joined)) this.opts.onJoined();
  }

  /** What the last apply returned for this very ManagedCluster (not one deleted and created again). */
  private appliedConditionsOf(cluster: ManagedCluster): Condition[] {
    const last = this.lastApplied;
    return last && last.uid !== '' && last.uid === cluster.metadata.uid ? last.conditions : [];
  }

  /** Everything this agent states in the status, fresh where it could be refreshed. */
  private async desiredStatus(
    current: ManagedClusterStatus,
    appliedBefore: readonly Condition[],
  ): Promise<ManagedClusterStatus> {
    let conditions: Condition[] = (current.conditions ?? []).filter((c) => ourConditions.includes(c.type));
    // ours that the (possibly stale) cached copy lacks: as we last wrote them, times included
    for (const c of appliedBefore) if (!findCondition(conditions, c.type)) conditions.push(c);
    conditions = setCondition(conditions, {
      type: ManagedClusterCondition.Joined,
      status: 'True',
      reason: ManagedClusterReason.ManagedClusterJoined,
      message: 'Managed cluster joined',
    });
    const health = await this.opts.probe.check();
    if (health.available && this.mayReportAvailability(current)) {
      conditions = setCondition(conditions, health.available);
    }
    const status: ManagedClusterStatus = { conditions };
    const version = health.kubernetesVersion ? { kubernetes: health.kubernetesVersion } : current.version;
    if (version) status.version = version;
    // Other components may add capacity entries (OCM allows it): keep theirs next to ours.
    const capacity = health.capacity ? { ...current.capacity, ...health.capacity } : current.capacity;
    if (capacity) status.capacity = capacity;
    const allocatable = health.allocatable ?? current.allocatable;
    if (allocatable) status.allocatable = allocatable;
    const claims = this.claims() ?? current.clusterClaims;
    if (claims && claims.length > 0) status.clusterClaims = claims;
    return status;
  }

  /**
   * Whether the agent may state Available now: not while the hub's watchdog holds it Unknown for a
   * stopped lease and no renewal has landed since it did (one is asked for at once).
   */
  private mayReportAvailability(current: ManagedClusterStatus): boolean {
    const available = findCondition(current.conditions, ManagedClusterCondition.Available);
    if (
      available?.status !== 'Unknown' ||
      available.reason !== ManagedClusterReason.ManagedClusterLeaseUpdateStopped
    ) {
      this.leaseStopped = undefined;
      return true;
    }
    const since = available.lastTransitionTime ?? '';
    if (this.leaseStopped?.since !== since) {
      this.leaseStopped = { since, renewals: this.opts.leaseRenewals() };
      this.opts.log.info('the hub holds Available Unknown for a stopped lease: renewing it before reporting');
      this.opts.requestLeaseRenewal();
    }
    return this.opts.leaseRenewals() > this.leaseStopped.renewals;
  }

  /** Claims to expose, or undefined while the claim cache is not loaded (keep what the hub has). */
  private claims() {
    const informer = this.opts.claimInformer;
    if (!informer.hasSynced()) return undefined;
    const max = this.opts.maxCustomClusterClaims;
    const { claims, truncated } = exposeClaims(informer.list(), max, this.opts.agentClaims);
    if (truncated !== this.lastTruncated) {
      if (truncated > 0) {
        this.opts.log.warn(
          { maxCustomClusterClaims: max, notExposed: truncated },
          `more custom cluster claims than maxCustomClusterClaims (${max}): ${truncated} not exposed`,
        );
      }
      this.lastTruncated = truncated;
    }
    return claims;
  }

  private async syncClientConfigs(cluster: ManagedCluster): Promise<void> {
    const want = this.opts.clientConfigs;
    if (stableJson(cluster.spec.managedClusterClientConfigs ?? []) === stableJson(want)) return;
    await this.clusters.patchMerge(
      this.opts.clusterName,
      {
        metadata: { resourceVersion: cluster.metadata.resourceVersion },
        spec: { managedClusterClientConfigs: want },
      },
      undefined,
      { fieldManager },
    );
    this.opts.log.info({ clientConfigs: want.map((c) => c.url) }, 'managedClusterClientConfigs updated');
  }
}

/** Would applying `desired` change anything in `current` (our conditions, ignoring times; the rest exactly)? */
function sameStatus(desired: ManagedClusterStatus, current: ManagedClusterStatus): boolean {
  const ours = (current.conditions ?? []).filter((c) => ourConditions.includes(c.type));
  const wanted = desired.conditions ?? [];
  if (!conditionsEqualIgnoringTime(wanted, ours)) return false;
  const timesKept = wanted.every(
    (c) => findCondition(ours, c.type)?.lastTransitionTime === c.lastTransitionTime,
  );
  if (!timesKept) return false;
  const fields = ['version', 'capacity', 'allocatable'] as const;
  const same = fields.every(
    (f) => desired[f] === undefined || stableJson(desired[f]) === stableJson(current[f]),
  );
  return same && stableJson(desired.clusterClaims ?? []) === stableJson(current.clusterClaims ?? []);
}

/** JSON with object keys sorted, so maps compare by content. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}
