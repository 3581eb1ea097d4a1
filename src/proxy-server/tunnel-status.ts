// A read-only status of one cluster's tunnel on this proxy-server, for the gateway's
// `clustergateways/<name>/tunnel` subresource and the console's tunnel panel: the agents holding
// it (id, connected since, open streams each), this replica's serverId and the replica count,
// cumulative bytes from and to the cluster and streams opened (a reader computes rates from two
// samples), open streams, and the last error seen for the cluster (a failed dial, an agent gone silent).
//
// Served on the CONNECT frontend's own TLS port as a plain HTTP/1.1 `GET /tunnels/<cluster>`
// (`?watch=1`: one JSON line now and one per interval), to callers the frontend authenticates and
// authorizes exactly as it does a CONNECT to that cluster (connect-frontend.ts decides; this module
// only answers). Nothing here writes: the status is built from the ProxyServer's registry and
// counters at the moment it is asked. Limits: watches per caller and in total, and a watch ends
// after maxWatchSeconds (the reader opens another).
import type { ServerResponse } from 'node:http';
import { Counts } from './client-limits.ts';

export interface TunnelAgentStatus {
  agent: string;
  /** set when the agent holds the tunnel with an addon's identity (cluster-proxy) */
  addon?: string;
  remoteAddress: string;
  connectedSince: string;
  openStreams: number;
  /** the agent stopped answering PINGs; new dials avoid it */
  unresponsive: boolean;
}

export interface TunnelLastError {
  /** a TETHER_* code */
  code: string;
  message: string;
  time: string;
}

/** What `GET /tunnels/<cluster>` answers. */
export interface TunnelStatus {
  cluster: string;
  /** this replica's id */
  serverId: string;
  /** how many proxy-server replicas agents keep tunnels to */
  serverCount: number;
  agents: TunnelAgentStatus[];
  openStreams: number;
  /** streams opened since this proxy-server started (a reader computes streams per second) */
  streamsOpened: number;
  /** bytes since this proxy-server started (TLS payload, framing included) */
  bytesFromCluster: number;
  bytesToCluster: number;
  lastError?: TunnelLastError;
  /** when this status was taken */
  time: string;
}

/** The last error per cluster, bounded: the clusters least recently in error are forgotten first. */
export class TunnelErrorLog {
  private readonly byCluster = new Map<string, TunnelLastError>();
  private readonly maxClusters: number;
  constructor(maxClusters = 10_000) {
    this.maxClusters = maxClusters;
  }

  record(cluster: string, code: string, message: string): void {
    this.byCluster.delete(cluster);
    if (this.byCluster.size >= this.maxClusters)
      this.byCluster.delete(this.byCluster.keys().next().value as string);
    // a message is a peer's text at worst: one line, bounded
    const text = message.replace(/[\r\n]+/g, ' ').slice(0, 500);
    this.byCluster.set(cluster, { code, message: text, time: new Date().toISOString() });
  }

  get(cluster: string): TunnelLastError | undefined {
    return this.byCluster.get(cluster);
  }
}

export interface TunnelStatusLimits {
  /** between two lines of a watch (default 2 s) */
  intervalMs: number;
  /**
   * watches one caller may hold at once (default 100; a gateway holds one per cluster its viewers
   * look at, shared among them: gateway/tunnel-source.ts sharedTunnelWatches)
   */
  maxWatchesPerCaller: number;
  /** watches at once, all callers (default 1 000) */
  maxWatches: number;
  /** a watch ends after this long (default 600 s) */
  maxWatchSeconds: number;
}

export const defaultTunnelStatusLimits: TunnelStatusLimits = {
  intervalMs: 2_000,
  maxWatchesPerCaller: 100,
  maxWatches: 1_000,
  maxWatchSeconds: 600,
};

const TUNNELS_PREFIX = '/tunnels/';

/** The cluster a `GET /tunnels/<cluster>` path names, or undefined for any other path. */
export function tunnelStatusCluster(path: string): string | undefined {
  if (!path.startsWith(TUNNELS_PREFIX)) return undefined;
  const name = path.slice(TUNNELS_PREFIX.length);
  // a DNS-1123 label, as cluster names are: nothing to decode, no separators
  return /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name) ? name : undefined;
}

/** Whether a query string asks for a watch (`watch=1` or `watch=true`). */
export function wantsWatch(query: URLSearchParams): boolean {
  return /^(1|true)$/.test(query.get('watch') ?? '');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
    })
    .end(text);
}

/**
 * Answers tunnel-status requests of callers already authenticated and authorized for the cluster.
 * `status(cluster)` is undefined for a cluster this proxy-server has never seen.
 */
export class TunnelStatusEndpoint {
  readonly limits: TunnelStatusLimits;
  private readonly watches = new Counts();
  private total = 0;
  private readonly timers = new Set<NodeJS.Timeout>();

  private readonly status: (cluster: string) => TunnelStatus | undefined;

  constructor(
    status: (cluster: string) => TunnelStatus | undefined,
    limits: Partial<TunnelStatusLimits> = {},
  ) {
    this.status = status;
    this.limits = { ...defaultTunnelStatusLimits, ...limits };
  }

  serve(res: ServerResponse, caller: string, cluster: string, watch: boolean): void {
    const first = this.status(cluster);
    if (!first) {
      sendJson(res, 404, {
        error: 'NotFound',
        message: `no agent of cluster ${cluster} has connected to this proxy-server, and no dial to it failed`,
      });
      return;
    }
    if (!watch) {
      sendJson(res, 200, first);
      return;
    }
    const l = this.limits;
    if (this.total >= l.maxWatches || !this.watches.tryAdd(caller, l.maxWatchesPerCaller)) {
      res.setHeader('retry-after', '5');
      sendJson(res, 429, {
        error: 'TooManyRequests',
        message: `${caller} holds ${l.maxWatchesPerCaller} tunnel watches (or this proxy-server ${l.maxWatches}); close some first`,
      });
      return;
    }
    this.total++;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.write(`${JSON.stringify(first)}\n`);
    const started = Date.now();
    const timer = setInterval(() => {
      const next = this.status(cluster);
      if (!next || Date.now() - started >= l.maxWatchSeconds * 1000) {
        res.end();
        return;
      }
      // a reader that does not read gets no more lines queued behind the ones it has not taken
      if (res.writableNeedDrain) return;
      res.write(`${JSON.stringify(next)}\n`);
    }, l.intervalMs);
    this.timers.add(timer);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearInterval(timer);
      this.timers.delete(timer);
      this.watches.remove(caller);
      this.total--;
    };
    // the response closes with its connection: the reader went away
    res.once('close', finish);
  }

  /** Watches open now (for tests). */
  get openWatches(): number {
    return this.total;
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
  }
}
