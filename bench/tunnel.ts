// Tunnel benchmark: proxy-server + one proxy-agent, every figure a ratio against a direct TLS
// connection (node:tls, the same certificates) to the same kind of target, measured in the same run.
//
//   npm run bench -- tunnel [--quick] [--only=a,b] [--inproc] [--separate-targets] [--cpu-prof=DIR]
//                           [--anp=BIN_DIR]
//
// Topology (default): this process is the hub (ProxyServer and every client). A child process is
// the managed cluster: the proxy-agent, the TCP targets it dials, and the TLS listener the direct
// baseline talks to. Both paths therefore cross the same two processes, one per core on a 2-core
// machine: the hub side encrypts, the cluster side decrypts and consumes; the tunnel additionally
// pays HTTP/2 framing on both sides and the agent's relay hop to the TCP target. The idle-10k
// targets live in a third process so the agent's RSS is not mixed with 10 000 accepted sockets.
// --inproc runs agent and targets in this process instead (the DESIGN.md probe setup);
// --separate-targets moves the TCP targets and direct-TLS listener into the third process.
//
// A second baseline, tls-relay, terminates TLS in the cluster process and pipes each connection
// to the same TCP target, as the agent does, without HTTP/2: tunnel vs relay isolates the cost of
// the HTTP/2 session from the cost of the relay hop itself. Bulk rows also give cpu/byte: CPU
// seconds per GB of both processes, baseline over tunnel, which other load on a shared machine
// disturbs far less than throughput. Through squid, squid's own CPU is not counted.
//
// Groups for --only: idle, bulk-1, bulk-1-reverse, bulk-100, rr-small, stalled, squid, ws, and the
// CONNECT-frontend path a hub service uses (lib/frontend-scenarios.ts, clients in their own
// process): frontend-bulk-1, frontend-bulk-16, frontend-connect-rr, frontend-rr-small, frontend-idle-2k;
// each but idle also through the gRPC frontend (konnectivity's ProxyService, a grpc-js client).
// --anp=BIN_DIR runs those frontend scenarios through Go konnectivity too (its `server` and `agent`
// in BIN_DIR, bench/lib/konnectivity.ts), interleaved with tether and direct TLS, and adds a
// "vs konnectivity" row per scenario with issue 26's goals; its bulk rows also give the CPU every
// process on the machine spent per GiB and how busy its cores were (lib/machine-cpu.ts).
import { mkdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import type { Duplex } from 'node:stream';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { pino } from 'pino';
import { type Squid, startSquid } from '../src/localenv/squid.ts';
import type { Logger } from '../src/log.ts';
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from '../src/pki/index.ts';
import { ProxyServer } from '../src/proxy-server/server.ts';
import { dialThroughProxy } from '../src/tunnel/forward-proxy.ts';
import { agentSubject } from '../src/tunnel/identity.ts';
import { RemoteCluster } from './lib/cluster-peer.ts';
import { type ClusterApi, ClusterSide, type TargetPorts } from './lib/cluster-side.ts';
import { type FrontendRow, runFrontendScenarios } from './lib/frontend-scenarios.ts';
import {
  type BenchOptions,
  flag,
  gc,
  median,
  nowMs,
  percentile,
  printTable,
  round,
  sleep,
  withTimeout,
} from './lib/stats.ts';
import { benchHeader, drained, echoRoundTrips, readBytes } from './lib/stream-io.ts';

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(256 * 1024, 0x5a);
const REPEATS = 3;
const noop = (): void => {};

type Kind = 'bulk' | 'echo' | 'stall';
type Opener = (kind: Kind) => Promise<Duplex>;
interface Path {
  name: string;
  /** prefix of this path's JSON fields */
  key: string;
  open: Opener;
}

interface Sizes {
  bulk1: number;
  bulk100PerStream: number;
  rrIterations: number;
  rrWarmup: number;
  stalledPerStream: number;
  stalledStreams: number;
  idleStreams: number;
  squidBulk1: number;
  squidBulk100PerStream: number;
  wsBulk1: number;
}

const FULL: Sizes = {
  bulk1: 256 * MiB,
  bulk100PerStream: 8 * MiB,
  rrIterations: 5000,
  rrWarmup: 500,
  stalledPerStream: 32 * MiB,
  stalledStreams: 8,
  idleStreams: 10_000,
  squidBulk1: 256 * MiB,
  squidBulk100PerStream: 4 * MiB,
  wsBulk1: 256 * MiB,
};

const QUICK: Sizes = {
  bulk1: 32 * MiB,
  bulk100PerStream: MiB,
  rrIterations: 1000,
  rrWarmup: 200,
  stalledPerStream: 8 * MiB,
  stalledStreams: 8,
  idleStreams: 1000,
  squidBulk1: 32 * MiB,
  squidBulk100PerStream: MiB / 2,
  wsBulk1: 32 * MiB,
};

/** One table row (the frontend scenarios' row shape); JSON lines carry more. */
type Row = FrontendRow;

// ---------------------------------------------------------------------------------------------
// stream helpers

/** Writes `total` bytes (0: until ctl.stop) respecting backpressure. */
async function pump(s: Duplex, total: number, ctl?: { stop: boolean; sent: number }): Promise<void> {
  let sent = 0;
  const forever = total === 0;
  while (forever ? !ctl?.stop : sent < total) {
    if (s.destroyed) throw new Error('stream destroyed while writing');
    const n = forever ? CHUNK.length : Math.min(CHUNK.length, total - sent);
    const ok = s.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n));
    sent += n;
    if (ctl) ctl.sent = sent;
    if (!ok) await drained(s);
  }
}

