// The managed end of the tunnel: dials out to every proxy-server replica (directly, through an HTTP
// CONNECT forward proxy, or over a WebSocket), authenticates with its cluster certificate, and
// serves the hub's CONNECT streams to the targets its policy allows. Reconnects with capped,
// jittered exponential backoff; stays connected to as many distinct servers as they advertise.
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { Counter, Gauge, Registry } from 'prom-client';
import { createWebSocketStream, WebSocket } from 'ws';
import { TetherError } from '../errors.ts';
import { type Logger, logger as makeLogger } from '../log.ts';
import { AgentTunnelServer, type AttachedSession, type TargetResolver } from '../tunnel/agent-session.ts';
import { describeProxy, dialThroughProxy, proxyForUrl } from '../tunnel/forward-proxy.ts';
import {
  defaultTunnelLimits,
  TUNNEL_ALPN,
  type TunnelLimits,
  WEBSOCKET_SUBPROTOCOL,
} from '../tunnel/protocol.ts';

export interface ProxyAgentOptions {
  cluster: string;
  agentId: string;
  /** proxy-server addresses: `host:port` (TLS, HTTP/2) or `wss://host:port/tether.v1/tunnel` */
  servers: string[];
  tls: { certPem: string; keyPem: string; hubCaPem: string; serverName?: string };
  resolveTarget: TargetResolver;
  /** explicit forward proxy (http:// or https://, userinfo = Basic auth); else HTTPS_PROXY & co */
  proxyUrl?: string;
  proxyCaPem?: string;
  env?: Record<string, string | undefined>;
  limits?: Partial<TunnelLimits>;
  backoff?: { initialMs?: number; maxMs?: number };
  log?: Logger;
}

interface Connected {
  address: string;
  serverId: string;
  attached: AttachedSession;
}

export class ProxyAgent {
  readonly registry = new Registry();
  private readonly opts: ProxyAgentOptions;
  private readonly limits: TunnelLimits;
  private readonly log: Logger;
  private readonly tunnel: AgentTunnelServer;
  private readonly connected = new Map<string, Connected>();
  private readonly loops = new Map<string, number>();
  private readonly sleepers = new Set<() => void>();
  private stopped = false;
  private readonly connectedGauge: Gauge;
  private readonly connectErrors: Counter<'code'>;
  private lastError = '';

