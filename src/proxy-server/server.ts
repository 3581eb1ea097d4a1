// The hub end of the tunnel: accepts agents (TLS with client certificates, ALPN h2; or a WebSocket
// carrying the same TLS inside it), learns each agent's cluster from its verified certificate (the
// cluster's registration identity or its cluster-proxy addon identity, agent-identity.ts),
// runs the hello and keeps a registry of live sessions. `dial(cluster, target)` opens a stream into
// a managed cluster for hub code (gateway, CONNECT frontend). With a ClusterAdmission (the hub's
// ManagedClusters), only accepted clusters may connect, and a cluster the hub denies or deletes
// loses its live sessions at once.
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer, type TLSSocket, type Server as TlsServer } from 'node:tls';
import { isTetherError, TetherError } from '../errors.ts';
import { type Logger, logger as makeLogger } from '../log.ts';
import { HubTunnelSession } from '../tunnel/hub-session.ts';
import { defaultTunnelLimits, TUNNEL_ALPN, type TunnelLimits } from '../tunnel/protocol.ts';
import { tunnelIdentityFromCertificate } from './agent-identity.ts';
import type { ClusterAdmission } from './cluster-admission.ts';
import { createProxyServerMetrics, type ProxyServerMetrics, type TunnelBytes } from './metrics.ts';
import { connectionKey, defaultPreAuthLimits, PreAuthGate } from './pre-auth.ts';
import { type AgentConnection, AgentRegistry } from './registry.ts';
import { TunnelErrorLog, type TunnelStatus } from './tunnel-status.ts';
import { WebSocketTransport } from './websocket-transport.ts';

export interface ProxyServerOptions {
  /** this replica's id, sent to agents in the hello */
  serverId: string;
  /** how many proxy-server replicas agents should stay connected to */
  serverCount: number;
  /** where agents connect */
  host: string;
  port: number;
  /** serving certificate for agents, and the CA bundle agent client certificates must chain to */
  tls: { certPem: string; keyPem: string; clientCaPem: string };
  limits?: Partial<TunnelLimits>;
  /** agents one cluster may hold at once on this replica (HA agents + reconnect overlap) */
  maxAgentsPerCluster?: number;
  /** dials waiting for an agent's answer, across all clusters */
  maxPendingDials?: number;
  /** TLS connections (handshaking or serving) at once */
  maxConnections?: number;
  /**
   * Connections not yet authenticated as an agent, in total and per remote address (pre-auth.ts);
   * their deadline is limits.handshakeTimeoutMs. Defaults 1 000 and 100.
   */
  maxUnauthenticatedConnections?: number;
  maxUnauthenticatedPerAddress?: number;
  /** WebSocket message size cap (bytes) */
  maxWebSocketPayloadBytes?: number;
  /**
   * The hub's say on which clusters may hold tunnels (HubClusterAdmission). Left out, any agent
   * with a valid certificate is served: only for tests and `--insecure-skip-hub-checks`.
   */
  clusterAdmission?: ClusterAdmission;
  log?: Logger;
}

/** Sessions one dial tries when agents stop answering under it (HA agents of one cluster). */
const MAX_DIAL_ATTEMPTS = 2;

export interface DialOptions {
  timeoutMs?: number;
}

export class ProxyServer {
  readonly registry = new AgentRegistry();
  /** the last error per cluster, for tunnelStatus */
  readonly lastErrors = new TunnelErrorLog();
  readonly metrics: ProxyServerMetrics;
  readonly limits: TunnelLimits;
  private readonly opts: ProxyServerOptions;
  private readonly log: Logger;
  private tlsServer: TlsServer | undefined;
  private readonly websocket: WebSocketTransport;
  private pendingDials = 0;
  private readonly closedBytes = new Map<string, { fromCluster: number; toCluster: number }>();
  /** streams opened per cluster since start (a key per cluster that had an agent, as closedBytes) */
  private readonly streamsOpened = new Map<string, number>();
  private stopping = false;
  private readonly sockets = new Set<Duplex>();
  private readonly readyWaiters: Array<() => void> = [];
  private readonly stopWatchingRevocations: () => void;
  private readonly preAuth: PreAuthGate;