async function sinkTransfer(s: Duplex, n: number): Promise<void> {
  const ack = readBytes(s, 1);
  s.write(benchHeader('S', n));
  await pump(s, n);
  await ack;
}

async function sourceTransfer(s: Duplex, n: number): Promise<void> {
  const all = readBytes(s, n);
  s.write(benchHeader('R', n));
  await all;
}

async function openMany(open: Opener, kind: Kind, n: number): Promise<Duplex[]> {
  const out = await Promise.all(Array.from({ length: n }, () => open(kind)));
  for (const s of out) s.on('error', noop);
  return out;
}

// ---------------------------------------------------------------------------------------------

export async function run(opts: BenchOptions): Promise<void> {
  const sizes = opts.quick ? QUICK : FULL;
  const inproc = flag(opts.args, 'inproc') !== undefined;
  const only = flag(opts.args, 'only')
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const cpuProfDir = flag(opts.args, 'cpu-prof');
  const separateTargets = flag(opts.args, 'separate-targets') !== undefined;
  const anpDir = flag(opts.args, 'anp') || undefined;
  const selected = (group: string): boolean => !only || only.includes(group);
  const topology = inproc
    ? 'one process: proxy-server, proxy-agent, TCP targets, direct-TLS server and all clients (RSS figures are both ends combined)'
    : 'hub process (proxy-server + clients) | cluster child process (proxy-agent + TCP targets + direct-TLS server); idle targets in a third process';
  const log: Logger = pino({ level: process.env.TETHER_LOG_LEVEL ?? 'silent' });
  const rows: Row[] = [];
  const t0 = nowMs();
  const progress = (msg: string): void => {
    process.stderr.write(`[tunnel ${((nowMs() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
  };
  const emit = (json: Record<string, unknown>, row?: Row): void => {
    console.log(JSON.stringify({ ...json, quick: opts.quick, inproc, loadavg_1m: round(loadavg()[0] ?? 0) }));
    if (row) rows.push(row);
  };

  const load0 = loadavg().map((x) => round(x));
  progress(`${opts.quick ? 'quick' : 'full'} run; load average ${load0.join(' ')}; topology: ${topology}`);

  // PKI: one CA, the proxy-server's serving certificate (also served by the direct-TLS target), an
  // agent certificate per cluster, and a client certificate for the direct baseline.
  const ca = await createCertificateAuthority('tether-bench-ca');
  const serverCert = await issueCertificate(ca, {
    commonName: 'proxy-server',
    usage: 'server',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  const clientCert = await issueCertificate(ca, {
    ...agentSubject('bench-direct', 'client'),
    usage: 'client',
  });
  const agentCert = (cluster: string): Promise<KeyPairPem> =>
    issueCertificate(ca, { ...agentSubject(cluster, 'agent-1'), usage: 'client' });

  const cleanups: Array<() => Promise<void>> = [];
  const server = new ProxyServer({
    serverId: 'bench',
    serverCount: 1,
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: serverCert.certPem, keyPem: serverCert.keyPem, clientCaPem: ca.certPem },
    log,
  });
  const hubPort = await server.start();
  cleanups.push(() => server.stop(200));

  let profArgs: string[] = [];
  if (cpuProfDir !== undefined) {
    const dir = resolvePath(cpuProfDir || 'bench-profiles');
    mkdirSync(dir, { recursive: true });
    profArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
    progress(
      `cluster-side CPU profiles go to ${dir} (profile the hub with: node --cpu-prof bench/run.ts tunnel)`,
    );
  }
  const cluster: ClusterApi = inproc ? new ClusterSide() : new RemoteCluster('cluster', profArgs);
  cleanups.push(() => cluster.shutdown());
  const idleHost: ClusterApi = inproc ? new ClusterSide() : new RemoteCluster('idle-targets');
  cleanups.push(() => idleHost.shutdown());

  let squid: Squid | undefined;
  try {
    const tlsForTargets = { certPem: serverCert.certPem, keyPem: serverCert.keyPem, clientCaPem: ca.certPem };
    const clusterPorts = await cluster.init(tlsForTargets);
    const idlePorts = await idleHost.init(tlsForTargets);
    // where the bulk/echo/stall targets and the direct-TLS listener live
    const ports: TargetPorts = separateTargets ? idlePorts : clusterPorts;

    const startAgent = async (
      name: string,
      servers: string[],
      extra: { proxyUrl?: string; idle?: boolean } = {},
    ): Promise<void> => {
      const cert = await agentCert(name);
      await cluster.startAgent({
        cluster: name,
        agentId: 'agent-1',
        certPem: cert.certPem,
        keyPem: cert.keyPem,
        hubCaPem: ca.certPem,
        servers,
        proxyUrl: extra.proxyUrl,
        exports: [
          { name: 'bulk', port: ports.bulk },
          { name: 'echo', port: ports.echo },
          { name: 'stall', port: ports.stall },
          ...(extra.idle ? [{ name: 'idle', port: idlePorts.echo }] : []),
        ],
      });
      await server.waitForAgents(name, 1, 30_000);
    };

    // ---- paths ------------------------------------------------------------------------------
    const tlsClient = (port: number, socket?: Socket): Promise<TLSSocket> =>
      new Promise((resolve, reject) => {
        socket?.setNoDelay(true);
        const s = tlsConnect({
          host: '127.0.0.1',
          port,
          ...(socket ? { socket } : {}),
          ca: ca.certPem,
          cert: clientCert.certPem,
          key: clientCert.keyPem,
        });
        s.once('secureConnect', () => {
          s.off('error', reject);
          if (!socket) s.setNoDelay(true);
          resolve(s);
        });
        s.once('error', reject);
      });
    const tlsPort = (kind: Kind): number => {
      if (kind === 'bulk') return ports.tlsBulk;
      if (kind === 'echo') return ports.tlsEcho;
      throw new Error(`no direct-TLS ${kind} target`);
    };
    const direct: Path = { name: 'direct-tls', key: 'direct', open: (kind) => tlsClient(tlsPort(kind)) };
    const relayPorts = await cluster.startRelay({ bulk: ports.bulk, echo: ports.echo });
    const relay: Path = {
      name: 'tls-relay',
      key: 'relay',
      open: (kind) => {
        if (kind === 'stall') throw new Error('no relay to the stall target');
        return tlsClient(kind === 'bulk' ? relayPorts.tlsRelayBulk : relayPorts.tlsRelayEcho);
      },
    };
    const directVia = (proxyUrl: string): Path => ({
      name: 'direct-tls-via-squid',
      key: 'direct_via_squid',
      open: async (kind) => {
        const raw = await dialThroughProxy(new URL(proxyUrl), '127.0.0.1', tlsPort(kind), {
          timeoutMs: 30_000,
        });
        return tlsClient(tlsPort(kind), raw);
      },
    });
    const tunnelPath = (name: string, clusterName: string): Path => ({
      name,
      key: 'tunnel',
      open: (kind) => server.dial(clusterName, `${kind}:${ports[kind]}`, { timeoutMs: 30_000 }),
    });

    // ---- measurement primitives ---------------------------------------------------------------
    const cpuSnap = async (): Promise<{ hub: number; cluster: number }> => {
      const c = process.cpuUsage();
      const st = await cluster.stats(false);
      return { hub: c.user + c.system, cluster: st.cpuMicros };
    };

    interface BulkSample {
      mbps: number;
      ms: number;
      hubCpu: number;
      clusterCpu: number;
    }
    const bulkOnce = async (
      p: Path,
      streams: number,
      perStream: number,
      dir: 'to' | 'from' = 'to',
    ): Promise<BulkSample> => {
      const ss = await openMany(p.open, 'bulk', streams);
      try {
        const c0 = await cpuSnap();
        const start = nowMs();
        await withTimeout(
          Promise.all(
            ss.map((s) => (dir === 'to' ? sinkTransfer(s, perStream) : sourceTransfer(s, perStream))),
          ),
          300_000,
          `${p.name} bulk x${streams}`,
        );
        const ms = nowMs() - start;
        const c1 = await cpuSnap();
        return {
          mbps: (streams * perStream) / 1e3 / ms,
          ms,
          // share of one core, inside the timed window (includes one IPC round trip)
          hubCpu: (c1.hub - c0.hub) / 1e3 / ms,
          clusterCpu: (c1.cluster - c0.cluster) / 1e3 / ms,
        };
      } finally {
        for (const s of ss) s.destroy();
        await sleep(150);
      }
    };

    /** Warm-up once per path, then REPEATS rounds with the paths in rotating order. */
    const compareBulk = async (
      paths: Path[],
      streams: number,
      perStream: number,
      dir: 'to' | 'from' = 'to',
    ): Promise<Map<string, BulkSample[]>> => {
      for (const p of paths) await bulkOnce(p, streams, Math.max(MiB / 4, perStream / 4), dir);
      const out = new Map<string, BulkSample[]>(paths.map((p) => [p.name, []]));
      for (let r = 0; r < REPEATS; r++) {
        for (let i = 0; i < paths.length; i++) {
          const p = paths[(i + r) % paths.length] as Path;
          const sample = await bulkOnce(p, streams, perStream, dir);
          out.get(p.name)?.push(sample);
          progress(`  ${p.name} x${streams}: ${sample.mbps.toFixed(0)} MB/s`);
        }
      }
      return out;
    };

    const summary = (samples: BulkSample[]): Record<string, number | number[]> => ({
      mbps: round(median(samples.map((s) => s.mbps)), 1),
      runs: samples.map((s) => round(s.mbps, 1)),
      hub_cpu: round(median(samples.map((s) => s.hubCpu))),
      cluster_cpu: round(median(samples.map((s) => s.clusterCpu))),
      // CPU seconds (hub + cluster process, not squid) per GB moved: less sensitive to other load
      cpu_s_per_gb: round(median(samples.map((s) => (s.hubCpu + s.clusterCpu) / (s.mbps / 1000))), 2),
    });

    const rrOnce = async (p: Path, iterations: number, warmup: number): Promise<number[]> => {
      const [s] = (await openMany(p.open, 'echo', 1)) as [Duplex];
      const req = Buffer.alloc(1024, 0x61);
      try {
        return await echoRoundTrips(s, req, iterations, warmup);
      } finally {
        s.destroy();
        await sleep(50);
      }
    };

    interface RrSummary {
      p50: number;
      p99: number;
      p50s: number[];
      p99s: number[];
    }
    const compareRr = async (paths: Path[]): Promise<Map<string, RrSummary>> => {
      for (const p of paths) await rrOnce(p, 0, sizes.rrWarmup);
      const out = new Map<string, RrSummary>(
        paths.map((p) => [p.name, { p50: 0, p99: 0, p50s: [], p99s: [] }]),
      );
      for (let r = 0; r < REPEATS; r++) {
        for (let i = 0; i < paths.length; i++) {
          const p = paths[(i + r) % paths.length] as Path;
          const lat = await rrOnce(p, sizes.rrIterations, 50);
          const o = out.get(p.name) as RrSummary;
          o.p50s.push(percentile(lat, 50));
          o.p99s.push(percentile(lat, 99));
          progress(
            `  ${p.name} rr: p50 ${percentile(lat, 50).toFixed(0)} µs, p99 ${percentile(lat, 99).toFixed(0)} µs`,
          );
        }
      }
      for (const o of out.values()) {
        o.p50 = round(median(o.p50s), 1);
        o.p99 = round(median(o.p99s), 1);
      }
      return out;
    };

    const verdict = (ratio: number, min: number | undefined): { target: string; result: string } =>
      min === undefined
        ? { target: '—', result: '—' }
        : { target: `≥ ${min}`, result: ratio >= min ? 'met' : 'MISSED' };

    /**
     * Tunnel against baselines (the first is plain direct TLS); `judge` is the baseline the target
     * ratio applies to. JSON: <key>_mbps per path, ratio_vs_<key> per baseline.
     */
    const bulkScenario = async (
      scenario: string,
      tunnel: Path,
      baselines: Path[],
      streams: number,
      perStream: number,
      target: { min: number; vs: Path; reference?: boolean } | undefined,
      dir: 'to' | 'from' = 'to',
    ): Promise<void> => {
      const m = await compareBulk([...baselines, tunnel], streams, perStream, dir);
      const t = summary(m.get(tunnel.name) as BulkSample[]);
      const json: Record<string, unknown> = { scenario };
      const ratios = new Map<Path, number>();
      for (const b of baselines) {
        const x = summary(m.get(b.name) as BulkSample[]);
        ratios.set(b, round((t.mbps as number) / (x.mbps as number), 3));
        json[`ratio_vs_${b.key}`] = ratios.get(b);
      }
      json.tunnel_mbps = t.mbps;
      for (const b of baselines) json[`${b.key}_mbps`] = summary(m.get(b.name) as BulkSample[]).mbps;
      Object.assign(json, {
        direction: dir === 'to' ? 'hub->cluster' : 'cluster->hub',
        streams,
        bytes_per_stream: perStream,
        tunnel_runs: t.runs,
        tunnel_cpu: { hub: t.hub_cpu, cluster: t.cluster_cpu, s_per_gb: t.cpu_s_per_gb },
      });
      for (const b of baselines) {
        const x = summary(m.get(b.name) as BulkSample[]);
        json[`${b.key}_runs`] = x.runs;
        json[`${b.key}_cpu`] = { hub: x.hub_cpu, cluster: x.cluster_cpu, s_per_gb: x.cpu_s_per_gb };
        json[`cpu_efficiency_vs_${b.key}`] = round(
          (x.cpu_s_per_gb as number) / (t.cpu_s_per_gb as number),
          3,
        );
      }
      const judged = target ? (ratios.get(target.vs) as number) : Number.NaN;
      if (target) {
        json[target.reference ? 'reference_target' : 'target'] = target.min;
        json.met = judged >= target.min;
      }
      const [first, ...rest] = baselines as [Path, ...Path[]];
      const fmt = (b: Path): string => `${b.key} ${summary(m.get(b.name) as BulkSample[]).mbps}`;
      emit(json, {
        scenario,
        tunnel: `${t.mbps} MB/s`,
        baseline: `${[first, ...rest].map(fmt).join('; ')} MB/s`,
        ratio: [
          `${ratios.get(first)}`,
          ...rest.map((b) => `vs ${b.key} ${ratios.get(b)}`),
          `cpu/byte ${json[`cpu_efficiency_vs_${first.key}`]}`,
        ].join('; '),
        target: target
          ? target.reference
            ? `(≥ ${target.min} vs ${target.vs.key})`
            : `≥ ${target.min}`
          : '—',
        result: target ? (judged >= target.min ? 'met' : 'MISSED') : '—',
      });
    };

    const rrScenario = async (scenario: string, tunnel: Path, baselines: Path[]): Promise<void> => {
      const m = await compareRr([...baselines, tunnel]);
      const t = m.get(tunnel.name) as RrSummary;
      // ratio_vs_*: higher is better, like the throughput ratios (baseline p50 / tunnel p50)
      const json: Record<string, unknown> = { scenario };
      for (const b of baselines) {
        const x = m.get(b.name) as RrSummary;
        json[`ratio_vs_${b.key}`] = round(x.p50 / t.p50, 3);
      }
      json.tunnel_p50_us = t.p50;
      json.tunnel_p99_us = t.p99;
      for (const b of baselines) {
        const x = m.get(b.name) as RrSummary;
        json[`${b.key}_p50_us`] = x.p50;
        json[`${b.key}_p99_us`] = x.p99;
      }
      const d = m.get(direct.name) as RrSummary;
      Object.assign(json, {
        p50_slowdown_vs_direct: round(t.p50 / d.p50, 2),
        p99_slowdown_vs_direct: round(t.p99 / d.p99, 2),
        tunnel_p50_runs: t.p50s.map((x) => round(x, 1)),
        iterations: sizes.rrIterations,
        request_bytes: 1024,
      });
      emit(json, {
        scenario,
        tunnel: `p50 ${t.p50} / p99 ${t.p99} µs`,
        baseline: baselines
          .map((b) => {
            const x = m.get(b.name) as RrSummary;
            return `${b.key} ${x.p50} / ${x.p99}`;
          })
          .join('; '),
        ratio: baselines
          .map((b, i) => `${i ? `vs ${b.key} ` : ''}${round((m.get(b.name) as RrSummary).p50 / t.p50, 3)}`)
          .join('; '),
        target: '—',
        result: '—',
      });
    };

    const group = async (name: string, fn: () => Promise<void>): Promise<void> => {
      if (!selected(name)) return;
      progress(`scenario group ${name}`);
      try {
        await fn();
      } catch (err) {
        const msg = (err as Error).message;
        progress(`  ${name} FAILED: ${msg}`);
        emit(
          { scenario: name, error: msg },
          { scenario: name, tunnel: 'error', baseline: '', ratio: '', target: '', result: msg.slice(0, 80) },
        );
      }
    };

    // ---- the tunnel agents connect straight to the hub ---------------------------------------
    await startAgent('bench', [`127.0.0.1:${hubPort}`], { idle: true });
    const tunnel = tunnelPath('tunnel', 'bench');

    // idle first: the hub heap is still small, so RSS deltas are not hidden in freed memory.
    await group('idle', async () => {
      const n = sizes.idleStreams;
      await bulkOnce(tunnel, 1, MiB); // warm the session
      gc();
      await sleep(300);
      const hub0 = process.memoryUsage();
      const ag0 = await cluster.stats(true);
      const target = `idle:${idlePorts.echo}`;
      const streams: Duplex[] = [];
      let next = 0;
      const start = nowMs();
      await withTimeout(
        Promise.all(
          Array.from({ length: 500 }, async () => {
            while (next < n) {
              next++;
              const s = await server.dial('bench', target, { timeoutMs: 60_000 });
              s.on('error', noop);
              streams.push(s);
            }
          }),
        ),
        300_000,
        `opening ${n} idle streams`,
      );
      const openMs = nowMs() - start;
      const targetConns = (await idleHost.stats(false)).targetConns;
      await sleep(500);
      gc();
      await sleep(200);
      const hub1 = process.memoryUsage();
      const ag1 = await cluster.stats(true);
      const per = (a: number, b: number): number => round((b - a) / n / 1024, 2);
      const hubKiB = per(hub0.rss, hub1.rss);
      const agentKiB = per(ag0.rss, ag1.rss);
      const closeStart = nowMs();
      for (const s of streams) s.destroy();
      for (let i = 0; i < 600 && (await idleHost.stats(false)).targetConns > 0; i++) await sleep(50);
      const closeMs = nowMs() - closeStart;
      const remaining = (await idleHost.stats(false)).targetConns;

      // Floor: the same number of bare node:http2 CONNECT streams on the same session, without
      // dial()'s bookkeeping. JS heap only: RSS after the first round mostly reuses freed pages.
      await sleep(300);
      gc();
      const raw0 = process.memoryUsage().heapUsed;
      const session = server.registry.pick('bench')?.session.session;
      const raws: Duplex[] = [];
      if (session) {
        next = 0;
        const rawDial = (): Promise<Duplex> =>
          new Promise((resolve, reject) => {
            const r = session.request({ ':method': 'CONNECT', ':authority': target }, { endStream: false });
            r.once('response', () => resolve(r));
            r.once('error', reject);
          });
        await withTimeout(
          Promise.all(
            Array.from({ length: 500 }, async () => {
              while (next < n) {
                next++;
                raws.push(await rawDial());
              }
            }),
          ),
          300_000,
          `opening ${n} bare HTTP/2 streams`,
        );
      }
      await sleep(500);
      gc();
      const rawHeap = per(raw0, process.memoryUsage().heapUsed);
      for (const r of raws) r.destroy();
      for (let i = 0; i < 600 && (await idleHost.stats(false)).targetConns > 0; i++) await sleep(50);
      const min = 8;
      const json = {
        scenario: 'idle-10k',
        streams: n,
        open_seconds: round(openMs / 1000, 2),
        opens_per_second: Math.round(n / (openMs / 1000)),
        target_connections_seen: targetConns,
        close_seconds: round(closeMs / 1000, 2),
        target_connections_left_after_close: remaining,
        ...(inproc
          ? { combined_rss_kib_per_stream: hubKiB }
          : { server_rss_kib_per_stream: hubKiB, agent_rss_kib_per_stream: agentKiB }),
        server_heap_kib_per_stream: per(hub0.heapUsed, hub1.heapUsed),
        server_external_kib_per_stream: per(hub0.external, hub1.external),
        bare_http2_heap_kib_per_stream: session ? rawHeap : null,
        ...(inproc
          ? {}
          : {
              agent_heap_kib_per_stream: per(ag0.heapUsed, ag1.heapUsed),
              agent_external_kib_per_stream: per(ag0.external, ag1.external),
            }),
        target_kib: min,
        met: hubKiB <= min,
        note: inproc
          ? 'agent in this process: RSS is both ends combined'
          : 'server = hub process (ProxyServer + the dialled streams); agent = cluster child (agent only, idle targets elsewhere)',
      };
      emit(json, {
        scenario: `idle-${n >= 1000 ? `${n / 1000}k` : n}`,
        tunnel: inproc
          ? `${hubKiB} KiB/stream combined RSS`
          : `server ${hubKiB} KiB/stream RSS (agent ${agentKiB})`,
        baseline: `opened in ${round(openMs / 1000, 2)} s (${json.opens_per_second}/s); JS heap ${json.server_heap_kib_per_stream} KiB/stream vs bare node:http2 ${rawHeap}`,
        ratio: '—',
        target: `≤ ${min} KiB`,
        result: hubKiB <= min ? 'met' : 'MISSED',
      });
    });

    const plain = [direct, relay];
    await group('bulk-1', () =>
      bulkScenario('bulk-1', tunnel, plain, 1, sizes.bulk1, { min: 0.75, vs: direct }),
    );
    await group('bulk-1-reverse', () =>
      bulkScenario('bulk-1-reverse', tunnel, plain, 1, sizes.bulk1, undefined, 'from'),
    );
    await group('bulk-100', () =>
      bulkScenario('bulk-100', tunnel, plain, 100, sizes.bulk100PerStream, { min: 0.7, vs: direct }),
    );
    await group('rr-small', () => rrScenario('rr-small', tunnel, plain));

    await group('stalled', async () => {
      const n = sizes.stalledStreams;
      const per = sizes.stalledPerStream;
      await bulkOnce(tunnel, n, per / 4);
      const alone: number[] = [];
      const cStall: number[] = [];
      const hStall: number[] = [];
      const hPaused: number[] = [];
      let stalledBuffered = 0;
      let hubFlowing: boolean | null = null;
      const hubBytes: number[] = [];
      const hubPausedBytes: number[] = [];
      for (let r = 0; r < REPEATS; r++) {
        // (a) the target never reads: the hub keeps writing into that stream until it blocks.
        // Order alone, stalled, stalled, alone (ABBA) so drift in other load cancels out.
        alone.push((await bulkOnce(tunnel, n, per)).mbps);
        const stalled = (await openMany(tunnel.open, 'stall', 1))[0] as Duplex;
        const ctl = { stop: false, sent: 0 };
        const pumping = pump(stalled, 0, ctl).catch(noop);
        let last = -1;
        for (let i = 0; i < 100 && ctl.sent !== last; i++) {
          last = ctl.sent;
          await sleep(200);
        }
        stalledBuffered = ctl.sent;
        cStall.push((await bulkOnce(tunnel, n, per)).mbps);
        cStall.push((await bulkOnce(tunnel, n, per)).mbps);
        ctl.stop = true;
        stalled.destroy();
        await pumping;
        await sleep(150);
        alone.push((await bulkOnce(tunnel, n, per)).mbps);

        // (b) the hub-side reader stops: the target sends without end, nobody on the hub reads
        for (const pause of [false, true]) {
          const src = (await openMany(tunnel.open, 'bulk', 1))[0] as Duplex;
          if (pause) src.pause();
          else hubFlowing = src.readableFlowing;
          src.write(benchHeader('R', 0));
          await sleep(500);
          const b0 = (await cluster.stats(false)).sourceBytes;
          const mbps = (await bulkOnce(tunnel, n, per)).mbps;
          const b1 = (await cluster.stats(false)).sourceBytes;
          (pause ? hPaused : hStall).push(mbps);
          (pause ? hubPausedBytes : hubBytes).push(b1 - b0);
          src.destroy();
          await sleep(150);
        }
        progress(
          `  stalled round ${r + 1}: alone ${alone.slice(-2).map((x) => x.toFixed(0))}, target-stalled ${cStall.slice(-2).map((x) => x.toFixed(0))}, hub-reader-stalled ${hStall.at(-1)?.toFixed(0)}, hub-reader-paused ${hPaused.at(-1)?.toFixed(0)} MB/s`,
        );
      }
      const a = median(alone);
      const ratio = round(median(cStall) / a, 3);
      const hubRatio = round(median(hStall) / a, 3);
      const pausedRatio = round(median(hPaused) / a, 3);
      emit(
        {
          scenario: 'stalled-reader',
          ratio_vs_alone: ratio,
          streams: n,
          bytes_per_stream: per,
          alone_mbps: round(a, 1),
          with_stalled_mbps: round(median(cStall), 1),
          per_stream_alone_mbps: round(a / n, 1),
          per_stream_with_stalled_mbps: round(median(cStall) / n, 1),
          alone_runs: alone.map((x) => round(x, 1)),
          with_stalled_runs: cStall.map((x) => round(x, 1)),
          stalled_stream_bytes_accepted_before_blocking: stalledBuffered,
          target: 0.9,
          met: ratio >= 0.9,
        },
        {
          scenario: `stalled-reader (${n}+1, target never reads)`,
          tunnel: `${round(median(cStall) / n, 1)} MB/s per stream`,
          baseline: `alone ${round(a / n, 1)} MB/s per stream`,
          ratio: String(ratio),
          ...verdict(ratio, 0.9),
        },
      );
      emit(
        {
          scenario: 'stalled-reader-hub',
          ratio_vs_alone: hubRatio,
          ratio_vs_alone_when_caller_pauses: pausedRatio,
          dialled_stream_readable_flowing_before_any_read: hubFlowing,
          stalled_stream_bytes_during_measurement: Math.round(median(hubBytes)),
          paused_stream_bytes_during_measurement: Math.round(median(hubPausedBytes)),
          alone_mbps: round(a, 1),
          with_stalled_mbps: round(median(hStall), 1),
          with_paused_mbps: round(median(hPaused), 1),
          note: 'one extra stream whose target sends without end while the hub-side caller never reads',
        },
        {
          scenario: `stalled-reader-hub (${n}+1, hub never reads)`,
          tunnel: `${round(median(hStall) / n, 1)} MB/s per stream; ${round(median(hubBytes) / MiB, 1)} MiB read+dropped`,
          baseline: `alone ${round(a / n, 1)}; caller pause() → ratio ${pausedRatio}`,
          ratio: String(hubRatio),
          target: '(≥ 0.9)',
          result: hubRatio >= 0.9 ? 'met' : 'MISSED',
        },
      );
    });

    // ---- through the CONNECT frontend, as a hub service ----------------------------------------
    await runFrontendScenarios({
      quick: opts.quick,
      server,
      cluster,
      clusterName: 'bench',
      ports,
      idleEchoPort: idlePorts.echo,
      ca,
      serverCert,
      directClientCert: clientCert,
      selected,
      group,
      emit,
      progress,
      execArgv: profArgs,
      anpDir,
    });

    // ---- through a real squid ----------------------------------------------------------------
    await group('squid', async () => {
      squid = await startSquid();
      await startAgent('bench-squid', [`127.0.0.1:${hubPort}`], { proxyUrl: squid.url });
      const tSquid = tunnelPath('tunnel-via-squid', 'bench-squid');
      const dSquid = directVia(squid.url);
      const viaSquid = [direct, dSquid];
      await bulkScenario('bulk-1-squid', tSquid, viaSquid, 1, sizes.squidBulk1, {
        min: 0.75,
        vs: dSquid,
        reference: true,
      });
      await bulkScenario('bulk-100-squid', tSquid, viaSquid, 100, sizes.squidBulk100PerStream, {
        min: 0.7,
        vs: dSquid,
        reference: true,
      });
      await rrScenario('rr-small-squid', tSquid, viaSquid);
      await cluster.stopAgent('bench-squid');
    });

    // ---- WebSocket transport -----------------------------------------------------------------
    await group('ws', async () => {
      await startAgent('bench-ws', [`wss://127.0.0.1:${hubPort}/tether.v1/tunnel`]);
      const tWs = tunnelPath('tunnel-ws', 'bench-ws');
      await bulkScenario('bulk-1-ws', tWs, plain, 1, sizes.wsBulk1, undefined);
      await rrScenario('rr-small-ws', tWs, plain);
      await cluster.stopAgent('bench-ws');
    });
  } finally {
    progress('cleaning up');
    await squid?.stop();
    for (const c of cleanups.reverse()) await c().catch((e: Error) => progress(`cleanup: ${e.message}`));
  }

  console.log('');
  console.log(`tunnel benchmark (${opts.quick ? 'quick' : 'full'}); ${topology}`);
  console.log(
    `load average at start ${load0.join(' ')}, at end ${loadavg()
      .map((x) => round(x))
      .join(' ')} (the machine is shared: other load shows up as noise)`,
  );
  // our own processes add about 2 to the load average; judge the machine by the load before we ran
  if ((load0[0] ?? 0) > availableParallelism() * 0.75)
    console.log(
      `WARNING: load average ${load0[0]} before the run on ${availableParallelism()} cores: other work competes for the CPU, so ratios are noisy; compare cpu/byte or run again when the machine is quiet`,
    );
  console.log(
    'ratios: tunnel / baseline throughput, baseline p50 / tunnel p50 (round trips); first baseline = direct TLS;\n' +
      'cpu/byte = direct CPU-s per GB / tunnel CPU-s per GB (hub + cluster processes); median of 3 (stalled: of 6, ABBA order); MB = 10^6 bytes',
  );
  printTable(
    ['scenario', 'tunnel', 'baseline', 'ratio', 'target', 'result'],
    rows.map((r) => [r.scenario, r.tunnel, r.baseline, r.ratio, r.target, r.result]),
  );
  progress('done');
}