  constructor(opts: ProxyAgentOptions) {
    if (opts.servers.length === 0)
      throw new TetherError('TETHER_INVALID_ARGUMENT', 'at least one proxy-server address is needed');
    this.opts = opts;
    this.limits = { ...defaultTunnelLimits, ...opts.limits };
    this.log = opts.log ?? makeLogger('proxy-agent', { cluster: opts.cluster, agent: opts.agentId });
    this.connectedGauge = new Gauge({
      name: 'tether_agent_connected_servers',
      help: 'proxy-servers this agent holds a tunnel to',
      registers: [this.registry],
    });
    this.connectErrors = new Counter({
      name: 'tether_agent_connect_errors_total',
      help: 'Failed attempts to reach a proxy-server, by error code',
      labelNames: ['code'],
      registers: [this.registry],
    });
    const streams = new Counter({
      name: 'tether_agent_streams_total',
      help: 'Tunnel streams served, by outcome',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    const bytes = new Counter({
      name: 'tether_agent_bytes_total',
      help: 'Bytes carried between tunnel streams and targets',
      labelNames: ['direction'],
      registers: [this.registry],
    });
    const toTarget = bytes.labels({ direction: 'to_target' });
    const fromTarget = bytes.labels({ direction: 'from_target' });
    this.tunnel = new AgentTunnelServer({
      limits: this.limits,
      resolveTarget: opts.resolveTarget,
      agentId: opts.agentId,
      events: {
        onStream: (e) => {
          streams.inc({ outcome: e.outcome });
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

  /** Starts one connect loop per configured server address. */
  start(): void {
    for (const address of this.opts.servers) this.ensureLoops(address, 1);
  }

  /** Ready when at least one proxy-server tunnel is up. */
  readiness(): { ok: boolean; detail: string } {
    const ids = [...this.connected.values()].map((c) => c.serverId);
    if (ids.length > 0) return { ok: true, detail: `connected to proxy-servers ${ids.join(', ')}` };
    return {
      ok: false,
      detail: `not connected to any proxy-server${this.lastError ? `: ${this.lastError}` : ''}`,
    };
  }

  connectedServerIds(): string[] {
    return [...this.connected.values()].map((c) => c.serverId).sort();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of this.sleepers) wake();
    for (const c of this.connected.values()) c.attached.session.destroy();
    this.connected.clear();
    this.tunnel.close();
  }

  private ensureLoops(address: string, want: number): void {
    const have = this.loops.get(address) ?? 0;
    for (let i = have; i < Math.min(want, 16); i++) {
      this.loops.set(address, (this.loops.get(address) ?? 0) + 1);
      void this.loop(address);
    }
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

  private backoffMs(failures: number): number {
    const initial = this.opts.backoff?.initialMs ?? 250;
    const max = this.opts.backoff?.maxMs ?? 5000;
    const exp = Math.min(max, initial * 2 ** Math.min(failures, 20));
    return Math.round(exp / 2 + Math.random() * (exp / 2));
  }

  private async loop(address: string): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const attached = await this.connectOnce(address);
        if (this.stopped) {
          attached.session.destroy();
          return;
        }
        const duplicate = [...this.connected.values()].some((c) => c.serverId === attached.serverId);
        if (duplicate) {
          // A load balancer sent us to a replica we already hold: try again for another one.
          attached.session.destroy();
          failures++;
        } else {
          const key = `${address}#${attached.serverId}`;
          this.connected.set(key, { address, serverId: attached.serverId, attached });
          this.connectedGauge.set(this.connected.size);
          this.lastError = '';
          this.log.info({ server: attached.serverId, address }, 'tunnel established');
          this.ensureLoops(address, attached.serverCount);
          failures = 0;
          const why = await attached.closed;
          this.connected.delete(key);
          this.connectedGauge.set(this.connected.size);
          if (!this.stopped) this.log.warn({ server: attached.serverId, why }, 'tunnel lost; reconnecting');
        }
      } catch (err) {
        failures++;
        const code = err instanceof TetherError ? err.code : 'TETHER_DIAL_FAILED';
        this.connectErrors.inc({ code });
        this.lastError = (err as Error).message;
        this.log.warn({ address, err: this.lastError, failures }, 'cannot reach proxy-server');
      }
      if (!this.stopped)
        await this.sleep(failures === 0 ? Math.random() * 100 : this.backoffMs(failures - 1));
    }
  }

  private tlsOptions(): ConnectionOptions {
    const t = this.opts.tls;
    return {
      ca: t.hubCaPem,
      cert: t.certPem,
      key: t.keyPem,
      ALPNProtocols: [TUNNEL_ALPN],
      rejectUnauthorized: true,
    };
  }

  private async connectOnce(address: string): Promise<AttachedSession> {
    const socket =
      address.startsWith('wss://') || address.startsWith('ws://')
        ? await this.dialWebSocket(address)
        : await this.dialTls(address);
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

  private async rawSocket(host: string, port: number, scheme: 'https' | 'http'): Promise<Duplex | undefined> {
    const proxy = proxyForUrl(`${scheme}://${host}:${port}`, {
      proxyUrl: this.opts.proxyUrl,
      env: this.opts.env ?? process.env,
    });
    if (!proxy) return undefined;
    this.log.debug({ proxy: describeProxy(proxy) }, 'dialling through forward proxy');
    return dialThroughProxy(proxy, host, port, {
      timeoutMs: this.limits.handshakeTimeoutMs,
      proxyCa: this.opts.proxyCaPem,
    });
  }

  private async dialTls(address: string): Promise<TLSSocket> {
    const idx = address.lastIndexOf(':');
    const host = address.slice(0, idx).replace(/^\[|\]$/g, '');
    const port = Number(address.slice(idx + 1));
    if (!host || !Number.isInteger(port))
      throw new TetherError(
        'TETHER_INVALID_ARGUMENT',
        `proxy-server address must be host:port, got "${address}"`,
      );
    const viaProxy = await this.rawSocket(host, port, 'https');
    const servername = this.opts.tls.serverName ?? host;
    return this.handshake(
      tlsConnect({
        ...this.tlsOptions(),
        ...(viaProxy ? { socket: viaProxy } : { host, port }),
        servername: isIp(servername) ? undefined : servername,
        host,
      }),
      address,
    );
  }

  private handshake(socket: TLSSocket, address: string): Promise<TLSSocket> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new TetherError('TETHER_TIMEOUT', `TLS handshake with ${address} timed out`));
      }, this.limits.handshakeTimeoutMs);
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        if (socket.alpnProtocol !== TUNNEL_ALPN) {
          socket.destroy();
          reject(
            new TetherError(
              'TETHER_PROTOCOL',
              `${address} is not a tether proxy-server (ALPN ${String(socket.alpnProtocol)})`,
            ),
          );
          return;
        }
        resolve(socket);
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(
          new TetherError('TETHER_DIAL_FAILED', `cannot connect to proxy-server ${address}: ${err.message}`),
        );
      });
    });
  }

  private async dialWebSocket(address: string): Promise<TLSSocket> {
    const url = new URL(address);
    const port = Number(url.port) || (url.protocol === 'wss:' ? 443 : 80);
    const viaProxy = await this.rawSocket(url.hostname, port, url.protocol === 'wss:' ? 'https' : 'http');
    const hubCa = this.opts.tls.hubCaPem;
    let agent: HttpsAgent | undefined;
    if (viaProxy) {
      agent = new HttpsAgent({ keepAlive: false });
      agent.createConnection = (() =>
        url.protocol === 'wss:'
          ? tlsConnect({ socket: viaProxy, servername: url.hostname, ca: hubCa })
          : viaProxy) as unknown as typeof agent.createConnection;
    }
    const ws = new WebSocket(url, WEBSOCKET_SUBPROTOCOL, {
      ca: hubCa,
      agent,
      perMessageDeflate: false,
      maxPayload: 4 * 1024 * 1024,
      handshakeTimeout: this.limits.handshakeTimeoutMs,
      ...(viaProxy && url.protocol === 'ws:' ? { createConnection: () => viaProxy as Socket } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => {
        reject(
          new TetherError(
            'TETHER_PROTOCOL',
            `${address} answered the WebSocket upgrade with ${res.statusCode}`,
          ),
        );
        ws.terminate();
      });
      ws.once('error', (err) =>
        reject(new TetherError('TETHER_DIAL_FAILED', `WebSocket to ${address} failed: ${err.message}`)),
      );
    });
    const stream = createWebSocketStream(ws, { allowHalfOpen: false });
    stream.on('error', () => {});
    const servername = this.opts.tls.serverName ?? url.hostname;
    return this.handshake(
      // host: what the proxy-server certificate is checked against (Node assumes localhost otherwise).
      tlsConnect({
        ...this.tlsOptions(),
        socket: stream,
        host: url.hostname,
        servername: isIp(servername) ? undefined : servername,
      }),
      address,
    );
  }
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
