// The gateway's listening socket: one TLS port serving HTTP/2 (the hub aggregator: every request
// and watch on one connection) and HTTP/1.1 (Upgrades: exec, attach, port-forward; other clients),
// with the connection limits and idle timeouts of both, and a stop that cuts open watches.
// What is served on it (authentication, routes) is server.ts's.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  type SecureServerOptions,
  type ServerHttp2Session,
} from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.ts';

/** Concurrent streams one HTTP/2 client connection may open (kube-apiserver's own default). */
export const http2MaxStreamsPerConnection = 1000;
/** An HTTP/2 connection with no open stream for this long is closed (as idle HTTP/1.1 ones are). */
export const http2IdleTimeoutMs = 120_000;
/**
 * Buffered bytes per HTTP/2 connection (MB) before new streams are refused: room for
 * maxConcurrentStreams watches with full windows.
 */
const http2MaxSessionMemoryMb = 128;

const http1Timeouts = {
  // Longer than the aggregator's idle timeout (90 s), so it is the side that closes idle connections.
  keepAliveTimeout: 120_000,
  headersTimeout: 60_000,
  requestTimeout: 0,
};

/** Closes `session` once it has had no open stream for `idleMs`. */
function closeWhenIdle(session: ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    timer = setTimeout(() => session.close(), idleMs);
    timer.unref();
  };
  session.on('stream', (stream) => {
    open++;
    clearTimeout(timer);
    stream.once('close', () => {
      open--;
      if (open === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once('close', () => clearTimeout(timer));
  arm();
}

export interface GatewayListenerOptions {
  tls: { certPem: string; keyPem: string };
  /** CA of the front-proxy client certificates the aggregator presents; none = no client certificates asked */
  clientCaPem?: string;
  onRequest(req: IncomingMessage, res: ServerResponse): void;
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  log: Logger;
}

export interface GatewayListener {
  /** replaces the client CA (the front-proxy CA rotated); open connections keep theirs */
  setClientCa(caPem: string): void;
  listen(port: number, host: string): Promise<number>;
  /** stops accepting and destroys every connection, open watches included */
  close(): Promise<void>;
}

export function createGatewayListener(opts: GatewayListenerOptions): GatewayListener {
  const server: Http2SecureServer = createSecureServer({
    cert: opts.tls.certPem,
    key: opts.tls.keyPem,
    ...(opts.clientCaPem ? { ca: opts.clientCaPem, requestCert: true } : { requestCert: false }),
    // Checked per request: only the front proxy is served, with a Status body for everyone else.
    rejectUnauthorized: false,
    allowHTTP1: true,
    // Node takes the http.Server timeouts here (its typings do not list them yet).
    http1Options: http1Timeouts as SecureServerOptions['http1Options'],
    settings: { maxConcurrentStreams: http2MaxStreamsPerConnection },
    maxSessionMemory: http2MaxSessionMemoryMb,
  });
  // Strict HTTP/1.1 parsing whatever NODE_OPTIONS says: Node reads this from the server object (not
  // from http1Options) and otherwise falls back to the process-wide --insecure-http-parser.
  (server as Http2SecureServer & { insecureHTTPParser?: boolean }).insecureHTTPParser = false;
  const sockets = new Set<Socket>();
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    closeWhenIdle(session, http2IdleTimeoutMs);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('request', opts.onRequest);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    opts.onUpgrade(req, socket, head);
  });
  // The front-proxy check reads a connection's client certificate once (peerCommonNames): no
  // renegotiation may swap it afterwards.
  server.on('secureConnection', (s: TLSSocket) => {
    s.disableRenegotiation();
    // The TLS socket is what holds the connection once the handshake is done: close() destroys it.
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', (err) => opts.log.debug({ err: err.message }, 'TLS handshake failed'));
  return {
    setClientCa(caPem) {
      server.setSecureContext({ cert: opts.tls.certPem, key: opts.tls.keyPem, ca: caPem });
    },
    listen(port, host) {
      return new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    async close() {
      const closed = new Promise<void>((r) => server.close(() => r()));
      // A graceful HTTP/2 close would wait for every open stream (watches): cut them.
      for (const session of sessions) session.destroy();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
