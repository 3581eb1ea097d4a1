// HTTP CONNECT frontend of the proxy-server, for hub services that speak plain TCP/TLS:
//   CONNECT <cluster>:443                → that cluster's kube-apiserver (konnectivity's addressing)
//   CONNECT <export>.<cluster>:<port>    → a service the cluster's agent exports under that name
// Callers authenticate with a client certificate from the proxy-client CA (a CA distinct from the
// one that signs agent identities; without one, certificates are not accepted), or with
// `Proxy-Authorization: Bearer <hub token>` (TokenReview). Whatever the credential, every caller is
// then authorized per cluster (a SubjectAccessReview for `get managedclusters/proxy`), and
// managed-cluster identities (system:open-cluster-management:…) are refused outright. Per-client
// limits (client-limits.ts) keep one caller or address from starving the others. Errors map to
// statuses with a reason header (tether-reason) and, for a failed dial, the TETHER_* code
// (tether-error): an agent that stopped answering is 504 TETHER_AGENT_UNRESPONSIVE.
//
// Per connection it does only what it must (bench/tunnel.ts, frontend-* scenarios): TLS sessions
// resume from tickets (a client that keeps the `session` it was given and offers it on its next
// connection skips the certificate exchange and verification; the identity and verify result ride
// in the session, and sessions expire after SESSION_TIMEOUT_S); a certificate caller is looked up
// by its fingerprint (building the peer-certificate object costs ~60 µs, the fingerprint ~2 µs);
// AES-128-GCM is preferred where the CPU has AES instructions; the 200 answer is a prebuilt buffer.
//
// Two wire protocols on one port, chosen by ALPN: HTTP/1.1 CONNECT (one tunnel per TLS connection;
// clients that offer no ALPN get it), and HTTP/2 CONNECT (RFC 9113 §8.5: `:method CONNECT`,
// `:authority` the same address) for clients offering `h2`, which carry many tunnels over one TLS
// connection and so pay one handshake for all of them (connect-frontend-h2.ts). Both go through the
// same authentication, authorization and limits (openTunnel). On h2 connections, gRPC calls to
// konnectivity's ProxyService (grpc-frontend.ts) dial through openTunnel too.
//
// Besides CONNECT, HTTP/1.1 connections may `GET /tunnels/<cluster>`: a read-only status of that
// cluster's tunnel (tunnel-status.ts), to callers admitted exactly as a CONNECT to it would be.
import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  createServer as createTlsServer,
  DEFAULT_CIPHERS,
  type TLSSocket,
  type Server as TlsServer,
} from 'node:tls';
import { TetherError } from '../errors.ts';
import { type Logger, logger as makeLogger } from '../log.ts';
import { parseConnectAuthority } from '../tunnel/connect-authority.ts';
import { isManagedClusterIdentity } from '../tunnel/identity.ts';
import { setRelayBuffer } from '../tunnel/relay-buffer.ts';
import { countRelayed } from '../tunnel/relay-gc.ts';
import { ClientLimiter, type ClientLimits } from './client-limits.ts';
import { type H2ConnectLimits, H2ConnectServer } from './connect-frontend-h2.ts';
import type { GrpcFrontendLimits } from './grpc-frontend.ts';
import {
  type TunnelStatus,
  TunnelStatusEndpoint,
  type TunnelStatusLimits,
  tunnelStatusCluster,
  wantsWatch,
} from './tunnel-status.ts';

export interface Caller {
  user: string;
  groups: string[];
}

