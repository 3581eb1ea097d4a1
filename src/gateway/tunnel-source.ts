// Where the gateway's `tunnel` subresource gets a cluster's tunnel status from: the proxy-server's
// `GET /tunnels/<cluster>` on its CONNECT frontend (proxy-server/tunnel-status.ts), asked with the
// same proxy-client certificate or hub token the gateway's dialer uses (dialers.ts), or, when the
// gateway runs in-process with the ProxyServer, that server's own tunnelStatus(). Either way the
// gateway adds no credential and no rights: the proxy-server admits it exactly as it admits the
// gateway's CONNECTs. Bounded: answer size, watch line size, connect/answer deadline.
//
// The proxy-server counts the gateway as one caller with a few watches (tunnel-status.ts), however
// many viewers it serves: sharedTunnelWatches makes that one watch per cluster, shared by every
// viewer of that cluster's tunnel, opened by the first and closed after the last.
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { TunnelStatus } from '../proxy-server/tunnel-status.ts';
import type { ConnectFrontendDialerOptions } from './dialers.ts';

export type { TunnelStatus };

/** A tunnel status could not be had: `status` is the proxy-server's HTTP status (0: not reached). */
export class TunnelStatusError extends Error {
  override name = 'TunnelStatusError';
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface TunnelStatusSource {
  /** the tunnel of `cluster` now */
  get(cluster: string, signal: AbortSignal): Promise<TunnelStatus>;
  /**
   * `onStatus` with the tunnel of `cluster` now and then every interval; resolves when the source
   * ends the stream or `signal` aborts, rejects with a TunnelStatusError when it cannot start.
   */
  watch(cluster: string, onStatus: (status: TunnelStatus) => void, signal: AbortSignal): Promise<void>;
}

/** A status answer larger than this is refused (one cluster's tunnel: a few KiB). */
const MAX_STATUS_BYTES = 1024 * 1024;

/** The tunnel status of an in-process ProxyServer, a watch sampling it every `intervalMs`. */
export function inProcessTunnelStatus(
  server: { tunnelStatus(cluster: string): TunnelStatus | undefined },
  intervalMs = 2_000,
): TunnelStatusSource {
  const now = (cluster: string): TunnelStatus => {
    const status = server.tunnelStatus(cluster);
    if (!status)
      throw new TunnelStatusError(
        404,
        `no agent of cluster ${cluster} has connected to the proxy-server, and no dial to it failed`,
      );
    return status;
  };
  return {
    async get(cluster) {
      return now(cluster);
    },
    async watch(cluster, onStatus, signal) {
      onStatus(now(cluster));
      await new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          const status = server.tunnelStatus(cluster);
          if (!status) return stop();
          onStatus(status);
        }, intervalMs);
        const stop = (): void => {
          clearInterval(timer);
          resolve();
        };
        if (signal.aborted) stop();
        signal.addEventListener('abort', stop, { once: true });
      });
    },
  };
}

