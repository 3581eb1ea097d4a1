// Health of each ClusterGateway: healthy when the cluster's apiserver answers `/healthz` with `ok`
// through the same path proxied requests take (for ClusterProxy: the agent holds a tunnel). Probed
// when a gateway appears, every intervalMs after, on demand for the `health` subresource, and
// marked unhealthy at once when a proxied request finds no tunnel. Results land in the store's
// status.healthy (watchers see MODIFIED).
import { errorMessage, TetherError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { ClusterGatewayStore } from './store.ts';
import { HealthyReason } from './types.ts';
import { credentialHeaders, MissingCaError, type UpstreamPools, upstreamBasePath } from './upstream.ts';

export interface HealthResult {
  healthy: boolean;
  reason?: string;
  message?: string;
}

export interface HealthMonitorOptions {
  store: ClusterGatewayStore;
  pools: UpstreamPools;
  /** probe every gateway this often (default 10 s; 0 = only on demand and on changes) */
  intervalMs?: number;
  /** one probe's deadline (default 5 s) */
  timeoutMs?: number;
  /** probes at once (default 16) */
  concurrency?: number;
  log: Logger;
}

/** The unhealthy reason an upstream failure stands for. */
export function reasonForError(err: unknown): string {
  const code = err instanceof TetherError ? err.code : (err as { code?: string })?.code;
  if (err instanceof MissingCaError) return HealthyReason.MissingCA;
  if (code === 'TETHER_NO_AGENT') return HealthyReason.NoTunnel;
  if (code === 'TETHER_DIAL_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'TETHER_TIMEOUT')
    return HealthyReason.ConnectionTimeout;
  if (err instanceof Error && err.name === 'TimeoutError') return HealthyReason.ConnectionTimeout;
  return HealthyReason.ConnectionFailed;
}

export class HealthMonitor {
  private readonly opts: HealthMonitorOptions;
  private timer?: NodeJS.Timeout;
  private readonly inflight = new Map<string, Promise<HealthResult>>();
  private readonly queued = new Set<string>();
  private running = 0;
  private unsubscribe?: () => void;
  private stopped = false;

  constructor(opts: HealthMonitorOptions) {
    this.opts = opts;
  }

  start(): void {
    const sub = this.opts.store.subscribe(this.opts.store.resourceVersion, (e) => {
      if (e.type === 'ADDED') this.schedule(e.object.metadata.name ?? '');
    });
    if (sub !== 'expired') this.unsubscribe = sub.unsubscribe;
    for (const name of this.opts.store.names()) this.schedule(name);
    const interval = this.opts.intervalMs ?? 10_000;
    if (interval > 0) {
      this.timer = setInterval(() => {
        for (const name of this.opts.store.names()) this.schedule(name);
      }, interval);
      this.timer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.unsubscribe?.();
  }

  /** A proxied request could not reach the cluster: record it now, probe again soon. */
  reportFailure(cluster: string, err: unknown): void {
    this.opts.store.setHealth(cluster, false, reasonForError(err));
  }

  /** Probes one cluster now (shared with a probe already running) and records the result. */
  probe(cluster: string): Promise<HealthResult> {
    const running = this.inflight.get(cluster);
    if (running) return running;
    const p = this.check(cluster)
      .then((r) => {
        if (this.opts.store.get(cluster)) this.opts.store.setHealth(cluster, r.healthy, r.reason);
        return r;
      })
      .finally(() => this.inflight.delete(cluster));
    this.inflight.set(cluster, p);
    return p;
  }

  private schedule(cluster: string): void {
    if (!cluster || this.stopped) return;
    this.queued.add(cluster);
    this.drain();
  }

  private drain(): void {
    const max = this.opts.concurrency ?? 16;
    while (this.running < max && this.queued.size > 0 && !this.stopped) {
      const next = this.queued.values().next().value as string;
      this.queued.delete(next);
      this.running++;
      void this.probe(next).finally(() => {
        this.running--;
        this.drain();
      });
    }
  }

  private async check(cluster: string): Promise<HealthResult> {
    const up = this.opts.store.upstream(cluster);
    if (!up)
      return { healthy: false, reason: HealthyReason.Unknown, message: `no ClusterGateway ${cluster}` };
    if (!up.caPem)
      return {
        healthy: false,
        reason: HealthyReason.MissingCA,
        message: new MissingCaError(cluster).message,
      };
    const timeoutMs = this.opts.timeoutMs ?? 5_000;
    try {
      const res = await this.opts.pools.pool(up).request({
        method: 'GET',
        path: `${upstreamBasePath(up)}/healthz`,
        headers: { ...credentialHeaders(up), accept: 'text/plain' },
        headersTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const body = (await res.body.text()).trim();
      if (res.statusCode === 200 && body === 'ok') return { healthy: true };
      return {
        healthy: false,
        reason: HealthyReason.HealthCheckFailed,
        message: `/healthz answered ${res.statusCode}: ${body.slice(0, 200)}`,
      };
    } catch (err) {
      this.opts.log.debug({ cluster, err: errorMessage(err) }, 'health probe failed');
      return { healthy: false, reason: reasonForError(err), message: errorMessage(err) };
    }
  }
}