export interface ConnectFrontendOptions {
  host: string;
  port: number;
  /**
   * Serving certificate, and the CA bundle hub-service client certificates must chain to. Never the
   * CA that signs agent identities; left out, certificate callers are not accepted (tokens only).
   */
  tls: { certPem: string; keyPem: string; clientCaPem?: string };
  dial: (cluster: string, target: string) => Promise<Duplex>;
  /** validates a bearer token (TokenReview on the hub); undefined = token auth disabled */
  authenticateToken?: (token: string) => Promise<Caller | undefined>;
  /** may `caller` open connections into `cluster`? (SubjectAccessReview on the hub); asked for every caller */
  authorize: (caller: Caller, cluster: string) => Promise<boolean>;
  /** per-client limits (defaults in client-limits.ts) */
  limits?: Partial<ClientLimits>;
  maxHeaderBytes?: number;
  headersTimeoutMs?: number;
  maxConnections?: number;
  /** HTTP/2 connections: concurrent tunnels and flow-control windows (defaults in connect-frontend-h2.ts) */
  h2?: Partial<H2ConnectLimits>;
  /** konnectivity's gRPC ProxyService on the same port (defaults in grpc-frontend.ts) */
  grpc?: Partial<GrpcFrontendLimits>;
  /**
   * this proxy-server's status of a cluster's tunnel, served as `GET /tunnels/<cluster>` to callers
   * admitted to that cluster (tunnel-status.ts); left out, that path is not served
   */
  tunnelStatus?: (cluster: string) => TunnelStatus | undefined;
  tunnelStatusLimits?: Partial<TunnelStatusLimits>;
  log?: Logger;
}

/** Where a caller's credentials come from: the TLS connection, and a Proxy-Authorization value. */
export interface TunnelRequest {
  authority: string;
  tlsSocket: TLSSocket;
  proxyAuthorization?: string | string[];
}

/** Why a tunnel was not opened: the status, its text, a reason for the caller, extra headers. */
export interface TunnelRefusal {
  status: number;
  text: string;
  reason: string;
  headers?: Record<string, string>;
}

export type TunnelOutcome = { upstream: Duplex } | { refusal: TunnelRefusal };

/** How long a TLS session may be resumed after its full handshake (OpenSSL's session timeout). */
export const SESSION_TIMEOUT_S = 300;
/** Certificate callers remembered by fingerprint (a fingerprint always maps to the same caller). */
const CALLER_CACHE_MAX = 1000;
const ESTABLISHED = Buffer.from('HTTP/1.1 200 Connection Established\r\n\r\n', 'latin1');

let aesCpu: boolean | undefined;
/** Whether the CPU has AES instructions (Linux: the `aes` flag in /proc/cpuinfo; elsewhere: unknown, no). */
export function cpuHasAes(): boolean {
  if (aesCpu === undefined) {
    try {
      aesCpu = /^(flags|Features)\s*:.*\baes\b/m.test(readFileSync('/proc/cpuinfo', 'latin1'));
    } catch {
      aesCpu = false;
    }
  }
  return aesCpu;
}

/**
 * Node's default cipher list with TLS_AES_128_GCM_SHA256 moved first when `aes` is true (AES-128
 * costs fewer rounds than AES-256 and both are hardware-accelerated then); otherwise the default,
 * whose ChaCha20 suite serves CPUs without AES. The set of suites is unchanged, only the order.
 */
export function frontendCiphers(aes = cpuHasAes()): string {
  if (!aes) return DEFAULT_CIPHERS;
  const suites = DEFAULT_CIPHERS.split(':').filter((c) => c !== 'TLS_AES_128_GCM_SHA256');
  return ['TLS_AES_128_GCM_SHA256', ...suites].join(':');
}

const statusFor: Record<string, [number, string]> = {
  TETHER_NO_AGENT: [503, 'Service Unavailable'],
  TETHER_AGENT_UNRESPONSIVE: [504, 'Gateway Timeout'],
  TETHER_TARGET_NOT_ALLOWED: [403, 'Forbidden'],
  TETHER_DIAL_FAILED: [502, 'Bad Gateway'],
  TETHER_DIAL_TIMEOUT: [504, 'Gateway Timeout'],
  TETHER_LIMIT_EXCEEDED: [503, 'Service Unavailable'],
  TETHER_PROTOCOL: [502, 'Bad Gateway'],
};