/** The proxy-server's tunnel status, asked on its CONNECT frontend with the dialer's credentials. */
export function connectFrontendTunnelStatus(opts: ConnectFrontendDialerOptions): TunnelStatusSource {
  const url = new URL(opts.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;

  const open = (cluster: string, watch: boolean, signal: AbortSignal): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest({
        host,
        port: Number(url.port || 443),
        path: `/tunnels/${encodeURIComponent(cluster)}${watch ? '?watch=1' : ''}`,
        method: 'GET',
        ca: opts.caPem,
        ...(opts.certPem && opts.keyPem ? { cert: opts.certPem, key: opts.keyPem } : {}),
        ...(isIP(host) ? {} : { servername: host }),
        headers: {
          accept: 'application/json',
          ...(opts.token ? { 'proxy-authorization': `Bearer ${opts.token}` } : {}),
        },
        agent: false,
        signal,
      });
      const deadline = setTimeout(
        () =>
          req.destroy(new TunnelStatusError(0, `proxy-server ${url.host} did not answer in ${timeoutMs} ms`)),
        timeoutMs,
      );
      req.once('response', (res) => {
        clearTimeout(deadline);
        if (res.statusCode === 200) return resolve(res);
        readBounded(res)
          .catch(() => '')
          .then((body) => {
            const reason = res.headers['tether-reason'];
            const why = typeof reason === 'string' ? reason : body.trim().slice(0, 500);
            reject(
              new TunnelStatusError(
                res.statusCode ?? 0,
                `proxy-server ${url.host}: ${res.statusCode} ${why}`,
              ),
            );
          });
      });
      req.once('error', (err) => {
        clearTimeout(deadline);
        reject(
          err instanceof TunnelStatusError
            ? err
            : new TunnelStatusError(0, `proxy-server ${url.host}: ${err.message}`),
        );
      });
      req.end();
    });

  return {
    async get(cluster, signal) {
      const res = await open(cluster, false, signal);
      return parseStatus(await readBounded(res));
    },
    async watch(cluster, onStatus, signal) {
      const res = await open(cluster, true, signal);
      let pending = '';
      await new Promise<void>((resolve, reject) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          pending += chunk;
          let nl = pending.indexOf('\n');
          while (nl >= 0) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            try {
              if (line.trim()) onStatus(parseStatus(line));
            } catch (err) {
              res.destroy();
              return reject(err);
            }
            nl = pending.indexOf('\n');
          }
          if (pending.length > MAX_STATUS_BYTES) {
            res.destroy();
            reject(
              new TunnelStatusError(
                502,
                `proxy-server ${url.host} sent a status line over ${MAX_STATUS_BYTES} bytes`,
              ),
            );
          }
        });
        res.once('end', () => resolve());
        // aborted by `signal` or the connection lost: the watch is over either way
        res.once('close', () => resolve());
        res.once('error', () => resolve());
      });
    },
  };
}

function readBounded(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > MAX_STATUS_BYTES) {
        res.destroy();
        reject(new TunnelStatusError(502, `tunnel status over ${MAX_STATUS_BYTES} bytes`));
      }
    });
    res.once('end', () => resolve(body));
    res.once('error', reject);
  });
}

function parseStatus(text: string): TunnelStatus {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TunnelStatusError(502, `the proxy-server's tunnel status is not JSON: ${text.slice(0, 80)}`);
  }
  const s = value as Partial<TunnelStatus> | null;
  if (!s || typeof s.cluster !== 'string' || !Array.isArray(s.agents))
    throw new TunnelStatusError(502, 'the proxy-server answered something that is not a tunnel status');
  return s as TunnelStatus;
}

interface SharedWatch {
  controller: AbortController;
  last?: TunnelStatus;
  viewers: Set<{ onStatus: (status: TunnelStatus) => void; end: (err?: unknown) => void }>;
}

/** `source` with one watch per cluster at a time, its statuses fanned out to every watcher. */
export function sharedTunnelWatches(source: TunnelStatusSource): TunnelStatusSource {
  const watches = new Map<string, SharedWatch>();
  const open = (cluster: string): SharedWatch => {
    const shared: SharedWatch = { controller: new AbortController(), viewers: new Set() };
    watches.set(cluster, shared);
    const finish = (err?: unknown): void => {
      if (watches.get(cluster) === shared) watches.delete(cluster);
      for (const v of [...shared.viewers]) v.end(err);
    };
    source
      .watch(
        cluster,
        (status) => {
          shared.last = status;
          for (const v of shared.viewers) v.onStatus(status);
        },
        shared.controller.signal,
      )
      .then(() => finish(), finish);
    return shared;
  };
  return {
    get: (cluster, signal) => source.get(cluster, signal),
    watch(cluster, onStatus, signal) {
      return new Promise<void>((resolve, reject) => {
        const shared = watches.get(cluster) ?? open(cluster);
        const viewer = {
          onStatus,
          end: (err?: unknown): void => {
            shared.viewers.delete(viewer);
            signal.removeEventListener('abort', leave);
            if (err) reject(err);
            else resolve();
          },
        };
        const leave = (): void => {
          viewer.end();
          if (shared.viewers.size === 0) {
            if (watches.get(cluster) === shared) watches.delete(cluster);
            shared.controller.abort();
          }
        };
        shared.viewers.add(viewer);
        if (signal.aborted) return leave();
        signal.addEventListener('abort', leave, { once: true });
        if (shared.last) onStatus(shared.last);
      });
    },
  };
}
