// HTTP/2 CONNECT on the proxy-server's CONNECT frontend (connect-frontend.ts routes TLS connections
// that chose `h2` by ALPN here). Each stream `:method CONNECT, :authority <cluster>:443` (or
// `<export>.<cluster>:<port>`) is one tunnel (RFC 9113 §8.5): answered 200 and then carrying the
// tunnel's bytes as DATA, or answered with the same status, `tether-reason` and `tether-error` the
// HTTP/1.1 path gives. A hub service opening many tunnels pays one TLS handshake for all of them.
//
// Same trust rules as HTTP/1.1: the frontend's openTunnel authenticates every stream from the
// connection's client certificate or the stream's `proxy-authorization`, authorizes it for the
// cluster and counts it against the caller's limits. What one connection may hold is bounded here:
// concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS), the flow-control windows (what the peer may
// send before we read: per stream, and per connection), header size, and a connection that carries
// no tunnel for idleTimeoutMs is closed (as HTTP/1.1 bounds the wait for a request's headers).
// Clients close a tunnel by ending it (END_STREAM); the frontend ends its side once the target has.
// A client that resets streams instead, faster than nghttp2's rapid-reset defence allows (a burst
// of 1 000, then 33 a second), loses the whole connection. gRPC calls (POST, application/grpc) are
// konnectivity's ProxyService (grpc-frontend.ts), under the same connection limits.
import {
  constants,
  createServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.ts';
import { setRelayBuffer } from '../tunnel/relay-buffer.ts';
import { countRelayed } from '../tunnel/relay-gc.ts';
import type { TunnelOutcome, TunnelRequest } from './connect-frontend.ts';
import { GrpcFrontend, type GrpcFrontendLimits, grpcTrailersOnly, isGrpcRequest } from './grpc-frontend.ts';
import { GrpcStatus, proxyMethodPath } from './konnectivity-packet.ts';

export interface H2ConnectLimits {
  /** tunnels one HTTP/2 connection may carry at once */
  maxConcurrentStreams: number;
  /** bytes a client may send on one tunnel before the frontend reads them */
  streamWindowBytes: number;
  /** … and on all tunnels of one connection together */
  connectionWindowBytes: number;
}

export const defaultH2ConnectLimits: H2ConnectLimits = {
  maxConcurrentStreams: 256,
  streamWindowBytes: 1024 * 1024,
  connectionWindowBytes: 16 * 1024 * 1024,
};

export interface H2ConnectOptions {
  open: (req: TunnelRequest) => Promise<TunnelOutcome>;
  limits?: Partial<H2ConnectLimits>;
  /** a connection with no open tunnel is closed after this long (ms) */
  idleTimeoutMs: number;
  maxHeaderBytes: number;
  /** konnectivity's gRPC ProxyService limits (grpc-frontend.ts) */
  grpc?: Partial<GrpcFrontendLimits>;
  log: Logger;
}

const {
  HTTP2_HEADER_METHOD,
  HTTP2_HEADER_AUTHORITY,
  HTTP2_HEADER_STATUS,
  HTTP2_METHOD_CONNECT,
  NGHTTP2_CANCEL,
  NGHTTP2_CONNECT_ERROR,
} = constants;

export class H2ConnectServer {
  private readonly server: Http2Server;
  private readonly opts: H2ConnectOptions;
  readonly limits: H2ConnectLimits;
  private readonly sessions = new Set<Http2Session>();
  readonly grpc: GrpcFrontend;

  constructor(opts: H2ConnectOptions) {
    this.opts = opts;
    this.grpc = new GrpcFrontend({ open: opts.open, limits: opts.grpc, log: opts.log });
    this.limits = { ...defaultH2ConnectLimits, ...opts.limits };
    this.server = createServer({
      // node's default (10 MB) is below the connection window: a client whose tunnels have that much
      // unread would get new streams refused before flow control ever held it back
      maxSessionMemory: Math.ceil((2 * this.limits.connectionWindowBytes) / (1024 * 1024)),
      maxHeaderListPairs: 64,
      maxSendHeaderBlockLength: opts.maxHeaderBytes,
      settings: {
        maxConcurrentStreams: this.limits.maxConcurrentStreams,
        initialWindowSize: this.limits.streamWindowBytes,
        maxHeaderListSize: opts.maxHeaderBytes,
        enableConnectProtocol: false,
      },
    });
    this.server.on('session', (session: Http2Session) => this.track(session));
    this.server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      stream.on('error', () => {});
      this.onStream(stream, headers).catch((err: Error) => {
        opts.log.warn({ err: err.message }, 'HTTP/2 CONNECT failed');
        this.answer(stream, 500, 'internal error');
      });
    });
  }

  /** Serves HTTP/2 on a TLS connection whose ALPN chose h2. */
  accept(socket: TLSSocket): void {
    this.server.emit('connection', socket);
  }

  private track(session: Http2Session): void {
    this.sessions.add(session);
    session.on('error', () => {});
    session.once('close', () => this.sessions.delete(session));
    session.once('connect', () => {
      try {
        session.setLocalWindowSize(this.limits.connectionWindowBytes);
      } catch {}
    });
    let open = 0;
    session.on('stream', (stream: ServerHttp2Stream) => {
      open++;
      stream.once('close', () => open--);
    });
    // Inactivity with no tunnel open closes the connection; an idle tunnel keeps it.
    session.setTimeout(this.opts.idleTimeoutMs, () => {
      if (open === 0) session.close();
    });
  }

  private answer(
    stream: ServerHttp2Stream,
    status: number,
    reason: string,
    headers: Record<string, string> = {},
  ): void {
    if (stream.destroyed || stream.headersSent) return;
    stream.respond(
      {
        [HTTP2_HEADER_STATUS]: status,
        'tether-reason': reason.replace(/[\r\n]/g, ' ').slice(0, 500),
        ...headers,
      },
      { endStream: true },
    );
  }

  private async onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    if (isGrpcRequest(headers)) {
      if (headers[':path'] === proxyMethodPath) this.grpc.serve(stream, headers);
      else grpcTrailersOnly(stream, GrpcStatus.UNIMPLEMENTED, `only ${proxyMethodPath} is served here`);
      return;
    }
    if (headers[HTTP2_HEADER_METHOD] !== HTTP2_METHOD_CONNECT) {
      this.answer(stream, 405, 'only CONNECT <cluster>:443 is served here', { allow: 'CONNECT' });
      return;
    }
    const outcome = await this.opts.open({
      authority: String(headers[HTTP2_HEADER_AUTHORITY] ?? ''),
      tlsSocket: stream.session?.socket as TLSSocket,
      proxyAuthorization: headers['proxy-authorization'],
    });
    if ('refusal' in outcome) {
      const r = outcome.refusal;
      this.answer(stream, r.status, r.reason, r.headers);
      return;
    }
    const { upstream } = outcome;
    if (stream.destroyed || stream.closed) {
      upstream.destroy();
      return;
    }
    stream.respond({ [HTTP2_HEADER_STATUS]: 200 });
    upstream.on('error', () => {
      if (!stream.destroyed) stream.close(NGHTTP2_CONNECT_ERROR);
    });
    stream.once('close', () => upstream.destroy());
    // The target closed: finish the stream (END_STREAM after what is still queued), unless the
    // client's side is still sending, which a reset stops.
    upstream.once('close', () => {
      if (!stream.destroyed && !stream.writableEnded) stream.close(NGHTTP2_CANCEL);
    });
    setRelayBuffer(upstream);
    upstream.pipe(stream);
    stream.pipe(upstream);
    countRelayed(upstream, stream);
  }

  /** Closes every HTTP/2 connection. */
  stop(): void {
    for (const s of this.sessions) s.destroy();
    this.sessions.clear();
  }
}
