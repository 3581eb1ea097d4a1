// Leader election on a coordination.k8s.io/v1 Lease, the protocol of client-go's leaderelection
// package, so tether replicas and Go components can read each other's leases. Every write is a
// read-modify-replace carrying the resourceVersion read (409 = someone else won the race). Another
// holder's lease counts as expired leaseDurationSeconds after *we* last saw it change (local clock
// only, so clock skew between replicas does not matter). The leader renews every retryPeriodMs;
// when it has not managed to renew for renewDeadlineMs, or sees another holder, it stops leading
// (onStoppedLeading, the leading signal aborts) and goes back to campaigning. stop() releases the
// lease (empty holder, 1 s duration) so a successor does not wait out the lease.
//
// Lease times are metav1.MicroTime: RFC 3339 with exactly six fractional digits. The apiserver
// rejects Date.toISOString()'s three digits; client-node 2.0.1's own V1MicroTime class exists for
// that, and reads come back as plain strings. Here leases are plain JSON and formatMicroTime makes
// the strings.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage, InvalidArgumentError } from '../errors.ts';
import { type Logger, logger } from '../log.ts';
import { isAlreadyExists, isConflict } from './api-errors.ts';
import { leaseResource } from './kinds.ts';
import { ResourceClient } from './resources.ts';
import type { KubeObject } from './types.ts';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime */
  acquireTime?: string;
  /** MicroTime */
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/** metav1.MicroTime text of a Date: 2006-01-02T15:04:05.000000Z. */
export function formatMicroTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaderElectionOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  /** the Lease's name, one per elected component */
  name: string;
  /** this candidate, unique among candidates (e.g. pod name + random suffix) */
  identity: string;
  /** how long a lease holds without renewal (default 15 s) */
  leaseDurationSeconds?: number;
  /** the leader gives up when it could not renew for this long (default 10 s) */
  renewDeadlineMs?: number;
  /** between attempts to acquire or renew (default 2 s) */
  retryPeriodMs?: number;
  /** called on becoming leader; `signal` aborts when leadership ends */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** called when leadership ends (lost, or stop()), before the lease is released */
  onStoppedLeading?(): void | Promise<void>;
  /** called whenever the observed holder changes (also to ourselves) */
  onNewLeader?(identity: string): void;
  /** give the lease up on stop() (default true) */
  releaseOnStop?: boolean;
  log?: Logger;
}

type AttemptResult = 'held' | 'other-holder' | 'failed';

export class LeaderElector {
  private readonly options: LeaderElectionOptions;
  private readonly client: ResourceClient<Lease>;
  private readonly log: Logger;
  private readonly leaseDurationSeconds: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly abort = new AbortController();
  private running?: Promise<void>;
  private leading?: AbortController;
  private observedVersion = '';
  private observedAt = 0;
  private observedHolder = '';
  private observedDurationSeconds = 0;

  constructor(options: LeaderElectionOptions) {
    this.options = options;
    this.leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (!options.identity) throw new InvalidArgumentError('leader election: identity is empty');
    if (!(this.leaseDurationSeconds * 1000 > this.renewDeadlineMs)) {
      throw new InvalidArgumentError(
        'leader election: leaseDurationSeconds must be longer than renewDeadlineMs',
      );
    }
    if (!(this.renewDeadlineMs > this.retryPeriodMs * 1.2)) {
      throw new InvalidArgumentError(
        'leader election: renewDeadlineMs must be longer than 1.2 × retryPeriodMs',
      );
    }
    this.client = new ResourceClient<Lease>(options.kubeconfig, leaseResource, {
      requestTimeoutMs: Math.max(1000, this.renewDeadlineMs / 2),
    });
    this.log =
      options.log ??
      logger('leader-election', {
        lease: `${options.namespace}/${options.name}`,
        identity: options.identity,
      });
  }

  /** Start campaigning (once). */
  start(): void {
    if (this.running || this.abort.signal.aborted) return;
    this.running = this.run();
  }

  isLeader(): boolean {
    return this.leading !== undefined;
  }

  /** The holder last seen in the lease ('' when none). */
  get leader(): string {
    return this.observedHolder;
  }

