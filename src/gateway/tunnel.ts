// The `tunnel` subresource: `GET /apis/cluster.core.oam.dev/v1alpha1/clustergateways/<name>/tunnel`
// answers a ClusterGatewayTunnel object whose status is the proxy-server's status of that cluster's
// tunnel (agents, replicas, bytes, open streams, last error; proxy-server/tunnel-status.ts), got
// from a TunnelStatusSource (tunnel-source.ts). With `?watch=1` it streams watch events (ADDED,
// then MODIFIED per interval; ERROR with a Status if the source fails), the format kubectl and
// the console already read. The caller was authorized by server.ts (`get clustergateways/tunnel`).
//
// The hub apiserver does not count this subresource among its long-running requests, so it would
// cut a watch at its request timeout (60 s by default) mid-stream; a watch here ends cleanly first
// (maxWatchSeconds, default 50 s, or the caller's timeoutSeconds if shorter) and the reader opens
// the next one.
import type { ServerResponse } from 'node:http';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { type KubeStatus, kubeStatus, sendStatus } from './status.ts';
import type { TunnelStatus, TunnelStatusSource } from './tunnel-source.ts';
import { TunnelStatusError } from './tunnel-source.ts';
import { gatewayGroup, gatewayGroupVersion } from './types.ts';

export interface TunnelSubresourceOptions {
  /** left out: the subresource answers 503 (this gateway was not told where the proxy-server is) */
  source?: TunnelStatusSource;
  /** a watch ends after this long at most (default 50 s: under the apiserver's 60 s request timeout) */
  maxWatchSeconds?: number;
  log: Logger;
}

/** The object the subresource answers. */
export function tunnelObject(name: string, status: TunnelStatus): Record<string, unknown> {
  return {
    kind: 'ClusterGatewayTunnel',
    apiVersion: gatewayGroupVersion,
    metadata: { name },
    status,
  };
}

/** The Status a failed tunnel-status request stands for. */
export function statusForTunnelError(err: unknown, name: string): KubeStatus {
  const details = { name, group: gatewayGroup, kind: 'clustergateways' };
  if (err instanceof TunnelStatusError) {
    if (err.status === 404)
      return kubeStatus(404, `the tunnel of ${name} is not known: ${err.message}`, details);
    if (err.status === 429) return kubeStatus(429, err.message, details);
    // the proxy-server refusing the gateway's own credential is the gateway's problem, not the caller's
    return kubeStatus(503, `the tunnel status of ${name} is unavailable: ${err.message}`, details);
  }
  return kubeStatus(503, `the tunnel status of ${name} is unavailable: ${errorMessage(err)}`, details);
}

/** Answers GET clustergateways/<name>/tunnel (`watch`: streaming) for an authorized caller. */
export async function serveTunnel(
  opts: TunnelSubresourceOptions,
  res: ServerResponse,
  name: string,
  watch: boolean,
  params: URLSearchParams,
): Promise<void> {
  const source = opts.source;
  if (!source) {
    sendStatus(
      res,
      kubeStatus(
        503,
        `this gateway has no proxy-server to ask for tunnel status (start it with --connect-url)`,
      ),
    );
    return;
  }
  const ac = new AbortController();
  res.once('close', () => ac.abort());
  if (!watch) {
    try {
      const status = await source.get(name, AbortSignal.any([ac.signal, AbortSignal.timeout(15_000)]));
      const body = JSON.stringify(tunnelObject(name, status));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } catch (err) {
      if (!res.headersSent) sendStatus(res, statusForTunnelError(err, name));
    }
    return;
  }
  const requested = Number(params.get('timeoutSeconds'));
  const maxSeconds = opts.maxWatchSeconds ?? 50;
  const seconds = Number.isFinite(requested) && requested > 0 ? Math.min(requested, maxSeconds) : maxSeconds;
  const timer = setTimeout(() => ac.abort(), seconds * 1000);
  let sent = 0;
  try {
    await source.watch(
      name,
      (status) => {
        if (!res.headersSent)
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        // a reader that does not keep up skips samples instead of queueing them
        if (res.writableNeedDrain) return;
        const type = sent++ === 0 ? 'ADDED' : 'MODIFIED';
        res.write(`${JSON.stringify({ type, object: tunnelObject(name, status) })}\n`);
      },
      ac.signal,
    );
    if (!res.headersSent)
      sendStatus(res, statusForTunnelError(new Error('the proxy-server sent no status'), name));
    else res.end();
  } catch (err) {
    if (!res.headersSent) sendStatus(res, statusForTunnelError(err, name));
    else {
      opts.log.debug({ cluster: name, err: errorMessage(err) }, 'tunnel watch failed');
      res.end(`${JSON.stringify({ type: 'ERROR', object: statusForTunnelError(err, name) })}\n`);
    }
  } finally {
    clearTimeout(timer);
  }
}
