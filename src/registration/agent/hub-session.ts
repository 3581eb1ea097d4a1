// HubSession: everything the agent runs against the hub with one hub credential — the informer on
// its own ManagedCluster (list/watch with fieldSelector metadata.name=<cluster>: the agent's RBAC
// names only that object), the status reconciler and the lease updater. A new credential gets a
// new session; the old one is stopped only after the new one runs, and stopping waits for the
// reconcile in flight, so no work is dropped at a certificate rotation. Managed-cluster state it
// reads (claims, probe) belongs to the agent and outlives sessions.
import type { KubeConfig } from '@kubernetes/client-node';
import type { ManagedClusterClaim } from '../../api/cluster.ts';
import {
  type ClientConfig,
  type ClusterClaim,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../api/index.ts';
import {
  type Controller,
  Informer,
  isConditionTrue,
  ResourceClient,
  runController,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { ManagedClusterProbe } from './availability.ts';
import { ManagedClusterLeaseUpdater } from './lease.ts';
import { ManagedClusterStatusReconciler } from './status.ts';

export interface HubSessionOptions {
  hubKubeConfig: KubeConfig;
  clusterName: string;
  claimInformer: Informer<ClusterClaim>;
  probe: ManagedClusterProbe;
  clientConfigs: ClientConfig[];
  maxCustomClusterClaims: number;
  /** the agent's own reserved claims (in-process-addons.tether.dev) */
  agentClaims: readonly ManagedClusterClaim[];
  statusIntervalMs: number;
  /** how often the cheap managed-apiserver health check runs between status reconciles */
  healthCheckIntervalMs: number;
  onUnauthorized(): void;
  onJoined(): void;
  /** the ManagedCluster shows HubAcceptedManagedCluster True */
  onAccepted?(): void;
  /** the ManagedCluster is being deleted or gone on the hub */
  onClusterMissing(): void;
  log: Logger;
}

export class HubSession {
  private readonly opts: HubSessionOptions;
  private readonly clusterInformer: Informer<ManagedCluster>;
  private readonly lease: ManagedClusterLeaseUpdater;
  private controller?: Controller;
  private removeHandlers: Array<() => void> = [];
  private healthTimer?: NodeJS.Timeout;

  constructor(opts: HubSessionOptions) {
    this.opts = opts;
    const clusters = new ResourceClient<ManagedCluster>(opts.hubKubeConfig, managedClusterResource);
    this.clusterInformer = new Informer(clusters, {
      fieldSelector: `metadata.name=${opts.clusterName}`,
      name: 'managedcluster',
      backoffMaxMs: 10_000,
      log: forbiddenOnceLogger(opts.log),
    });
    this.lease = new ManagedClusterLeaseUpdater({
      hubKubeConfig: opts.hubKubeConfig,
      clusterName: opts.clusterName,
      cluster: () => this.clusterInformer.getByName(opts.clusterName),
      // A renewal may be what the status reconciler waits for (see status.ts).
      onRenewed: () => this.controller?.queue.add(opts.clusterName),
      log: opts.log.child({ loop: 'lease' }),
    });
  }

  start(): void {
    if (this.controller) return;
    const { clusterName } = this.opts;
    const status = new ManagedClusterStatusReconciler({
      ...this.opts,
      clusterInformer: this.clusterInformer,
      intervalMs: this.opts.statusIntervalMs,
      leaseRenewals: () => this.lease.renewed,
      requestLeaseRenewal: () => this.lease.requestRenewal(),
      log: this.opts.log.child({ loop: 'status' }),
    });
    this.controller = runController({
      name: 'managedcluster-status',
      informers: [this.clusterInformer],
      keyFunc: () => clusterName,
      reconcile: () => status.reconcile(),
      queue: { baseDelayMs: 500, maxDelayMs: Math.max(1000, this.opts.statusIntervalMs) },
      log: this.opts.log.child({ loop: 'status' }),
    });
    const controller = this.controller;
    const enqueue = () => controller.queue.add(clusterName);
    this.removeHandlers = [
      this.opts.claimInformer.addHandlers({
        add: enqueue,
        update: (a, b) => a !== b && enqueue(),
        delete: enqueue,
      }),
      this.clusterInformer.addHandlers({
        add: (cluster) => {
          this.lease.poke();
          this.noteAccepted(cluster);
        },
        update: (_old, cluster) => {
          this.lease.poke();
          this.noteAccepted(cluster);
          if (cluster.metadata.deletionTimestamp) this.opts.onClusterMissing();
        },
        delete: () => {
          this.lease.poke();
          this.opts.onClusterMissing();
        },
      }),
    ];
    this.lease.start();
    // An outage of the managed apiserver reaches the hub within seconds, not a status interval.
    let checking = false;
    this.healthTimer = setInterval(() => {
      if (checking) return;
      checking = true;
      this.opts.probe
        .healthChanged()
        .then((changed) => changed && enqueue())
        .catch(() => {})
        .finally(() => {
          checking = false;
        });
    }, this.opts.healthCheckIntervalMs);
    this.healthTimer.unref();
  }

  private noteAccepted(cluster: ManagedCluster): void {
    if (isConditionTrue(cluster.status?.conditions, ManagedClusterCondition.HubAccepted)) {
      this.opts.onAccepted?.();
    }
  }

  /** Lease renewals this session made. */
  get leaseRenewals(): number {
    return this.lease.renewed;
  }

  /** Stop the lease loop and the controller (waits for a running reconcile). */
  async stop(): Promise<void> {
    clearInterval(this.healthTimer);
    for (const remove of this.removeHandlers.splice(0)) remove();
    await Promise.all([this.lease.stop(), this.controller?.stop()]);
  }
}

/**
 * The ManagedCluster informer's log: a list or watch the hub refuses (403) is expected for a moment
 * after a new certificate, until the hub has written this cluster's ClusterRole/Binding (the hub's
 * approver waits for them; `tether accept` by hand may not): said once at info, then at debug,
 * while the informer retries. Every other warning stays a warning.
 */
function forbiddenOnceLogger(log: Logger): Logger {
  const quiet = log.child({});
  const warn = quiet.warn.bind(quiet);
  let told = false;
  quiet.warn = ((obj: unknown, ...rest: unknown[]) => {
    const err = typeof obj === 'object' && obj !== null ? (obj as { err?: unknown }).err : undefined;
    if (typeof err === 'string' && / is forbidden: /.test(err)) {
      const level = told ? 'debug' : 'info';
      told = true;
      quiet[level](
        { err },
        'the hub does not let this identity read its ManagedCluster yet (its grants come with the cluster): retrying',
      );
      return;
    }
    (warn as (...args: unknown[]) => void)(obj, ...rest);
  }) as Logger['warn'];
  return quiet;
}