/** A reason fit for a header value: one line, at most 500 characters. */
export function headerSafe(reason: string): string {
  return reason.replace(/[\r\n]/g, ' ').slice(0, 500);
}

function reject(socket: Duplex, r: TunnelRefusal): void {
  const extra = Object.entries(r.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${r.status} ${r.text}\r\ntether-reason: ${headerSafe(r.reason)}\r\ncontent-length: 0\r\nconnection: close\r\n${extra}\r\n`,
    );
  }
  (socket as Partial<Socket>).destroySoon?.();
}

const refusal = (status: number, text: string, reason: string, headers?: Record<string, string>) => ({
  refusal: { status, text, reason, ...(headers ? { headers } : {}) },
});

export class ConnectFrontend {
  private readonly server: TlsServer;
  /** HTTP/1.1 over the TLS connections that did not choose h2 */
  private readonly http1: HttpServer;
  private readonly h2: H2ConnectServer;
  private readonly opts: ConnectFrontendOptions;
  private readonly log: Logger;
  private readonly sockets = new Set<Socket>();
  /** fingerprint256 → caller of certificates already seen (insertion order = age) */
  private readonly certCallers = new Map<string, Caller | null>();
  readonly limiter: ClientLimiter;
  private readonly tunnelStatus: TunnelStatusEndpoint | undefined;

  constructor(opts: ConnectFrontendOptions) {
    this.opts = opts;
    this.log = opts.log ?? makeLogger('connect-frontend');
    this.limiter = new ClientLimiter(opts.limits);
    const clientCa = opts.tls.clientCaPem;
    this.server = createTlsServer({
      cert: opts.tls.certPem,
      key: opts.tls.keyPem,
      ...(clientCa ? { ca: clientCa, requestCert: true } : { requestCert: false }),
      rejectUnauthorized: false,
      // small records (handshake, the 200, a CONNECT answer) go out at once, not after a delayed ACK
      noDelay: true,
      ALPNProtocols: ['h2', 'http/1.1'],
      ciphers: frontendCiphers(),
      honorCipherOrder: true,
      sessionTimeout: SESSION_TIMEOUT_S,
    });
    this.server.maxConnections = opts.maxConnections ?? 10_000;
    this.http1 = createHttpServer({
      maxHeaderSize: opts.maxHeaderBytes ?? 8 * 1024,
      // Strict parsing whatever NODE_OPTIONS says (--insecure-http-parser would otherwise apply):
      // a request whose framing is ambiguous (CL with TE, obs-fold, bare LF) gets 400, never a tunnel.
      insecureHTTPParser: false,
    });
    this.http1.headersTimeout = opts.headersTimeoutMs ?? 10_000;
    this.http1.requestTimeout = opts.headersTimeoutMs ?? 10_000;
    this.h2 = new H2ConnectServer({
      open: (req) => this.openTunnel(req),
      limits: opts.h2,
      idleTimeoutMs: opts.headersTimeoutMs ?? 10_000,
      maxHeaderBytes: opts.maxHeaderBytes ?? 8 * 1024,
      ...(opts.grpc ? { grpc: opts.grpc } : {}),
      log: this.log,
    });
    this.server.on('secureConnection', (s: TLSSocket) => {
      s.on('error', () => {});
      if (s.alpnProtocol === 'h2') this.h2.accept(s);
      else this.http1.emit('connection', s);
    });
    this.server.on('tlsClientError', (err, s) => {
      this.log.debug({ err: err.message }, 'TLS handshake failed on the CONNECT frontend');
      s.destroy();
    });
    this.server.on('connection', (s: Socket) => {
      const release = this.limiter.connection(s.remoteAddress ?? '');
      if (!release) {
        this.log.debug({ remote: s.remoteAddress }, 'too many connections from one address; dropping');
        s.destroy();
        return;
      }
      this.sockets.add(s);
      s.once('close', () => {
        this.sockets.delete(s);
        release();
      });
    });
    this.tunnelStatus = opts.tunnelStatus
      ? new TunnelStatusEndpoint(opts.tunnelStatus, opts.tunnelStatusLimits)
      : undefined;
    this.http1.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.handleRequest(req, res).catch((err: Error) => {
        this.log.warn({ err: err.message }, 'tunnel status request failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
        else res.destroy();
      });
    });
    this.http1.on('clientError', (err, socket) => {
      this.log.debug({ err: err.message }, 'malformed request on CONNECT frontend');
      reject(socket, { status: 400, text: 'Bad Request', reason: 'malformed request' });
    });
    this.http1.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => {});
      this.handleConnect(req, socket, head).catch((err: Error) => {
        this.log.warn({ err: err.message }, 'CONNECT failed');
        reject(socket, { status: 500, text: 'Internal Server Error', reason: 'internal error' });
      });
    });
  }

  async start(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port, this.opts.host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  get port(): number {
    return (this.server.address() as AddressInfo | null)?.port ?? 0;
  }

  /** Tunnel-status watches open now (tunnel-status.ts). */
  get tunnelStatusWatches(): number {
    return this.tunnelStatus?.openWatches ?? 0;
  }

  private async authenticate(req: TunnelRequest): Promise<Caller | 'unauthenticated'> {
    const tlsSocket = req.tlsSocket;
    // `authorized` is only ever true against the proxy-client CA (no CA, no certificate callers).
    if (this.opts.tls.clientCaPem && tlsSocket.authorized) {
      const caller = this.certificateCaller(tlsSocket);
      if (caller) return caller;
    }
    const header = req.proxyAuthorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
    if (m && this.opts.authenticateToken) {
      const caller = await this.opts.authenticateToken(m[1] as string);
      if (caller) return caller;
    }
    return 'unauthenticated';
  }

  /** The caller named by a verified peer certificate (CN = user, O = groups), or null without a CN. */
  private certificateCaller(tlsSocket: TLSSocket): Caller | null {
    const fingerprint = tlsSocket.getPeerX509Certificate()?.fingerprint256;
    if (fingerprint === undefined) return null;
    const known = this.certCallers.get(fingerprint);
    if (known !== undefined) return known;
    const cert = tlsSocket.getPeerCertificate();
    const cn = Array.isArray(cert.subject?.CN) ? cert.subject.CN[0] : cert.subject?.CN;
    const o = cert.subject?.O;
    // Shared by every connection of this certificate: frozen, so no consumer can change it for the next.
    const groups = Object.freeze(o === undefined ? [] : Array.isArray(o) ? [...o] : [o]) as string[];
    const caller = cn ? Object.freeze({ user: cn, groups }) : null;
    if (this.certCallers.size >= CALLER_CACHE_MAX)
      this.certCallers.delete(this.certCallers.keys().next().value as string);
    this.certCallers.set(fingerprint, caller);
    return caller;
  }

  /**
   * Who the caller is and whether it may reach `cluster`: the same checks for a CONNECT and for a
   * tunnel-status GET. A refusal says what to answer.
   */
  private async admit(
    req: TunnelRequest,
    cluster: string,
  ): Promise<{ caller: Caller } | { refusal: TunnelRefusal }> {
    const caller = await this.authenticate(req);
    if (caller === 'unauthenticated')
      return refusal(
        407,
        'Proxy Authentication Required',
        'present a proxy-client certificate or a hub bearer token',
        { 'proxy-authenticate': 'Bearer realm="tether"' },
      );
    if (isManagedClusterIdentity(caller.user, caller.groups)) {
      this.log.warn(
        { user: caller.user, cluster },
        'refused a managed-cluster identity on the CONNECT frontend',
      );
      return refusal(403, 'Forbidden', `${caller.user} is a managed-cluster identity, not a hub service`);
    }
    if (!(await this.opts.authorize(caller, cluster)))
      return refusal(403, 'Forbidden', `${caller.user} may not get managedclusters/proxy for ${cluster}`);
    return { caller };
  }

  /**
   * Everything a tunnel needs before bytes flow, whatever the wire protocol: the authority parsed,
   * the caller authenticated and authorized for the cluster, the caller's limits, the dial. On
   * success the caller's tunnel slot is held until `upstream` closes.
   */
  async openTunnel(req: TunnelRequest): Promise<TunnelOutcome> {
    const authority = req.authority;
    const parsed = parseConnectAuthority(authority);
    if (!parsed)
      return refusal(
        400,
        'Bad Request',
        `"${authority.slice(0, 100)}" is not <cluster>:443 or <export>.<cluster>:<port>`,
      );
    const admitted = await this.admit(req, parsed.cluster);
    if ('refusal' in admitted) return admitted;
    const { caller } = admitted;
    const slot = this.limiter.tunnel(caller.user);
    if ('limit' in slot) {
      this.log.debug({ user: caller.user, limit: slot.limit }, 'per-caller limit reached');
      return refusal(429, 'Too Many Requests', slot.message, { 'retry-after': '1' });
    }
    let upstream: Duplex;
    try {
      upstream = await this.opts.dial(parsed.cluster, parsed.target);
    } catch (err) {
      slot.closed();
      const code = err instanceof TetherError ? err.code : 'TETHER_DIAL_FAILED';
      const [status, text] = statusFor[code] ?? [502, 'Bad Gateway'];
      return refusal(status, text, (err as Error).message, { 'tether-error': code });
    }
    slot.dialed();
    upstream.once('close', slot.closed);
    return { upstream };
  }

  /**
   * Plain HTTP/1.1 requests: `GET /tunnels/<cluster>` (tunnel-status.ts) for callers admitted to
   * that cluster, as a CONNECT to it would be; anything else 405.
   */
  private async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // the raw path: no dot-segment resolution, so what is checked is what was asked
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const cluster = tunnelStatusCluster(q < 0 ? raw : raw.slice(0, q));
    if (!this.tunnelStatus || cluster === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res
        .writeHead(405, { allow: 'CONNECT', 'content-type': 'text/plain' })
        .end('only CONNECT <cluster>:443 and GET /tunnels/<cluster> are served here\n');
      return;
    }
    const admitted = await this.admit(
      {
        authority: '',
        tlsSocket: req.socket as TLSSocket,
        proxyAuthorization: req.headers['proxy-authorization'] ?? req.headers.authorization,
      },
      cluster,
    );
    if ('refusal' in admitted) {
      const r = admitted.refusal;
      res
        .writeHead(r.status, r.text, {
          'content-type': 'text/plain',
          'tether-reason': headerSafe(r.reason),
          ...r.headers,
        })
        .end(`${r.reason}\n`);
      return;
    }
    this.tunnelStatus.serve(
      res,
      admitted.caller.user,
      cluster,
      wantsWatch(new URLSearchParams(q < 0 ? '' : raw.slice(q + 1))),
    );
  }

  /** HTTP/1.1 CONNECT: the whole TLS connection becomes the tunnel. */
  private async handleConnect(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const outcome = await this.openTunnel({
      authority: req.url ?? '',
      tlsSocket: req.socket as TLSSocket,
      proxyAuthorization: req.headers['proxy-authorization'],
    });
    if ('refusal' in outcome) {
      reject(socket, outcome.refusal);
      return;
    }
    const { upstream } = outcome;
    if (socket.destroyed) {
      upstream.destroy();
      return;
    }
    socket.write(ESTABLISHED);
    if (head.length > 0) upstream.write(head);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    socket.once('close', () => upstream.destroy());
    upstream.once('close', () => socket.destroy());
    setRelayBuffer(upstream);
    upstream.pipe(socket);
    socket.pipe(upstream);
    countRelayed(upstream, socket);
  }

  async stop(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.h2.stop();
    this.tunnelStatus?.stop();
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}
