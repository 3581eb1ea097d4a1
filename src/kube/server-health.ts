// Whether one apiserver can be reached, shared by every informer of the process that talks to it.
//
// Without this, each informer backs off on its own after a connection drops: after a forward-proxy
// or apiserver outage the informers sit in up to 30 s of backoff while the server is long back. Here
// the clients of one server (keyed by server URL and forward proxy) share one state:
//   - a connectivity failure (connectivity-errors.ts) marks the server unreachable and returns a
//     delay from the shared ServerBackoff; while unreachable, a cheap probe (server-probe.ts) runs
//     every probeIntervalMs, growing to probeMaxIntervalMs;
//   - any success (a list, a watch that starts, any watch event, a probe) marks it reachable,
//     resets the shared backoff and wakes every client waiting in backoff, so they retry at once.
// Errors that carry an HTTP status never make a server unreachable: they are about one request
// (a 4xx still proves the server answers; a 5xx may come from a proxy in front of it).
// This module owns no requests but the probe; informers decide what to retry.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Logger, logger } from '../log.ts';
import { httpStatusOf, isConnectivityError } from './connectivity-errors.ts';
import { ServerBackoff, withJitter } from './server-backoff.ts';
import { probeServer } from './server-probe.ts';

/** Defaults, all explicit: the shared backoff and the probe schedule while a server is unreachable. */
export const SERVER_HEALTH_DEFAULTS = {
  backoffBaseMs: 500,
  backoffMaxMs: 30_000,
  probeIntervalMs: 500,
  probeMaxIntervalMs: 1_000,
  probeTimeoutMs: 2_000,
  maxProbesInFlight: 3,
  minRetryMs: 250,
} as const;

export interface ServerHealthOptions {
  /** shared delay after the first failed round (default 500 ms), doubling per round */
  backoffBaseMs?: number;
  /** cap of the shared delay (default 30 s) */
  backoffMaxMs?: number;
  /** first probe this long after the server became unreachable (default 500 ms), doubling */
  probeIntervalMs?: number;
  /** cap of the probe interval (default 1 s): recovery is noticed within about this */
  probeMaxIntervalMs?: number;
  /** a probe with no answer after this long failed (default 2 s) */
  probeTimeoutMs?: number;
  /**
   * probes start on schedule even while earlier ones hang (a black hole answers nothing until its
   * timeout), up to this many at once (default 3)
   */
  maxProbesInFlight?: number;
  /** a woken client still waits this long after its own failure (default 250 ms): no retry storm */
  minRetryMs?: number;
  /** true when the server answered; null: never probe (only client successes bring it back) */
  probe: ((signal: AbortSignal) => Promise<boolean>) | null;
  /** for logs: the server URL */
  name?: string;
  log?: Logger;
  now?: () => number;
}

/** What a client got for a connectivity failure: how long to wait, and since which recovery. */
export interface RetryTicket {
  delayMs: number;
  failedAt: number;
  generation: number;
}

export type RetryWake = 'recovered' | 'elapsed' | 'aborted';

/** Called when the server is reachable again; `outageStartedAt` is when it was first seen down. */
export type RecoveryListener = (outageStartedAt: number) => void;

export class ServerHealth {
  private readonly backoff: ServerBackoff;
  private readonly options: ServerHealthOptions;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly listeners = new Set<RecoveryListener>();
  private unreachableSince: number | undefined;
  private recoveries = 0;
  private holders = 0;
  private probing = false;
  private probesInFlight = 0;

  constructor(options: ServerHealthOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.backoff = new ServerBackoff(
      {
        baseMs: options.backoffBaseMs ?? SERVER_HEALTH_DEFAULTS.backoffBaseMs,
        maxMs: options.backoffMaxMs ?? SERVER_HEALTH_DEFAULTS.backoffMaxMs,
      },
      this.now,
    );
    this.log = options.log ?? logger('server-health', { server: options.name });
  }

  get reachable(): boolean {
    return this.unreachableSince === undefined;
  }

  /** When the current outage was first seen; undefined while reachable. */
  get outageStartedAt(): number | undefined {
    return this.unreachableSince;
  }

  /** Failed rounds since the last success (for logs and tests). */
  get failedRounds(): number {
    return this.backoff.failedRounds;
  }

  /** A client uses this server: probes run only while someone does. Pair with release(). */
  retain(): void {
    this.holders++;
    if (!this.reachable) void this.probeWhileUnreachable();
  }

  release(): void {
    this.holders = Math.max(0, this.holders - 1);
  }

  get holderCount(): number {
    return this.holders;
  }

  /** Some request to the server succeeded. Cheap when the server was reachable already. */
  reportSuccess(): void {
    this.backoff.reset();
    const since = this.unreachableSince;
    if (since === undefined) return;
    this.unreachableSince = undefined;
    this.recoveries++;
    this.log.info({ downMs: this.now() - since }, 'apiserver reachable again: waking its clients');
    for (const listener of [...this.listeners]) {
      try {
        listener(since);
      } catch (err) {
        this.log.error({ err: String(err) }, 'recovery listener threw');
      }
    }
  }