  constructor(opts: ProxyServerOptions) {
    this.opts = opts;
    this.stopWatchingRevocations =
      opts.clusterAdmission?.onRevoked((cluster, why, addon) => this.closeCluster(cluster, why, addon)) ??
      (() => {});
    this.limits = { ...defaultTunnelLimits, ...opts.limits };
    this.preAuth = new PreAuthGate({
      maxConnections: opts.maxUnauthenticatedConnections ?? defaultPreAuthLimits.maxConnections,
      maxConnectionsPerAddress:
        opts.maxUnauthenticatedPerAddress ?? defaultPreAuthLimits.maxConnectionsPerAddress,
      deadlineMs: this.limits.handshakeTimeoutMs,
    });
    this.metrics = createProxyServerMetrics(() => this.tunnelBytes());
    this.log = opts.log ?? makeLogger('proxy-server', { serverId: opts.serverId });
    this.websocket = new WebSocketTransport({
      tls: opts.tls,
      handshakeTimeoutMs: this.limits.handshakeTimeoutMs,
      maxPayloadBytes: opts.maxWebSocketPayloadBytes ?? 4 * 1024 * 1024,
      // The agent's TLS inside the WebSocket has its own handshake deadline; the slot is held until then.
      onUpgraded: (outer) => this.preAuth.settle(connectionKey(outer), this.limits.handshakeTimeoutMs),
      onAgent: (inner) => this.acceptAgent(inner, 'websocket'),
      onHandshakeError: () => this.metrics.errors.inc({ code: 'TETHER_UNAUTHORIZED' }),
    });
  }

