// The gateway speaks HTTP/2 and HTTP/1.1 on one port. The hub aggregator uses HTTP/2 towards an
// aggregated apiserver that offers it, so every request and watch it forwards shares one connection
// (no TLS handshake per watch); Upgrade requests (exec, attach, port-forward) and other clients
// use HTTP/1.1. Node's HTTP/2 compatibility objects stand in for IncomingMessage/ServerResponse
// everywhere in the gateway; these helpers cover the few places where the two differ.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { TLSSocket } from 'node:tls';

function http2Request(req: IncomingMessage): Http2ServerRequest | undefined {
  return req.httpVersionMajor === 2 ? (req as unknown as Http2ServerRequest) : undefined;
}

/** Request headers by lower-case name, every value kept apart; HTTP/2 pseudo-headers left out. */
export function distinctHeaders(req: IncomingMessage): Record<string, string[]> {
  if (!http2Request(req)) return req.headersDistinct as Record<string, string[]>;
  const out: Record<string, string[]> = {};
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (name.startsWith(':')) continue;
    const values = out[name];
    if (values) values.push(raw[i + 1] as string);
    else out[name] = [raw[i + 1] as string];
  }
  return out;
}

/** Whether a request carries a body (HTTP/2: its HEADERS frame did not end the stream). */
export function requestHasBody(req: IncomingMessage): boolean {
  const h2 = http2Request(req);
  if (h2) return !h2.stream.endAfterHeaders;
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Whether the response can no longer be written (the client went away or it was destroyed). */
export function responseGone(res: ServerResponse): boolean {
  const stream = (res as unknown as Partial<Http2ServerResponse>).stream;
  if (stream) return stream.closed || stream.destroyed;
  return res.destroyed || res.closed;
}

/**
 * The TLS connection a request came on, the same object for every request on it (HTTP/2: the
 * session's socket; `req.socket` there is a new wrapper per stream).
 */
export function connectionOf(req: IncomingMessage): TLSSocket {
  const h2 = http2Request(req);
  return (h2 ? h2.stream.session?.socket : req.socket) as TLSSocket;
}
