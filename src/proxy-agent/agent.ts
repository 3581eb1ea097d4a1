// The managed end of the tunnel: dials out to the proxy-server replicas (directly, through an HTTP
// CONNECT forward proxy, or over a WebSocket), authenticates with its cluster certificate, and
// serves the hub's CONNECT streams to the targets its policy allows.
//
// One tunnel per replica, by the server id each proxy-server sends in the hello (replica-set.ts):
// one loop per configured address, each holding its address's tunnel and reconnecting with capped,
// jittered exponential backoff; behind one address that spreads to several replicas, the loop also
// looks for the replicas it lacks (slower backoff) until it holds as many ids as the servers
// advertise, then stops dialling. A tunnel to a replica already held is closed gracefully.
// A new certificate (rotate) opens new tunnels first and then drains the old ones: they take no new
// streams (GOAWAY) and close when their streams end or at the drain deadline.
import type { Registry } from 'prom-client';
import { TetherError } from '../errors.ts';
import { type Logger, logger as makeLogger } from '../log.ts';
import { AgentTunnelServer, type AttachedSession, type TargetResolver } from '../tunnel/agent-session.ts';
import { defaultTunnelLimits, type TunnelLimits } from '../tunnel/protocol.ts';
import { type AgentTls, dialProxyServer } from './dial.ts';
import { createProxyAgentMetrics, type ProxyAgentMetrics } from './metrics.ts';
import { type DialNeed, ReplicaSet } from './replica-set.ts';

export type { AgentTls } from './dial.ts';

export interface ProxyAgentOptions {
  cluster: string;
  agentId: string;
  /**
   * proxy-server addresses: `host:port` (TLS, HTTP/2) or `wss://host:port/tether.v1/tunnel`. Either
   * one per replica, or fewer addresses (a load balancer, one DNS name) in front of the replicas.
   */
  servers: string[];
  tls: AgentTls;
  resolveTarget: TargetResolver;
  /** explicit forward proxy (http:// or https://, userinfo = Basic auth); else HTTPS_PROXY & co */
  proxyUrl?: string;
  /** CAs for TLS to an https:// forward proxy (PEM, or several); else Node's default CAs */
  proxyCaPem?: string | string[];
  env?: Record<string, string | undefined>;
  limits?: Partial<TunnelLimits>;
  /**
   * Reconnect backoff of an address with no tunnel: initialMs (default 250) doubling to maxMs
   * (default 5 000), jittered. seekMaxMs (default 10 000) caps the backoff of dials that look for
   * a missing replica behind an address that already holds one (they land on held replicas often).
   */
  backoff?: { initialMs?: number; maxMs?: number; seekMaxMs?: number };
  /**
   * Certificate rotation: how long to wait for tunnels with the new certificate before the old
   * ones drain anyway (default 15 000 ms), and how long an old tunnel may keep its open streams
   * (default 300 000 ms) before it is closed.
   */
  rotation?: { handoverTimeoutMs?: number; drainTimeoutMs?: number };
  /** where the tether_agent_* metrics live (default: a registry of this agent's own) */
  metrics?: ProxyAgentMetrics;
  log?: Logger;
}

interface Tunnel {
  address: string;
  serverId: string;
  attached: AttachedSession;
}

export class ProxyAgent {
  readonly metrics: ProxyAgentMetrics;
  private readonly opts: ProxyAgentOptions;
  private readonly limits: TunnelLimits;
  private readonly log: Logger;
  private readonly tunnel: AgentTunnelServer;
  private readonly replicas: ReplicaSet<Tunnel>;
  private readonly draining = new Set<Tunnel>();
  private readonly sleepers = new Set<() => void>();
  private readonly changeWaiters = new Set<() => void>();
  private tls: AgentTls;
  private started = false;
  private stopped = false;
  private lastError = '';

  constructor(opts: ProxyAgentOptions) {
    if (opts.servers.length === 0)
      throw new TetherError('TETHER_INVALID_ARGUMENT', 'at least one proxy-server address is needed');
    this.opts = opts;
    this.tls = opts.tls;
    this.limits = { ...defaultTunnelLimits, ...opts.limits };
    this.log = opts.log ?? makeLogger('proxy-agent', { cluster: opts.cluster, agent: opts.agentId });
    this.replicas = new ReplicaSet(new Set(opts.servers).size);
    this.metrics = opts.metrics ?? createProxyAgentMetrics();
    const m = this.metrics;
    const toTarget = m.bytes.labels({ direction: 'to_target' });
    const fromTarget = m.bytes.labels({ direction: 'from_target' });
    this.tunnel = new AgentTunnelServer({
      limits: this.limits,
      resolveTarget: opts.resolveTarget,
      agentId: opts.agentId,
      events: {
        onStream: (e) => {
          m.streams.inc({ outcome: e.outcome });
          if (e.outcome !== 'connected')
            this.log.info(
              { target: e.target, outcome: e.outcome, reason: e.reason },
              'tunnel stream refused',
            );
        },
        onBytes: (direction, n) => (direction === 'to-target' ? toTarget : fromTarget).inc(n),
      },
    });
  }

