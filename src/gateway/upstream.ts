// Connections from the gateway to managed apiservers. Every connection is TLS verified against the
// cluster's CA with the server name of its client-config URL (never `insecure`), over one tunnel
// stream (endpoint ClusterProxy: dial(cluster, 'kube-apiserver:443')) or a TCP connection (Const).
// Plain requests go through one undici Pool per cluster whose `connect` makes such a connection,
// so connections (and their tunnel streams) are reused; Upgrade requests take a connection of
// their own (`connect`) and keep it for the upgraded stream's life. Per upstream (endpoint, CA and
// client certificate) one TLS context is built once and the last TLS session is offered again, so a
// new connection (a watch, a burst) skips parsing the CA and, where the apiserver resumes, the
// certificate exchange; a changed CA or certificate starts over with a new context and no session.
import { isIP, connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { Pool } from 'undici';
import { TetherError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Upstream } from './store.ts';

/** Opens a stream to `target` (`kube-apiserver:443`) inside `cluster` (ProxyServer.dial or alike). */
export type ClusterDialer = (cluster: string, target: string) => Promise<Duplex>;

export interface UpstreamPoolOptions {
  dial: ClusterDialer;
  /** dial + TLS handshake deadline (default 10 s) */
  connectTimeoutMs?: number;
  /** connections (= tunnel streams) per cluster; long-running requests hold one each (default 1024) */
  maxConnectionsPerCluster?: number;
  /** close an idle pooled connection after (default 30 s) */
  keepAliveTimeoutMs?: number;
  /** upstream response headers deadline for requests that are not long-running (default 60 s) */
  headersTimeoutMs?: number;
  log: Logger;
}

/** A cluster's apiserver has no CA to verify it against: refuse rather than go insecure. */
export class MissingCaError extends TetherError {
  constructor(cluster: string) {
    super(
      'TETHER_PROXY_TLS',
      `no CA bundle is known for cluster ${cluster}: set spec.managedClusterClientConfigs[0].caBundle on the ManagedCluster (or ca.crt in its credential Secret)`,
    );
    this.name = 'MissingCaError';
  }
}

function fingerprint(up: Upstream): string {
  const cert = up.credential.type === 'X509Certificate' ? up.credential.certPem + up.credential.keyPem : '';
  return JSON.stringify([up.endpointType, up.url.host, up.caPem ?? '', cert]);
}

/** TLS settings of one upstream, built once: the context and the session to resume. */
interface UpstreamTls {
  key: string;
  context: SecureContext;
  session?: Buffer;
}

export class UpstreamPools {
  private readonly opts: UpstreamPoolOptions;
  private readonly pools = new Map<string, { key: string; pool: Pool }>();
  private readonly tls = new Map<string, UpstreamTls>();
  private closed = false;

  constructor(opts: UpstreamPoolOptions) {
    this.opts = opts;
  }

  /** The TLS context of this upstream (CA, client certificate); rebuilt when either changes. */
  private tlsFor(up: Upstream, caPem: string): UpstreamTls {
    const key = fingerprint(up);
    const existing = this.tls.get(up.cluster);
    if (existing?.key === key) return existing;
    const credential = up.credential;
    const entry: UpstreamTls = {
      key,
      context: createSecureContext({
        ca: caPem,
        ...(credential.type === 'X509Certificate'
          ? { cert: credential.certPem, key: credential.keyPem }
          : {}),
      }),
    };
    this.tls.set(up.cluster, entry);
    return entry;
  }

  /** A verified TLS connection to the upstream apiserver (HTTP/1.1 only). */
  async connect(up: Upstream): Promise<TLSSocket> {
    if (!up.caPem) throw new MissingCaError(up.cluster);
    const timeoutMs = this.opts.connectTimeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    const settings = this.tlsFor(up, up.caPem);
    const raw = await this.rawConnection(up, timeoutMs);
    const host = up.url.hostname.replace(/^\[|\]$/g, '');
    const tls = tlsConnect({
      socket: raw as Socket,
      host,
      servername: isIP(host) ? undefined : host,
      secureContext: settings.context,
      rejectUnauthorized: true,
      ALPNProtocols: ['http/1.1'],
      ...(settings.session ? { session: settings.session } : {}),
    });
    // Sessions (TLS 1.3 tickets) are only kept from connections whose certificate check passed.
    tls.on('session', (session: Buffer) => {
      if (tls.authorized && this.tls.get(up.cluster) === settings) settings.session = session;
    });
    return new Promise<TLSSocket>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          fail(new TetherError('TETHER_DIAL_TIMEOUT', `TLS handshake with cluster ${up.cluster} timed out`)),
        Math.max(1, deadline - Date.now()),
      );
      const fail = (err: Error): void => {
        clearTimeout(timer);
        tls.destroy();
        raw.destroy();
        reject(
          err instanceof TetherError
            ? err
            : new TetherError(
                'TETHER_PROXY_TLS',
                `TLS to the apiserver of cluster ${up.cluster} (${up.url.host}) failed: ${err.message}`,
                { cause: err },
              ),
        );
      };
      tls.once('error', fail);
      tls.once('secureConnect', () => {
        clearTimeout(timer);
        tls.off('error', fail);
        tls.on('error', () => {});
        resolve(tls);
      });
    });
  }

  private async rawConnection(up: Upstream, timeoutMs: number): Promise<Duplex> {
    if (up.endpointType === 'ClusterProxy') return this.opts.dial(up.cluster, 'kube-apiserver:443');
    const host = up.url.hostname.replace(/^\[|\]$/g, '');
    const port = Number(up.url.port) || 443;
    return new Promise<Duplex>((resolve, reject) => {
      const socket = netConnect({ host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new TetherError('TETHER_DIAL_TIMEOUT', `connecting to ${host}:${port} timed out`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.setNoDelay(true);
        resolve(socket);
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(new TetherError('TETHER_DIAL_FAILED', `cannot connect to ${host}:${port}: ${err.message}`));
      });
    });
  }

  /** The keep-alive pool for this upstream; replaced when its endpoint, CA or certificate change. */
  pool(up: Upstream): Pool {
    if (this.closed) throw new TetherError('TETHER_STREAM_CLOSED', 'the gateway is shutting down');
    const key = fingerprint(up);
    const existing = this.pools.get(up.cluster);
    if (existing && existing.key === key) return existing.pool;
    if (existing) void existing.pool.close().catch(() => {});
    const pool = new Pool(`https://${up.url.host}`, {
      connections: this.opts.maxConnectionsPerCluster ?? 1024,
      pipelining: 1,
      keepAliveTimeout: this.opts.keepAliveTimeoutMs ?? 30_000,
      keepAliveMaxTimeout: this.opts.keepAliveTimeoutMs ?? 30_000,
      headersTimeout: this.opts.headersTimeoutMs ?? 60_000,
      bodyTimeout: 0,
      connect: (_options, callback) => {
        this.connect(up).then(
          (socket) => callback(null, socket),
          (err: Error) => callback(err, null),
        );
      },
    });
    pool.on('connectionError', () => {});
    this.pools.set(up.cluster, { key, pool });
    return pool;
  }

  /** Drops the pool of a cluster that is gone. */
  forget(cluster: string): void {
    this.tls.delete(cluster);
    const existing = this.pools.get(cluster);
    if (!existing) return;
    this.pools.delete(cluster);
    void existing.pool.destroy().catch(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    this.tls.clear();
    const pools = [...this.pools.values()].map((p) => p.pool);
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => {})));
  }
}

/** Path prefix of the upstream URL (for apiservers behind a path, e.g. Rancher's), without trailing /. */
export function upstreamBasePath(up: Upstream): string {
  return up.url.pathname.replace(/\/+$/, '');
}

/** The header that authenticates the gateway to the upstream (certificates go in TLS instead). */
export function credentialHeaders(up: Upstream): Record<string, string> {
  return up.credential.type === 'ServiceAccountToken'
    ? { authorization: `Bearer ${up.credential.token}` }
    : {};
}
