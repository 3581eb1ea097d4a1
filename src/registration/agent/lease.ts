// ManagedClusterLeaseUpdater: the agent's heartbeat. While the hub accepts the cluster, it moves
// renewTime of Lease `managed-cluster-lease` in the cluster namespace on the hub every
// spec.leaseDurationSeconds (plus up to 25% jitter, OCM's leaseUpdateJitterFactor); the hub's lease
// watchdog turns Available Unknown when it stops. The hub normally creates the lease when it
// accepts the cluster; if it is missing the agent tries to create it, and when its identity may
// not (no create permission), waits for the hub. A changed lease duration applies at once. A failed
// renewal is retried after 1 s, doubling up to 30 s (never a whole period), and requestRenewal()
// renews at once: after an outage the hub sees the heartbeat as soon as the hub is reachable. A
// renewal that failed is also retried as soon as the hub apiserver is seen reachable again (the
// shared server health of src/kube/server-health.ts: probes, any informer's success), not after
// what is left of its backoff. A renewal writes the lease as the previous one left it (one request
// per period); only after a failure, a conflict or at the first renewal is it read first.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  clusterNameLabel,
  defaultLeaseDurationSeconds,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterLeaseName,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import {
  formatMicroTime,
  isConditionTrue,
  isConflict,
  isForbidden,
  isNotFound,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../../kube/index.ts';
import { acquireServerHealth } from '../../kube/server-health.ts';
import type { Logger } from '../../log.ts';
import { describeError } from './describe-error.ts';

const jitterFactor = 0.25;

export interface LeaseUpdaterOptions {
  hubKubeConfig: KubeConfig;
  clusterName: string;
  /** the ManagedCluster as last seen on the hub (informer cache) */
  cluster(): ManagedCluster | undefined;
  /** called after every successful renewal */
  onRenewed?(): void;
  log: Logger;
}

/** After a failed renewal: retry after 1 s, doubling, at most this long (or the lease duration). */
const retryMaxMs = 30_000;

export class ManagedClusterLeaseUpdater {
  private readonly opts: LeaseUpdaterOptions;
  private readonly leases: ResourceClient<Lease>;
  private readonly abort = new AbortController();
  private running?: Promise<void>;
  private wake: () => void = () => {};
  private woken = false;
  private waitingForHub = false;
  private renewals = 0;
  private renewRequested = false;
  private failuresInARow = 0;
  private releaseHealth?: () => void;
  /** the lease our last write returned; undefined after a failure, so the next renewal reads */
  private lastWritten?: Lease;

  constructor(opts: LeaseUpdaterOptions) {
    this.opts = opts;
    this.leases = new ResourceClient<Lease>(opts.hubKubeConfig, leaseResource, { requestTimeoutMs: 15_000 });
  }

  start(): void {
    if (this.running || this.abort.signal.aborted) return;
    const { health, release } = acquireServerHealth(this.opts.hubKubeConfig);
    const stopListening = health.onRecovered(() => {
      if (this.failuresInARow > 0) this.requestRenewal();
    });
    this.releaseHealth = () => {
      stopListening();
      release();
    };
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.wake();
    await this.running;
    this.releaseHealth?.();
    this.releaseHealth = undefined;
  }

  /** The ManagedCluster changed: look again at acceptance and lease duration. */
  poke(): void {
    this.woken = true;
    this.wake();
  }

  /** Renew now rather than at the next due time (the hub took Available away). */
  requestRenewal(): void {
    this.renewRequested = true;
    this.poke();
  }

  /** Successful renewals so far. */
  get renewed(): number {
    return this.renewals;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let nextAt = 0;
    let lastDuration = 0;
    while (!signal.aborted) {
      this.woken = false;
      const cluster = this.opts.cluster();
      if (!cluster || !isConditionTrue(cluster.status?.conditions, ManagedClusterCondition.HubAccepted)) {
        nextAt = 0; // renew as soon as the hub accepts (again)
        await this.pause(60_000);
        continue;
      }
      const duration = cluster.spec.leaseDurationSeconds || defaultLeaseDurationSeconds;
      if (Date.now() >= nextAt || duration !== lastDuration || this.renewRequested) {
        this.renewRequested = false;
        const renewed = await this.renew(duration);
        lastDuration = duration;
        if (renewed) {
          this.failuresInARow = 0;
          nextAt = Date.now() + duration * 1000 * (1 + jitterFactor * Math.random());
        } else {
          // Not a full period: after an outage the hub must see the heartbeat as soon as it is back.
          const cap = Math.min(retryMaxMs, duration * 1000);
          nextAt = Date.now() + Math.min(cap, 1000 * 2 ** Math.min(this.failuresInARow++, 20));
        }
      }
      await this.pause(nextAt - Date.now());
    }
  }

  /** One renewal (or creation); whether it succeeded. */
  private async renew(durationSeconds: number): Promise<boolean> {
    const { clusterName: namespace, log } = this.opts;
    const signal = this.abort.signal;
    try {
      for (let attempt = 0; ; attempt++) {
        // The lease as our last renewal left it: the write needs no read unless someone else
        // wrote it since (409), or it went away (404).
        const lease =
          this.lastWritten ?? (await this.leases.get(managedClusterLeaseName, namespace, { signal }));
        this.lastWritten = undefined;
        const renewTime = formatMicroTime(new Date());
        try {
          this.lastWritten = lease
            ? await this.leases.replace({ ...lease, spec: { ...lease.spec, renewTime } }, { signal })
            : await this.create(namespace, durationSeconds, renewTime);
          break;
        } catch (err) {
          if (!(isConflict(err) || (lease && isNotFound(err))) || attempt >= 2) throw err;
        }
      }
      this.renewals++;
      if (this.waitingForHub) log.info('managed cluster lease renewed');
      this.waitingForHub = false;
      this.opts.onRenewed?.();
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      if (isForbidden(err)) {
        if (!this.waitingForHub) {
          log.warn(
            { err: errorMessage(err) },
            'cannot create or renew the managed cluster lease yet: waiting for the hub',
          );
        }
        this.waitingForHub = true;
        return false;
      }
      log.warn({ err: describeError(err) }, 'managed cluster lease renewal failed');
      return false;
    }
  }

  private async create(namespace: string, leaseDurationSeconds: number, renewTime: string): Promise<Lease> {
    const created = await this.leases.create(
      {
        metadata: { name: managedClusterLeaseName, namespace, labels: { [clusterNameLabel]: namespace } },
        spec: { leaseDurationSeconds, renewTime },
      },
      { signal: this.abort.signal },
    );
    this.opts.log.info('managed cluster lease created (the hub had not yet)');
    return created;
  }

  private async pause(ms: number): Promise<void> {
    if (this.woken || this.abort.signal.aborted || ms <= 0) return;
    const stop = new AbortController();
    this.wake = () => stop.abort();
    try {
      await sleep(ms, undefined, { signal: stop.signal });
    } catch {
      // poked or stopped
    } finally {
      this.wake = () => {};
    }
  }
}
