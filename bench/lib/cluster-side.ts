// The managed-cluster side of the tunnel benchmark: TCP targets (bulk sink/source, echo, stall), the
// same bulk/echo handlers behind a TLS listener for the direct-TLS baseline (proxy-server's
// certificate, client certificates required), and proxy-agents. Runs in a child process
// (lib/cluster-peer.ts) or, with --inproc, in the benchmark process itself.
//
// Bulk protocol (TCP and TLS alike): the client sends a 9-byte header, mode ('S' or 'R') then a
// big-endian uint64 N. 'S' (sink): the target reads N bytes, answers one byte 'K', and discards
// anything after. 'R' (source): the target writes N bytes (N = 0: until the peer goes away).
import { createServer as createNetServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { pino } from 'pino';
import type { Logger } from '../../src/log.ts';
import { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import { targetPolicy } from '../../src/proxy-agent/targets.ts';
import { gc } from './stats.ts';

export interface TargetPorts {
  bulk: number;
  echo: number;
  stall: number;
  tlsBulk: number;
  tlsEcho: number;
}

/** TLS listeners that relay each connection to a TCP target, the way the agent does (see startRelay). */
export interface RelayPorts {
  tlsRelayBulk: number;
  tlsRelayEcho: number;
}

export interface AgentSpec {
  cluster: string;
  agentId: string;
  certPem: string;
  keyPem: string;
  hubCaPem: string;
  servers: string[];
  proxyUrl?: string;
  /** exported targets: name → port on 127.0.0.1 (in this process or another one) */
  exports: Array<{ name: string; port: number }>;
}

export interface SideStats {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** bytes written by source-mode bulk targets since start */
  sourceBytes: number;
  /** target connections currently open (all kinds) */
  targetConns: number;
  /** process CPU time (user + system) so far, microseconds */
  cpuMicros: number;
}

/** What the benchmark calls, in-process or over IPC. */
export interface ClusterApi {
  init(tls: { certPem: string; keyPem: string; clientCaPem: string }): Promise<TargetPorts>;
  startRelay(targets: { bulk: number; echo: number }): Promise<RelayPorts>;
  startAgent(spec: AgentSpec): Promise<void>;
  stopAgent(cluster: string): Promise<void>;
  stats(gcFirst: boolean): Promise<SideStats>;
  shutdown(): Promise<void>;
}

const CHUNK = Buffer.alloc(256 * 1024, 0x5a);

export class ClusterSide implements ClusterApi {
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly agents = new Map<string, ProxyAgent>();
  private sourceBytes = 0;
  private ports: TargetPorts | undefined;
  private tlsOpts: Record<string, unknown> = {};
  private readonly log: Logger = pino({ level: process.env.TETHER_LOG_LEVEL ?? 'silent' });

  async init(tls: { certPem: string; keyPem: string; clientCaPem: string }): Promise<TargetPorts> {
    if (this.ports) return this.ports;
    const track = (s: Socket): void => this.track(s);
    const bulk = (s: Socket): void => {
      track(s);
      this.bulk(s);
    };
    const echo = (s: Socket): void => {
      track(s);
      s.pipe(s);
    };
    const stall = (s: Socket): void => {
      track(s);
      s.pause();
    };
    const tlsOpts = {
      cert: tls.certPem,
      key: tls.keyPem,
      ca: tls.clientCaPem,
      requestCert: true,
      rejectUnauthorized: true,
      allowHalfOpen: true,
    };
    this.tlsOpts = tlsOpts;
    const tlsBulk = createTlsServer(tlsOpts);
    tlsBulk.on('secureConnection', bulk);
    const tlsEcho = createTlsServer(tlsOpts);
    tlsEcho.on('secureConnection', echo);
    // Sockets that fail the handshake are not tracked: destroy them here.
    for (const t of [tlsBulk, tlsEcho]) t.on('tlsClientError', (_e, s) => s.destroy());
    const list = [
      createNetServer({ allowHalfOpen: true }, bulk),
      createNetServer({ allowHalfOpen: true }, echo),
      createNetServer({ allowHalfOpen: true }, stall),
      tlsBulk,
      tlsEcho,
    ];
    const ports: number[] = [];
    for (const srv of list) {
      srv.maxConnections = 100_000;
      // the raw TCP sockets of TLS servers too, so shutdown can close them all
      if (srv === tlsBulk || srv === tlsEcho) srv.on('connection', (s: Socket) => track(s));
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', 65535, r));
      this.servers.push(srv);
      const addr = srv.address();
      ports.push(typeof addr === 'object' && addr ? addr.port : 0);
    }
    const [b, e, st, tb, te] = ports as [number, number, number, number, number];
    this.ports = { bulk: b, echo: e, stall: st, tlsBulk: tb, tlsEcho: te };
    return this.ports;
  }

  private track(s: Socket): void {
    this.sockets.add(s);
    s.on('error', () => {});
    s.once('close', () => this.sockets.delete(s));
    s.setNoDelay(true);
  }

  /**
   * A second baseline: TLS terminated here and every connection relayed to a TCP target with
   * pipe() both ways, exactly the agent's relay without HTTP/2. Tunnel vs this isolates the cost of
   * the HTTP/2 session from the cost of the extra TCP hop every relay pays.
   */
  async startRelay(targets: { bulk: number; echo: number }): Promise<RelayPorts> {
    const out: number[] = [];
    for (const port of [targets.bulk, targets.echo]) {
      const srv = createTlsServer(this.tlsOpts);
      srv.on('connection', (raw: Socket) => this.track(raw));
      srv.on('tlsClientError', (_e, s) => s.destroy());
      srv.on('secureConnection', (s: Socket) => {
        this.track(s);
        const t = netConnect({ host: '127.0.0.1', port, allowHalfOpen: true });
        this.track(t);
        t.once('connect', () => {
          s.pipe(t);
          t.pipe(s);
        });
        t.once('close', () => s.destroy());
        s.once('close', () => t.destroy());
      });
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', 1024, r));
      this.servers.push(srv);
      const addr = srv.address();
      out.push(typeof addr === 'object' && addr ? addr.port : 0);
    }
    return { tlsRelayBulk: out[0] as number, tlsRelayEcho: out[1] as number };
  }

  private bulk(s: Socket): void {
    let header: Buffer = Buffer.alloc(0);
    let mode = '';
    let want = 0;
    let got = 0;
    let acked = false;
    const onData = (c: Buffer): void => {
      if (!mode) {
        header = header.length ? Buffer.concat([header, c]) : c;
        if (header.length < 9) return;
        mode = String.fromCharCode(header[0] as number);
        want = Number(header.readBigUInt64BE(1));
        c = header.subarray(9);
        if (mode === 'R') {
          this.source(s, want);
          return;
        }
      }
      got += c.length;
      if (!acked && got >= want) {
        acked = true;
        s.write('K');
      }
    };
    s.on('data', onData);
  }

  private source(s: Socket, total: number): void {
    let sent = 0;
    const more = (): void => {
      while (!s.destroyed && (total === 0 || sent < total)) {
        const n = total === 0 ? CHUNK.length : Math.min(CHUNK.length, total - sent);
        const ok = s.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n));
        sent += n;
        this.sourceBytes += n;
        if (!ok) {
          s.once('drain', more);
          return;
        }
      }
    };
    more();
  }

  async startAgent(spec: AgentSpec): Promise<void> {
    if (this.agents.has(spec.cluster)) throw new Error(`an agent for ${spec.cluster} already runs`);
    const host = '127.0.0.1';
    const exports = spec.exports.map((e) => ({ name: e.name, target: { host, port: e.port } }));
    const agent = new ProxyAgent({
      cluster: spec.cluster,
      agentId: spec.agentId,
      servers: spec.servers,
      tls: { certPem: spec.certPem, keyPem: spec.keyPem, hubCaPem: spec.hubCaPem },
      resolveTarget: targetPolicy({ host, port: exports[0]?.target.port ?? 1 }, exports),
      proxyUrl: spec.proxyUrl,
      env: {},
      backoff: { initialMs: 50, maxMs: 500 },
      log: this.log,
    });
    agent.start();
    this.agents.set(spec.cluster, agent);
  }

  async stopAgent(cluster: string): Promise<void> {
    const a = this.agents.get(cluster);
    this.agents.delete(cluster);
    await a?.stop();
  }

  async stats(gcFirst: boolean): Promise<SideStats> {
    if (gcFirst) gc();
    const m = process.memoryUsage();
    const cpu = process.cpuUsage();
    return {
      cpuMicros: cpu.user + cpu.system,
      rss: m.rss,
      heapUsed: m.heapUsed,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      sourceBytes: this.sourceBytes,
      targetConns: this.sockets.size,
    };
  }

  async shutdown(): Promise<void> {
    for (const c of [...this.agents.keys()]) await this.stopAgent(c);
    for (const s of this.sockets) s.destroy();
    await Promise.all(this.servers.map((srv) => new Promise<void>((r) => srv.close(() => r()))));
    this.servers.length = 0;
  }
}
