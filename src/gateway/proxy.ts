// The `proxy` subresource: `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/<c>/proxy/<path>`
// becomes `<path>?<query>` on cluster <c>'s apiserver, any verb. The caller's Authorization,
// Impersonate-* and identity headers never leave the gateway; the cluster's credential goes in
// instead, plus Impersonate-User/-Group of the hub caller under the `cluster:hub:` prefix
// (identity.ts) unless the gateway runs in shared mode and the ClusterGateway does not ask for it.
// The user-server (user-server.ts) reuses this forwarding with `passthrough`: the caller's
// Authorization and Impersonate-* go through and nothing of the gateway's is added. Responses stream through as bytes arrive (watch, logs -f):
// no buffering and no deadline once headers are in. Upgrade requests (SPDY/3.1, WebSocket) are
// upgrade.ts's.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Caller } from './front-proxy.ts';
import type { HealthMonitor } from './health.ts';
import { distinctHeaders, requestHasBody, responseGone } from './http.ts';
import { type GatewayIdentityMode, impersonationHeaders } from './identity.ts';
import type { GatewayMetrics } from './metrics.ts';
import { sendStatus, statusForUpstreamError } from './status.ts';
import type { Upstream } from './store.ts';
import { credentialHeaders, type UpstreamPools, upstreamBasePath } from './upstream.ts';

export interface ProxyContext {
  pools: UpstreamPools;
  health: HealthMonitor;
  metrics: GatewayMetrics;
  /** impersonate the (prefixed) hub caller on every cluster, or only where the ClusterGateway asks */
  identityMode: GatewayIdentityMode;
  /** identity headers of the front proxy (stripped) */
  identity: { names: Set<string>; prefixes: string[] };
  /**
   * the caller's Authorization and Impersonate-* go upstream unchanged and the gateway adds neither
   * credential nor impersonation (the user-server); default false
   */
  passthrough?: boolean;
  log: Logger;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'expect',
]);

/** Long-running kind of a proxied request (for metrics), or undefined for ordinary ones. */
export function longRunningKind(method: string, path: string, query: URLSearchParams): string | undefined {
  if (method === 'GET' && (/^(true|1)$/.test(query.get('watch') ?? '') || path.includes('/watch/')))
    return 'watch';
  if (/^(true|1)$/.test(query.get('follow') ?? '')) return 'follow';
  return undefined;
}

/** The headers to send upstream: the caller's, minus hop-by-hop, credentials and identity; plus ours. */
export function upstreamHeaders(
  incoming: Record<string, string[] | undefined>,
  up: Upstream,
  caller: Caller,
  ctx: Pick<ProxyContext, 'identityMode' | 'identity' | 'passthrough'>,
  upgrade: boolean,
): Record<string, string | string[]> {
  const listedInConnection = new Set(
    (incoming.connection ?? []).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase()),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, values] of Object.entries(incoming)) {
    if (!values) continue;
    if (HOP_BY_HOP.has(name) || listedInConnection.has(name)) continue;
    if (!ctx.passthrough && (name === 'authorization' || name.startsWith('impersonate-'))) continue;
    if (ctx.identity.names.has(name) || ctx.identity.prefixes.some((p) => name.startsWith(p))) continue;
    out[name] = values.length === 1 ? (values[0] as string) : values;
  }
  if (upgrade) {
    out.connection = 'Upgrade';
    out.upgrade = incoming.upgrade?.join(', ') ?? '';
  }
  if (ctx.passthrough) return out;
  Object.assign(out, credentialHeaders(up));
  if (ctx.identityMode === 'impersonate' || up.impersonate) {
    Object.assign(out, impersonationHeaders(caller));
  }
  return out;
}

function verbLabel(method: string, longRunning: string | undefined): string {
  return longRunning === 'watch' ? 'WATCH' : method;
}

const RETRYABLE = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_CLOSED']);

/** Forwards one ordinary (non-Upgrade) request. */
export async function proxyRequest(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
  up: Upstream,
  caller: Caller,
  path: string,
  query: string,
  params: URLSearchParams = new URLSearchParams(query),
): Promise<void> {
  const method = req.method ?? 'GET';
  const longRunning = longRunningKind(method, path, params);
  const verb = verbLabel(method, longRunning);
  const cluster = up.cluster;
  const started = process.hrtime.bigint();
  const abort = new AbortController();
  // The upstream request is cancelled when the caller goes away before the upstream body has ended
  // (a watch the client closed). Not `res.writableFinished`: HTTP/2 responses report finished on
  // any close, also a reset by the client.
  let upstreamEnded = false;
  const onClose = (): void => {
    if (!upstreamEnded) abort.abort();
  };
  res.once('close', onClose);
  const hasBody = requestHasBody(req);
  const options: Dispatcher.RequestOptions = {
    method: method as Dispatcher.HttpMethod,
    path: `${upstreamBasePath(up)}${path}${query ? `?${query}` : ''}`,
    headers: upstreamHeaders(distinctHeaders(req), up, caller, ctx, false),
    body: hasBody ? req : null,
    signal: abort.signal,
  };
  let response: Dispatcher.ResponseData;
  try {
    try {
      response = await ctx.pools.pool(up).request(options);
    } catch (err) {
      // A pooled connection the upstream closed a moment ago: once more on a fresh one.
      const code = (err as { code?: string }).code ?? '';
      if (hasBody || abort.signal.aborted || !RETRYABLE.has(code)) throw err;
      response = await ctx.pools.pool(up).request(options);
    }
  } catch (err) {
    if (abort.signal.aborted) return;
    const status = statusForUpstreamError(err, cluster);
    if (status.code === 503 || status.code === 504) ctx.health.reportFailure(cluster, err);
    ctx.log.debug({ cluster, method, path, err: errorMessage(err) }, 'upstream request failed');
    ctx.metrics.requests.inc({ cluster, verb, code: String(status.code) });
    if (!hasBody) req.resume();
    sendStatus(res, status);
    return;
  }
  ctx.metrics.latency.observe({ cluster, verb }, Number(process.hrtime.bigint() - started) / 1e9);
  ctx.metrics.requests.inc({ cluster, verb, code: String(response.statusCode) });
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    headers[name] = value;
  }
  res.writeHead(response.statusCode, headers);
  let gauge: { dec(): void } | undefined;
  if (longRunning) {
    // Let the client see the watch is established before the first event.
    res.flushHeaders();
    const g = ctx.metrics.longRunning.labels({ cluster, kind: longRunning });
    g.inc();
    gauge = g;
  }
  try {
    // A plain pipe (stream.pipeline's per-call AbortController showed in profiles): the body ends
    // the response; a failed body destroys it; a client gone early aborts the upstream (onClose).
    const body = response.body;
    body.once('end', () => {
      upstreamEnded = true;
    });
    body.on('error', () => res.destroy());
    if (responseGone(res)) body.destroy();
    else {
      await new Promise<void>((resolve) => {
        res.once('close', resolve);
        body.pipe(res);
      });
    }
  } finally {
    gauge?.dec();
    res.off('close', onClose);
  }
}