  /** The registry holding this agent's metrics (for an ops server). */
  get registry(): Registry {
    return this.metrics.registry;
  }

  /** Starts one connect loop per distinct configured address. */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const address of new Set(this.opts.servers)) void this.runAddress(address);
  }

  /** Ready when at least one proxy-server tunnel is up. */
  readiness(): { ok: boolean; detail: string } {
    const ids = this.replicas.ids();
    if (ids.length > 0) return { ok: true, detail: `connected to proxy-servers ${ids.join(', ')}` };
    return {
      ok: false,
      detail: `not connected to any proxy-server${this.lastError ? `: ${this.lastError}` : ''}`,
    };
  }

  connectedServerIds(): string[] {
    return this.replicas.ids();
  }

  /** Tunnels made with a replaced certificate that still carry streams. */
  drainingCount(): number {
    return this.draining.size;
  }

  /**
   * Switches to a new client certificate without cutting streams: new tunnels are dialled with
   * `tls` while the old ones keep serving; once the new tunnels hold every replica the old ones
   * held (or after rotation.handoverTimeoutMs), the old tunnels drain. Resolves when draining starts.
   * The same certificate again changes nothing.
   */
  async rotate(tls: AgentTls): Promise<void> {
    if (this.stopped) return;
    const same = (['certPem', 'keyPem', 'hubCaPem', 'serverName'] as const).every(
      (k) => tls[k] === this.tls[k],
    );
    if (same) return;
    this.tls = tls;
    const old = this.replicas.takeAll();
    this.metrics.connectedServers.set(0);
    for (const t of old) {
      this.draining.add(t);
      t.attached.session.once('close', () => {
        this.draining.delete(t);
        this.metrics.drainingTunnels.set(this.draining.size);
      });
    }
    this.metrics.drainingTunnels.set(this.draining.size);
    this.log.info(
      { servers: old.map((t) => t.serverId) },
      'certificate rotated; opening tunnels with the new certificate before draining the old ones',
    );
    this.changed();
    const wanted = old.map((t) => t.serverId);
    const deadline = Date.now() + (this.opts.rotation?.handoverTimeoutMs ?? 15_000);
    while (!this.stopped && Date.now() < deadline && !wanted.every((id) => this.replicas.has(id)))
      await this.nextChange(deadline - Date.now());
    const missing = wanted.filter((id) => !this.replicas.has(id));
    if (missing.length > 0 && !this.stopped)
      this.log.warn(
        { missing },
        'no tunnel with the new certificate to some proxy-servers yet; draining the old ones anyway',
      );
    for (const t of old) this.drain(t);
  }

  /**
   * Stops dialing and closes every tunnel. With `drainMs`, tunnels first get a GOAWAY: the
   * proxy-server sends them no new streams, the open ones (watches, exec, port-forward) go on, and
   * the tunnel closes once they end — or is cut at the deadline. Resolves when all are closed.
   */
  async stop(opts: { drainMs?: number } = {}): Promise<void> {
    this.stopped = true;
    for (const wake of this.sleepers) wake();
    this.changed();
    const drainMs = opts.drainMs ?? 0;
    if (drainMs > 0) {
      const all = [...this.replicas.takeAll(), ...this.draining];
      const open = all.filter((t) => !t.attached.session.destroyed);
      if (open.length > 0)
        this.log.info({ tunnels: open.length, drainMs }, 'stopping: draining tunnels (GOAWAY)');
      await Promise.all(
        open.map(
          (t) =>
            new Promise<void>((resolve) => {
              t.attached.session.once('close', () => resolve());
              this.closeGracefully(t.attached, drainMs);
            }),
        ),
      );
      this.draining.clear();
    }
    for (const t of [...this.replicas.takeAll(), ...this.draining]) t.attached.session.destroy();
    this.draining.clear();
    this.metrics.connectedServers.set(0);
    this.metrics.drainingTunnels.set(0);
    this.tunnel.close();
  }

  private changed(): void {
    for (const wake of [...this.changeWaiters]) wake();
  }

  /** Resolves at the next change of the held tunnels (or stop), or after `timeoutMs`. */
  private nextChange(timeoutMs = 2 ** 31 - 1): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(t);
        this.changeWaiters.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, Math.max(0, Math.min(timeoutMs, 2 ** 31 - 1)));
      this.changeWaiters.add(wake);
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(t);
        this.sleepers.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  private backoffMs(failures: number, need: DialNeed): number {
    const initial = this.opts.backoff?.initialMs ?? 250;
    const max =
      need === 'seek-replica'
        ? Math.max(this.opts.backoff?.seekMaxMs ?? 10_000, this.opts.backoff?.maxMs ?? 0)
        : (this.opts.backoff?.maxMs ?? 5000);
    const exp = Math.min(max, initial * 2 ** Math.min(failures, 20));
    return Math.round(exp / 2 + Math.random() * (exp / 2));
  }

  /** The connect loop of one address: dials only while replica-set.ts says there is a need. */
  private async runAddress(address: string): Promise<void> {
    let failures = 0;
    let idle = false;
    while (!this.stopped) {
      const need = this.replicas.dialNeed(address);
      if (need === 'none') {
        idle = true;
        await this.nextChange();
        continue;
      }
      // Many agents lose a restarted replica at once: spread their reconnects a little.
      if (idle) await this.sleep(Math.random() * 100);
      idle = false;
      if (this.stopped) return;
      try {
        const attached = await this.connectOnce(address);
        if (this.stopped) {
          attached.session.destroy();
          return;
        }
        if (this.adopt(address, attached)) {
          failures = 0;
          continue;
        }
        this.closeDuplicate(address, attached, need);
      } catch (err) {
        const code = err instanceof TetherError ? err.code : 'TETHER_DIAL_FAILED';
        this.metrics.connectErrors.inc({ code });
        this.lastError = (err as Error).message;
        const fields = { address, err: this.lastError, failures: failures + 1 };
        if (need === 'reconnect') this.log.warn(fields, 'cannot reach proxy-server');
        else this.log.debug(fields, 'looking for another proxy-server replica failed');
      }
      failures++;
      if (!this.stopped) await this.sleep(this.backoffMs(failures - 1, need));
    }
  }

  /** Holds a fresh tunnel unless its replica is held already; returns whether it was kept. */
  private adopt(address: string, attached: AttachedSession): boolean {
    this.replicas.serverCount = attached.serverCount;
    const t: Tunnel = { address, serverId: attached.serverId, attached };
    if (!this.replicas.add(t)) return false;
    this.metrics.handshakes.inc({ outcome: 'new' });
    this.metrics.connectedServers.set(this.replicas.size);
    this.lastError = '';
    this.log.info(
      { server: t.serverId, address, serverCount: attached.serverCount, held: this.replicas.size },
      'tunnel established',
    );
    void attached.closed.then((why) => {
      if (!this.replicas.remove(t)) return;
      this.metrics.connectedServers.set(this.replicas.size);
      if (!this.stopped) this.log.warn({ server: t.serverId, address, why }, 'tunnel lost; reconnecting');
      this.changed();
    });
    this.changed();
    return true;
  }

  private closeDuplicate(address: string, attached: AttachedSession, need: DialNeed): void {
    this.metrics.handshakes.inc({ outcome: 'duplicate' });
    const fields = { address, server: attached.serverId };
    if (need === 'reconnect')
      this.log.warn(fields, 'this address leads to a proxy-server already held through another address');
    else this.log.debug(fields, 'reached a proxy-server replica already held; closing the duplicate');
    this.closeGracefully(attached, this.limits.handshakeTimeoutMs);
  }

  /** Takes the old tunnel out of service: no new streams, closed once its streams end. */
  private drain(t: Tunnel): void {
    if (!this.draining.has(t)) return;
    const drainMs = this.opts.rotation?.drainTimeoutMs ?? 300_000;
    this.log.info(
      { server: t.serverId, address: t.address, drainMs },
      'draining tunnel with the replaced certificate',
    );
    t.attached.session.once('close', () =>
      this.log.info({ server: t.serverId, address: t.address }, 'drained tunnel closed'),
    );
    this.closeGracefully(t.attached, drainMs);
  }

  /** GOAWAY now (streams in flight finish), destroy after `deadlineMs` if streams are still open. */
  private closeGracefully(attached: AttachedSession, deadlineMs: number): void {
    const s = attached.session;
    if (s.destroyed) return;
    const timer = setTimeout(() => s.destroy(), deadlineMs);
    s.once('close', () => clearTimeout(timer));
    try {
      s.close();
    } catch {
      s.destroy();
    }
  }

  private async connectOnce(address: string): Promise<AttachedSession> {
    const socket = await dialProxyServer(address, {
      tls: () => this.tls,
      proxyUrl: this.opts.proxyUrl,
      proxyCaPem: this.opts.proxyCaPem,
      env: this.opts.env,
      handshakeTimeoutMs: this.limits.handshakeTimeoutMs,
      log: this.log,
    });
    try {
      return await this.tunnel.attach(socket);
    } catch (err) {
      socket.destroy();
      throw new TetherError(
        'TETHER_PROTOCOL',
        `tunnel handshake with ${address} failed: ${(err as Error).message}`,
      );
    }
  }
}