  /** Starts listening; resolves with the bound port. */
  async start(): Promise<number> {
    const server = createTlsServer({
      cert: this.opts.tls.certPem,
      key: this.opts.tls.keyPem,
      ca: this.opts.tls.clientCaPem,
      requestCert: true,
      // Checked by hand below: the WebSocket path authenticates with the TLS *inside* the WebSocket.
      rejectUnauthorized: false,
      ALPNProtocols: [TUNNEL_ALPN, 'http/1.1'],
      handshakeTimeout: this.limits.handshakeTimeoutMs,
    });
    server.maxConnections = this.opts.maxConnections ?? 10_000;
    server.on('secureConnection', (socket: TLSSocket) => this.onTlsConnection(socket));
    server.on('tlsClientError', (err, socket) => {
      this.metrics.errors.inc({ code: 'TETHER_UNAUTHORIZED' });
      this.log.debug({ err: err.message, remote: socket.remoteAddress }, 'agent TLS handshake failed');
      socket.destroy();
    });
    server.on('connection', (s: Socket) => {
      s.on('error', () => {});
      if (!this.preAuth.admit(s)) {
        this.metrics.errors.inc({ code: 'TETHER_LIMIT_EXCEEDED' });
        this.log.debug({ remote: s.remoteAddress }, 'too many unauthenticated connections; refusing');
        s.destroy();
        return;
      }
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    this.tlsServer = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, this.opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  get port(): number {
    return (this.tlsServer?.address() as AddressInfo | null)?.port ?? 0;
  }

  private onTlsConnection(socket: TLSSocket): void {
    socket.on('error', () => {});
    if (socket.alpnProtocol === TUNNEL_ALPN) {
      // Identified (or refused) at once from its certificate: no longer a stranger either way.
      this.preAuth.settle(connectionKey(socket));
      this.acceptAgent(socket, socket.remoteAddress ?? '');
      return;
    }
    // HTTP/1.1: only the WebSocket upgrade is served.
    this.websocket.accept(socket);
  }

  private acceptAgent(socket: TLSSocket, remoteAddress: string): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    const identity = socket.authorized
      ? tunnelIdentityFromCertificate(socket.getPeerCertificate())
      : undefined;
    if (!identity) {
      this.metrics.errors.inc({ code: 'TETHER_UNAUTHORIZED' });
      this.log.warn(
        {
          remote: remoteAddress,
          reason: socket.authorizationError ? String(socket.authorizationError) : 'not an agent certificate',
        },
        'rejected tunnel connection',
      );
      socket.destroy();
      return;
    }
    const refusal = this.opts.clusterAdmission?.refusal(identity.cluster, identity.addon);
    if (refusal) {
      this.metrics.errors.inc({ code: 'TETHER_UNAUTHORIZED' });
      this.log.warn(
        { cluster: identity.cluster, agent: identity.agent, remote: remoteAddress, reason: refusal },
        'rejected tunnel connection',
      );
      socket.destroy();
      return;
    }
    const max = this.opts.maxAgentsPerCluster ?? 32;
    if (this.registry.count(identity.cluster) >= max) {
      this.metrics.errors.inc({ code: 'TETHER_LIMIT_EXCEEDED' });
      this.log.warn({ cluster: identity.cluster, max }, 'too many agents for this cluster; rejecting');
      socket.destroy();
      return;
    }
    let conn: AgentConnection | undefined;
    const session = new HubTunnelSession({
      socket,
      limits: this.limits,
      serverId: this.opts.serverId,
      serverCount: this.opts.serverCount,
      peer: `the agent ${identity.agent} of cluster ${identity.cluster}`,
      onUnresponsive: (silentMs, resetStreams) => {
        this.metrics.errors.inc({ code: 'TETHER_AGENT_UNRESPONSIVE' });
        this.lastErrors.record(
          identity.cluster,
          'TETHER_AGENT_UNRESPONSIVE',
          `agent ${identity.agent} answered no PING for ${silentMs} ms; ${resetStreams} streams reset`,
        );
        this.log.warn(
          { cluster: identity.cluster, agent: identity.agent, silentMs, resetStreams },
          'agent unresponsive (no PING answer, no bytes); reset its streams, new dials avoid it until it answers',
        );
      },
      onClose: (why) => {
        if (!conn) return;
        const done = this.closedBytes.get(conn.cluster) ?? { fromCluster: 0, toCluster: 0 };
        done.fromCluster += socket.bytesRead;
        done.toCluster += socket.bytesWritten;
        this.closedBytes.set(conn.cluster, done);
        this.registry.remove(conn);
        this.metrics.connectedAgents.set({ cluster: conn.cluster }, this.registry.count(conn.cluster));
        this.log.info({ cluster: conn.cluster, agent: conn.agent, why }, 'agent disconnected');
      },
    });
    session
      .hello()
      .then(() => {
        if (session.isClosed) return;
        // The hub may have denied the cluster while the hello was in flight.
        const late = this.opts.clusterAdmission?.refusal(identity.cluster, identity.addon);
        if (late) {
          this.metrics.errors.inc({ code: 'TETHER_UNAUTHORIZED' });
          this.log.warn(
            { cluster: identity.cluster, agent: identity.agent, reason: late },
            'rejected tunnel connection',
          );
          session.destroy();
          return;
        }
        conn = this.registry.add({
          cluster: identity.cluster,
          agent: identity.agent,
          ...(identity.addon ? { addon: identity.addon } : {}),
          remoteAddress,
          connectedAt: new Date(),
          session,
          socket,
        });
        this.metrics.connectedAgents.set(
          { cluster: identity.cluster },
          this.registry.count(identity.cluster),
        );
        this.log.info(
          { cluster: identity.cluster, agent: identity.agent, remote: remoteAddress },
          'agent connected',
        );
        for (const w of this.readyWaiters.splice(0)) w();
      })
      .catch((err: Error) => {
        this.metrics.errors.inc({ code: 'TETHER_PROTOCOL' });
        this.log.warn({ cluster: identity.cluster, err: err.message }, 'agent hello failed');
        session.destroy();
      });
  }

  /**
   * Closes every live session of `cluster` now (the hub denied or deleted it), or with `addon`
   * only those held with that addon's identity (the addon was disabled on the cluster).
   */
  private closeCluster(cluster: string, why: string, addon?: string): void {
    const conns = this.registry
      .all()
      .filter(
        (c) => c.cluster === cluster && !c.session.isClosed && (addon === undefined || c.addon === addon),
      );
    if (conns.length === 0) return;
    this.log.warn(
      { cluster, ...(addon ? { addon } : {}), sessions: conns.length, reason: why },
      addon ? 'closing the tunnels of a disabled addon' : 'closing the tunnels of a revoked cluster',
    );
    for (const c of conns) c.session.destroy();
  }

  /** Resolves once `cluster` has at least `count` connected agents (for tests and `tether up`). */
  async waitForAgents(cluster: string, count = 1, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.registry.count(cluster) < count) {
      if (Date.now() > deadline)
        throw new TetherError(
          'TETHER_TIMEOUT',
          `no agent for cluster ${cluster} connected within ${timeoutMs} ms`,
        );
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(0, Math.min(500, deadline - Date.now())));
        this.readyWaiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /**
   * Opens a connection to `target` (`kube-apiserver:443` or `<export>:<port>`) inside `cluster`.
   * Fails at once with TETHER_NO_AGENT when no agent of that cluster is connected, and with
   * TETHER_AGENT_UNRESPONSIVE when its agents have stopped answering PINGs (within
   * limits.unresponsiveAfterMs when that happens under the dial).
   */
  async dial(cluster: string, target: string, opts: DialOptions = {}): Promise<Duplex> {
    const started = process.hrtime.bigint();
    const observe = (outcome: string): void => {
      this.metrics.dialSeconds.observe({ cluster, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
    };
    const refusal = this.opts.clusterAdmission?.refusal(cluster);
    if (refusal) {
      this.metrics.errors.inc({ code: 'TETHER_NO_AGENT' });
      observe('no_agent');
      // not recorded in lastErrors: a cluster the hub does not accept is not one to keep state for
      throw new TetherError('TETHER_NO_AGENT', `cluster ${cluster} has no tunnel: ${refusal}`);
    }
    let conn = this.registry.pick(cluster);
    if (!conn) {
      this.metrics.errors.inc({ code: 'TETHER_NO_AGENT' });
      observe('no_agent');
      const message = `no agent of cluster ${cluster} is connected to proxy-server ${this.opts.serverId}`;
      this.lastErrors.record(cluster, 'TETHER_NO_AGENT', message);
      throw new TetherError('TETHER_NO_AGENT', message);
    }
    const maxPending = this.opts.maxPendingDials ?? 1000;
    if (this.pendingDials >= maxPending) {
      this.metrics.errors.inc({ code: 'TETHER_LIMIT_EXCEEDED' });
      observe('limit');
      throw new TetherError(
        'TETHER_LIMIT_EXCEEDED',
        `${maxPending} dials are already pending; try again shortly`,
      );
    }
    this.pendingDials++;
    const tried = new Set<AgentConnection>();
    try {
      for (;;) {
        tried.add(conn);
        try {
          const stream = await conn.session.openStream(target, opts.timeoutMs ?? this.limits.dialTimeoutMs);
          observe('ok');
          // The stream goes back paused, as opened: no listener here may switch it to flowing.
          this.metrics.openStreams.inc({ cluster });
          this.streamsOpened.set(cluster, (this.streamsOpened.get(cluster) ?? 0) + 1);
          stream.once('close', () => this.metrics.openStreams.dec({ cluster }));
          this.log.debug({ cluster, agent: conn.agent, stream: stream.id, target }, 'tunnel stream opened');
          return stream;
        } catch (err) {
          // The agent went silent under this dial: one more try on another agent that still answers.
          const next =
            isTetherError(err, 'TETHER_AGENT_UNRESPONSIVE') && tried.size < MAX_DIAL_ATTEMPTS
              ? this.registry.pick(cluster, tried)
              : undefined;
          if (!next || next.session.isUnresponsive) throw err;
          this.log.warn(
            { cluster, agent: conn.agent, next: next.agent, err: (err as Error).message },
            'agent unresponsive; dialling through another agent of the cluster',
          );
          conn = next;
        }
      }
    } catch (err) {
      const code = err instanceof TetherError ? err.code : 'TETHER_DIAL_FAILED';
      this.metrics.errors.inc({ code });
      this.lastErrors.record(cluster, code, `dial ${target}: ${(err as Error).message}`);
      observe(
        code === 'TETHER_DIAL_TIMEOUT'
          ? 'timeout'
          : code === 'TETHER_AGENT_UNRESPONSIVE'
            ? 'unresponsive'
            : 'error',
      );
      throw err;
    } finally {
      this.pendingDials--;
    }
  }

  /**
   * The tunnel of `cluster` on this replica now (tunnel-status.ts), or undefined when no agent of
   * it has connected since this proxy-server started and no dial to it has failed.
   */
  tunnelStatus(cluster: string): TunnelStatus | undefined {
    const conns = this.registry.of(cluster);
    const closed = this.closedBytes.get(cluster);
    const lastError = this.lastErrors.get(cluster);
    if (conns.length === 0 && !closed && !lastError) return undefined;
    let fromCluster = closed?.fromCluster ?? 0;
    let toCluster = closed?.toCluster ?? 0;
    let openStreams = 0;
    const agents = conns.map((c) => {
      fromCluster += c.socket.bytesRead;
      toCluster += c.socket.bytesWritten;
      openStreams += c.session.openStreams;
      return {
        agent: c.agent,
        ...(c.addon ? { addon: c.addon } : {}),
        remoteAddress: c.remoteAddress,
        connectedSince: c.connectedAt.toISOString(),
        openStreams: c.session.openStreams,
        unresponsive: c.session.isUnresponsive,
      };
    });
    return {
      cluster,
      serverId: this.opts.serverId,
      serverCount: this.opts.serverCount,
      agents,
      openStreams,
      streamsOpened: this.streamsOpened.get(cluster) ?? 0,
      bytesFromCluster: fromCluster,
      bytesToCluster: toCluster,
      ...(lastError ? { lastError } : {}),
      time: new Date().toISOString(),
    };
  }

  private tunnelBytes(): TunnelBytes[] {
    const totals = new Map<string, { fromCluster: number; toCluster: number }>();
    for (const [cluster, b] of this.closedBytes) totals.set(cluster, { ...b });
    for (const c of this.registry.all()) {
      const t = totals.get(c.cluster) ?? { fromCluster: 0, toCluster: 0 };
      t.fromCluster += c.socket.bytesRead;
      t.toCluster += c.socket.bytesWritten;
      totals.set(c.cluster, t);
    }
    return [...totals].map(([cluster, b]) => ({ cluster, ...b }));
  }

  /** Stops accepting agents, drains sessions (GOAWAY) for up to graceMs, then closes everything. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    this.stopWatchingRevocations();
    const closed = new Promise<void>((r) => (this.tlsServer ? this.tlsServer.close(() => r()) : r()));
    await Promise.all(this.registry.all().map((c) => c.session.drain(graceMs)));
    for (const s of this.sockets) s.destroy();
    this.websocket.close();
    await closed;
  }
}