  /** Stop campaigning; a leader stops leading and (releaseOnStop) gives the lease up. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      if (!(await this.acquire())) break;
      this.startLeading();
      await this.renewUntilLost();
      await this.stopLeading();
    }
    if (this.options.releaseOnStop ?? true) await this.release();
  }

  /** Campaign until we hold the lease (true) or are stopped (false). */
  private async acquire(): Promise<boolean> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      if ((await this.tryAcquireOrRenew()) === 'held') return true;
      await this.pause(this.retryPeriodMs * (1 + Math.random() * 0.2));
    }
    return false;
  }

  /** Renew every retryPeriod; return when renewal failed for renewDeadline, another holder appeared, or stop. */
  private async renewUntilLost(): Promise<void> {
    const signal = this.abort.signal;
    let lastRenew = Date.now();
    while (!signal.aborted) {
      await this.pause(this.retryPeriodMs);
      if (signal.aborted) return;
      const left = this.renewDeadlineMs - (Date.now() - lastRenew);
      const result = left > 0 ? await this.tryAcquireOrRenew(left) : 'failed';
      if (result === 'held') {
        lastRenew = Date.now();
        continue;
      }
      if (signal.aborted) return;
      if (result === 'other-holder') {
        this.log.warn({ holder: this.observedHolder }, 'lost the lease to another holder');
        return;
      }
      if (Date.now() - lastRenew >= this.renewDeadlineMs) {
        this.log.warn(
          { renewDeadlineMs: this.renewDeadlineMs },
          'could not renew the lease in time: stepping down',
        );
        return;
      }
    }
  }

  private async tryAcquireOrRenew(timeoutMs?: number): Promise<AttemptResult> {
    const { namespace, name, identity } = this.options;
    const call = { signal: this.abort.signal, timeoutMs };
    const now = new Date();
    try {
      const lease = await this.client.get(name, namespace, call);
      if (!lease) {
        const spec: LeaseSpec = {
          holderIdentity: identity,
          leaseDurationSeconds: this.leaseDurationSeconds,
          acquireTime: formatMicroTime(now),
          renewTime: formatMicroTime(now),
          leaseTransitions: 0,
        };
        this.observe(await this.client.create({ metadata: { name, namespace }, spec }, call));
        return 'held';
      }
      this.observe(lease);
      const old = lease.spec ?? {};
      const mine = old.holderIdentity === identity;
      if (old.holderIdentity && !mine && !this.observedExpired()) return 'other-holder';
      const spec: LeaseSpec = {
        holderIdentity: identity,
        leaseDurationSeconds: this.leaseDurationSeconds,
        acquireTime: mine && old.acquireTime ? old.acquireTime : formatMicroTime(now),
        renewTime: formatMicroTime(now),
        leaseTransitions: mine ? (old.leaseTransitions ?? 0) : (old.leaseTransitions ?? 0) + 1,
      };
      this.observe(await this.client.replace({ ...lease, spec }, call));
      return 'held';
    } catch (err) {
      if (!this.abort.signal.aborted && !isConflict(err) && !isAlreadyExists(err)) {
        this.log.warn({ err: errorMessage(err) }, 'lease read or write failed');
      }
      return 'failed';
    }
  }

  /** Record what the lease says; a new resourceVersion restarts the expiry clock. */
  private observe(lease: Lease): void {
    const version = lease.metadata?.resourceVersion ?? '';
    if (version === this.observedVersion) return;
    this.observedVersion = version;
    this.observedAt = Date.now();
    this.observedDurationSeconds = lease.spec?.leaseDurationSeconds ?? this.leaseDurationSeconds;
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      if (holder) this.safely('onNewLeader', () => this.options.onNewLeader?.(holder));
    }
  }

  private observedExpired(): boolean {
    return Date.now() > this.observedAt + this.observedDurationSeconds * 1000;
  }

  private startLeading(): void {
    this.leading = new AbortController();
    this.log.info('became leader');
    const signal = this.leading.signal;
    this.safely('onStartedLeading', () => this.options.onStartedLeading(signal));
  }

  private async stopLeading(): Promise<void> {
    if (!this.leading) return;
    this.leading.abort();
    this.leading = undefined;
    this.log.info('stopped leading');
    await this.safely('onStoppedLeading', () => this.options.onStoppedLeading?.());
  }

  /** Hand the lease back if we still hold it: empty holder, 1 s duration (client-go's release). */
  private async release(): Promise<void> {
    await this.stopLeading();
    const { namespace, name, identity } = this.options;
    const call = { timeoutMs: Math.max(1000, this.renewDeadlineMs / 2) };
    try {
      const lease = await this.client.get(name, namespace, call);
      if (!lease || lease.spec?.holderIdentity !== identity) return;
      const now = formatMicroTime(new Date());
      const spec: LeaseSpec = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: lease.spec.leaseTransitions ?? 0,
      };
      await this.client.replace({ ...lease, spec }, call);
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'could not release the lease; it expires on its own');
    }
  }

  private async safely(what: string, fn: () => void | Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, `${what} threw`);
    }
  }

  private async pause(ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, { signal: this.abort.signal });
    } catch {
      // stopped
    }
  }
}
