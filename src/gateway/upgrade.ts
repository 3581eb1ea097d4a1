// Upgrade requests (SPDY/3.1, WebSocket: exec, attach, port-forward) of the `proxy` subresource.
// Each gets an upstream connection of its own; the request goes out through Node's HTTP client, so
// the upstream's answer is framed by a real parser, never by guesswork. Nothing the caller sends
// after its request head reaches the upstream before the upstream answered 101: a refused upgrade
// (403, 404, …) is relayed and both connections closed, so bytes pipelined behind the request can
// never be read by the managed apiserver as a second request on the gateway's own connection
// (which a client certificate authenticates as the gateway itself). An Upgrade request carrying a
// body is refused: the body would otherwise travel as raw bytes after a head whose framing headers
// are hop-by-hop. After the 101, bytes are piped both ways with backpressure.
import {
  type ClientRequest,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { errorMessage } from '../errors.ts';
import type { Caller } from './front-proxy.ts';
import { distinctHeaders } from './http.ts';
import { type ProxyContext, upstreamHeaders } from './proxy.ts';
import { kubeStatus, sendStatusOnSocket, statusForUpstreamError } from './status.ts';
import type { Upstream } from './store.ts';
import { upstreamBasePath } from './upstream.ts';

/** Response headers not relayed as they were: the gateway frames what it relays itself. */
const RELAY_DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);

/** Whether an Upgrade request announces a body (an upgrade never has one). */
export function upgradeHasBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}

/** The raw head of a response, as received (header case kept), plus what the gateway adds. */
function responseHead(res: IncomingMessage, keep: (name: string) => boolean, extra = ''): string {
  let head = `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (keep(name.toLowerCase())) head += `${name}: ${raw[i + 1]}\r\n`;
  }
  return `${head}${extra}\r\n`;
}

/** Forwards an Upgrade request: its own upstream connection, then raw bytes both ways after a 101. */
export async function proxyUpgrade(
  ctx: ProxyContext,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  up: Upstream,
  caller: Caller,
  path: string,
  query: string,
): Promise<void> {
  const cluster = up.cluster;
  if (upgradeHasBody(req.headers)) {
    ctx.metrics.requests.inc({ cluster, verb: 'CONNECT', code: '400' });
    sendStatusOnSocket(client, kubeStatus(400, 'an Upgrade request carries no body'));
    return;
  }
  const started = process.hrtime.bigint();
  let upstream: TLSSocket;
  try {
    upstream = await ctx.pools.connect(up);
  } catch (err) {
    const status = statusForUpstreamError(err, cluster);
    if (status.code === 503 || status.code === 504) ctx.health.reportFailure(cluster, err);
    ctx.metrics.requests.inc({ cluster, verb: 'CONNECT', code: String(status.code) });
    sendStatusOnSocket(client, status);
    return;
  }
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  const headers = upstreamHeaders(distinctHeaders(req), up, caller, ctx, true);
  headers.host = up.url.host;
  let outgoing: ClientRequest;
  try {
    outgoing = httpRequest({
      createConnection: () => upstream,
      method: req.method ?? 'GET',
      path: `${upstreamBasePath(up)}${path}${query ? `?${query}` : ''}`,
      headers,
      setHost: false,
    });
  } catch (err) {
    // Node's client refuses a path or header value it could not send as one request.
    upstream.destroy();
    ctx.metrics.requests.inc({ cluster, verb: 'CONNECT', code: '400' });
    sendStatusOnSocket(client, kubeStatus(400, `cannot forward this request: ${errorMessage(err)}`));
    return;
  }
  const gauge = ctx.metrics.longRunning.labels({ cluster, kind: 'upgrade' });
  gauge.inc();
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    gauge.dec();
    upstream.destroy();
    client.destroy();
  };
  const answered = (code: number): void => {
    ctx.metrics.requests.inc({ cluster, verb: 'CONNECT', code: String(code) });
    ctx.metrics.latency.observe(
      { cluster, verb: 'CONNECT' },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
  };
  client.on('error', finish);
  client.once('close', finish);
  upstream.once('close', finish);
  outgoing.on('error', finish);
  outgoing.once('upgrade', (res: IncomingMessage, socket: Duplex, upstreamHead: Buffer) => {
    answered(101);
    socket.on('error', finish);
    client.write(responseHead(res, () => true));
    if (upstreamHead.length > 0) client.write(upstreamHead);
    // Only now may the caller's bytes reach the upstream: they belong to the upgraded protocol.
    if (head.length > 0) socket.write(head);
    // Half-close passes through: a peer that ends its side still receives the other's bytes.
    client.pipe(socket);
    socket.pipe(client);
  });
  outgoing.once('response', (res: IncomingMessage) => {
    // Refused: relay the answer (its body delimited by the close) and drop both connections.
    answered(res.statusCode ?? 502);
    upstream.off('close', finish);
    client.write(responseHead(res, (name) => !RELAY_DROPPED.has(name), 'connection: close\r\n'));
    res.on('error', finish);
    res.on('end', () => client.end(finish));
    res.pipe(client, { end: false });
  });
  outgoing.end();
}