  /**
   * A request failed. For a connectivity failure: the server is unreachable, probes start, and
   * the ticket says how long to wait (see waitForRetry). Undefined for any other error; one the
   * server itself answered (a 4xx status) proves it reachable, like a success.
   */
  reportFailure(err: unknown): RetryTicket | undefined {
    const status = httpStatusOf(err);
    if (status !== undefined && status < 500) this.reportSuccess();
    if (!isConnectivityError(err)) return undefined;
    const now = this.now();
    if (this.unreachableSince === undefined) {
      this.unreachableSince = now;
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'apiserver unreachable');
    }
    const ticket = { delayMs: withJitter(this.backoff.fail()), failedAt: now, generation: this.recoveries };
    if (this.holders > 0) void this.probeWhileUnreachable();
    return ticket;
  }

  /**
   * Wait out a ticket's delay (capped at maxDelayMs), or less: resolves 'recovered' as soon as
   * the server is reachable again (at least minRetryMs after the failure), also when it already
   * was between the failure and this call.
   */
  waitForRetry(ticket: RetryTicket, signal: AbortSignal, maxDelayMs = Infinity): Promise<RetryWake> {
    if (signal.aborted) return Promise.resolve('aborted');
    const delayMs = Math.min(ticket.delayMs, maxDelayMs);
    const floorMs = Math.min(delayMs, this.options.minRetryMs ?? SERVER_HEALTH_DEFAULTS.minRetryMs);
    return new Promise((resolve) => {
      const timers: NodeJS.Timeout[] = [];
      const finish = (wake: RetryWake) => {
        for (const t of timers) clearTimeout(t);
        this.listeners.delete(onRecovered);
        signal.removeEventListener('abort', onAbort);
        resolve(wake);
      };
      const onRecovered = () => {
        this.listeners.delete(onRecovered);
        const left = floorMs - (this.now() - ticket.failedAt);
        if (left <= 0) finish('recovered');
        else timers.push(setTimeout(() => finish('recovered'), left));
      };
      const onAbort = () => finish('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      timers.push(setTimeout(() => finish('elapsed'), delayMs));
      if (this.recoveries !== ticket.generation) onRecovered();
      else this.listeners.add(onRecovered);
    });
  }

  /** Listen for recoveries (unreachable → reachable); returns a function that stops listening. */
  onRecovered(listener: RecoveryListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async probeWhileUnreachable(): Promise<void> {
    const probe = this.options.probe;
    if (this.probing || !probe) return;
    this.probing = true;
    const timeoutMs = this.options.probeTimeoutMs ?? SERVER_HEALTH_DEFAULTS.probeTimeoutMs;
    const maxIntervalMs = this.options.probeMaxIntervalMs ?? SERVER_HEALTH_DEFAULTS.probeMaxIntervalMs;
    const maxInFlight = this.options.maxProbesInFlight ?? SERVER_HEALTH_DEFAULTS.maxProbesInFlight;
    let intervalMs = this.options.probeIntervalMs ?? SERVER_HEALTH_DEFAULTS.probeIntervalMs;
    try {
      while (!this.reachable && this.holders > 0) {
        // Unref'd: a probe alone never keeps the process alive.
        await sleep(intervalMs, undefined, { ref: false });
        if (this.reachable || this.holders === 0) break;
        intervalMs = Math.min(intervalMs * 2, maxIntervalMs);
        if (this.probesInFlight >= maxInFlight) continue;
        this.probesInFlight++;
        void probe(AbortSignal.timeout(timeoutMs))
          .catch(() => false)
          .then((answered) => {
            this.probesInFlight--;
            if (answered) this.reportSuccess();
          });
      }
    } finally {
      this.probing = false;
    }
  }
}

interface SharedEntry {
  health: ServerHealth;
  kubeconfig: KubeConfig;
}

/** One ServerHealth per server (and forward proxy) in use; entries go when their last holder releases. */
const shared = new Map<string, SharedEntry>();

/** The identity of a server for sharing: its URL and the forward proxy in front of it. */
export function serverKey(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  return `${cluster?.server ?? ''} ${cluster?.proxyUrl ?? ''}`;
}

/**
 * The process-wide ServerHealth of `kc`'s server, retained: call the returned release() when done
 * (the informer does this on stop). Probes use the most recently acquired kubeconfig's identity.
 */
export function acquireServerHealth(kc: KubeConfig): { health: ServerHealth; release: () => void } {
  const key = serverKey(kc);
  let entry = shared.get(key);
  if (!entry) {
    const server = kc.getCurrentCluster()?.server;
    const created: SharedEntry = {
      kubeconfig: kc,
      health: new ServerHealth({ name: server, probe: (signal) => probeServer(created.kubeconfig, signal) }),
    };
    entry = created;
    shared.set(key, entry);
  }
  entry.kubeconfig = kc;
  const { health } = entry;
  health.retain();
  let released = false;
  return {
    health,
    release: () => {
      if (released) return;
      released = true;
      health.release();
      if (health.holderCount === 0 && shared.get(key)?.health === health) shared.delete(key);
    },
  };
}

/**
 * The shared ServerHealth of `kc`'s server if some informer holds one, without retaining it: for
 * other clients of the server (ResourceClient) to report their successes and failures to.
 */
export function peekServerHealth(kc: KubeConfig): ServerHealth | undefined {
  return shared.size === 0 ? undefined : shared.get(serverKey(kc))?.health;
}

/** For tests: how many servers are tracked now. */
export function sharedServerHealthCount(): number {
  return shared.size;
}
