// The CONNECT-frontend scenarios of the tunnel benchmark: the path a hub service really uses.
//   client (own process, hub-service certificate) ──TLS──▶ ConnectFrontend (hub process)
//     ──CONNECT <export>.<cluster>:<port>──▶ tunnel stream ──▶ proxy-agent (cluster process) ──▶ target
// Baseline, in the same run: TLS from the same client process straight to the cluster process's
// direct-TLS listener, which serves the same bulk/echo handlers as the targets.
//
// Groups for --only: frontend-bulk-1, frontend-bulk-16, frontend-connect-rr, frontend-rr-small,
// frontend-idle-2k. Hub CPU figures are the hub process's own (ProxyServer + frontend, no clients);
// agent CPU is the cluster process's (agent + targets; for the direct path: TLS + targets).
//
// The frontend here admits every caller (no hub to ask: hub-auth's SubjectAccessReview answers are
// cached, so a warm hub costs a map lookup per connection) and raises the per-caller tunnel rate
// and count limits, since one bench caller opens thousands of tunnels on purpose.
import { loadavg } from 'node:os';
import type { CertificateAuthority, KeyPairPem } from '../../src/pki/index.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { ConnectFrontend } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import type { ClusterApi, TargetPorts } from './cluster-side.ts';
import { type ConnectRrResult, type Endpoint, RemoteFrontendClient } from './frontend-client.ts';
import { TlsFloorServer } from './frontend-tls-floor.ts';
import { Konnectivity, procCpu } from './konnectivity.ts';
import { gc, median, nowMs, percentile, round, sleep } from './stats.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const REPEATS = 3;

export interface FrontendRow {
  scenario: string;
  tunnel: string;
  baseline: string;
  ratio: string;
  target: string;
  result: string;
}

export interface FrontendContext {
  quick: boolean;
  server: ProxyServer;
  cluster: ClusterApi;
  /** the cluster whose agent exports bulk, echo and idle */
  clusterName: string;
  ports: TargetPorts;
  /** echo port in the idle-target process (exported as `idle`) */
  idleEchoPort: number;
  /** signs the direct listener's trusted client certificates and the serving certificate */
  ca: CertificateAuthority;
  serverCert: KeyPairPem;
  directClientCert: KeyPairPem;
  selected: (group: string) => boolean;
  group: (name: string, fn: () => Promise<void>) => Promise<void>;
  emit: (json: Record<string, unknown>, row?: FrontendRow) => void;
  progress: (msg: string) => void;
  execArgv: string[];
  /** a directory with Go konnectivity's `server` and `agent`: every scenario also runs through them */
  anpDir?: string;
}

export const FRONTEND_GROUPS = [
  'frontend-bulk-1',
  'frontend-bulk-16',
  'frontend-connect-rr',
  'frontend-rr-small',
  'frontend-idle-2k',
];

interface Sizes {
  bulkTotal: number;
  rrIterations: number;
  rrWarmup: number;
  connectLatency: number;
  connectRate: number;
  rateOpeners: number;
  idle: number;
}
const FULL: Sizes = {
  bulkTotal: 256 * MiB,
  rrIterations: 5000,
  rrWarmup: 500,
  connectLatency: 1000,
  connectRate: 3000,
  rateOpeners: 8,
  idle: 2000,
};
const QUICK: Sizes = {
  bulkTotal: 32 * MiB,
  rrIterations: 1000,
  rrWarmup: 200,
  connectLatency: 300,
  connectRate: 1000,
  rateOpeners: 8,
  idle: 2000,
};

/**
 * direct TLS (the baseline), tether's CONNECT frontend over HTTP/1.1 (one TLS connection per
 * tunnel) and over HTTP/2 (`h2`: every tunnel a stream of one TLS connection), konnectivity's
 * HTTP-CONNECT frontend (with --anp)
 */
type Side = 'direct' | 'frontend' | 'h2' | 'anp';

const la = (): number => round(loadavg()[0] ?? 0);
const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');

export async function runFrontendScenarios(ctx: FrontendContext): Promise<void> {
  if (!FRONTEND_GROUPS.some((g) => ctx.selected(g))) return;
  const sizes = ctx.quick ? QUICK : FULL;
  const { server, cluster, progress, emit } = ctx;
  const clientCa = await createCertificateAuthority('tether-bench-proxy-client-ca');
  const hubService: KeyPairPem = await issueCertificate(clientCa, {
    commonName: 'bench-hub-service',
    usage: 'client',
  });
  const frontend = new ConnectFrontend({
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: ctx.serverCert.certPem, keyPem: ctx.serverCert.keyPem, clientCaPem: clientCa.certPem },
    dial: (c, t) => server.dial(c, t),
    authorize: async () => true,
    limits: {
      maxConnectionsPerAddress: 20_000,
      maxTunnelsPerCaller: 20_000,
      maxPendingDialsPerCaller: 1000,
      tunnelRatePerCaller: 1_000_000,
      tunnelBurstPerCaller: 1_000_000,
    },
    maxConnections: 20_000,
  });
  const fport = await frontend.start();
  const client = new RemoteFrontendClient(ctx.execArgv);
  let anp: Konnectivity | undefined;
  try {
    if (ctx.anpDir !== undefined) {
      anp = await Konnectivity.start(ctx.anpDir, {
        caPem: ctx.ca.certPem,
        serverCert: ctx.serverCert,
        clientCaPem: clientCa.certPem,
        agentCert: await issueCertificate(ctx.ca, { commonName: 'konnectivity-agent', usage: 'client' }),
      });
      progress(`konnectivity from ${ctx.anpDir}: frontend on ${anp.frontendPort}`);
    }
    await client.init({
      caPem: ctx.ca.certPem,
      direct: { certPem: ctx.directClientCert.certPem, keyPem: ctx.directClientCert.keyPem },
      frontend: { certPem: hubService.certPem, keyPem: hubService.keyPem },
    });
    const via = (exp: string, port: number): Endpoint => ({
      port: fport,
      authority: `${exp}.${ctx.clusterName}:${port}`,
      identity: 'frontend',
    });
    // konnectivity's agent dials whatever the CONNECT names: the same targets, by address
    const viaAnp = (port: number): Endpoint => ({
      port: anp?.frontendPort ?? 0,
      authority: `127.0.0.1:${port}`,
      identity: 'frontend',
    });
    const paths: Record<'bulk' | 'echo', Record<Side, Endpoint>> = {
      bulk: {
        direct: { port: ctx.ports.tlsBulk, identity: 'direct' },
        frontend: via('bulk', ctx.ports.bulk),
        h2: { ...via('bulk', ctx.ports.bulk), h2: true },
        anp: viaAnp(ctx.ports.bulk),
      },
      echo: {
        direct: { port: ctx.ports.tlsEcho, identity: 'direct' },
        frontend: via('echo', ctx.ports.echo),
        h2: { ...via('echo', ctx.ports.echo), h2: true },
        anp: viaAnp(ctx.ports.echo),
      },
    };
    /** the paths measured, interleaved: each repeat starts one later in this list */
    const sides: Side[] = anp ? ['direct', 'frontend', 'h2', 'anp'] : ['direct', 'frontend', 'h2'];
    const order = (r: number): Side[] => [
      ...sides.slice(r % sides.length),
      ...sides.slice(0, r % sides.length),
    ];

    // CPU of the proxy side ("hub") and the cluster side of a path: for tether the hub process and
    // the cluster process (agent + targets); for konnectivity its server, and its agent plus the
    // same cluster process (whose targets it reaches); for direct, the cluster process's TLS listener.
    const cpu = async (k: Side): Promise<{ hub: number; agent: number }> => {
      const clusterCpu = (await cluster.stats(false)).cpuMicros;
      if (k === 'anp' && anp)
        return {
          hub: procCpu(anp.serverPid).cpuMicros,
          agent: procCpu(anp.agentPid).cpuMicros + clusterCpu,
        };
      const c = process.cpuUsage();
      return { hub: c.user + c.system, agent: clusterCpu };
    };

    // ---- idle connections (first: before bulk runs leave freed pages that hide RSS growth) -----
    await ctx.group('frontend-idle-2k', async () => {
      const n = sizes.idle;
      const idle = via('idle', ctx.idleEchoPort);
      await client.connectRr(paths.echo.frontend, 20, 1, true); // warm both ends
      await sleep(300);
      gc();
      const hub0 = process.memoryUsage();
      const ag0 = await cluster.stats(true);
      const opened = await client.openIdle(idle, n, 50);
      await sleep(500);
      gc();
      await sleep(200);
      const hub1 = process.memoryUsage();
      const ag1 = await cluster.stats(true);
      await client.closeIdle();
      const per = (a: number, b: number): number => round((b - a) / n / 1024, 2);
      const serverRss = per(hub0.rss, hub1.rss);
      const agentRss = per(ag0.rss, ag1.rss);
      // RSS can grow less than the heap when earlier work left pages to reuse: per side, the
      // larger of RSS and JS heap + external growth is what this connection count costs.
      const side = (
        rss: number,
        a: NodeJS.MemoryUsage | { heapUsed: number; external: number },
        b: typeof a,
      ) => Math.max(rss, per(a.heapUsed + a.external, b.heapUsed + b.external));
      const total = round(side(serverRss, hub0, hub1) + side(agentRss, ag0, ag1), 2);
      emit(
        {
          scenario: 'frontend-idle-2k',
          connections: n,
          open_seconds: round(opened.ms / 1000, 2),
          server_rss_kib_per_connection: serverRss,
          agent_rss_kib_per_connection: agentRss,
          total_kib_per_connection: total,
          server_heap_kib_per_connection: per(hub0.heapUsed, hub1.heapUsed),
          server_external_kib_per_connection: per(hub0.external, hub1.external),
          agent_heap_kib_per_connection: per(ag0.heapUsed, ag1.heapUsed),
          agent_external_kib_per_connection: per(ag0.external, ag1.external),
          target_kib: 32,
          met: total <= 32,
          note: 'total = per side max(RSS, heap + external) growth; server = hub process (ProxyServer + ConnectFrontend, clients elsewhere); agent = cluster child (targets elsewhere); after a full GC',
          loadavg_1m: la(),
        },
        {
          scenario: `frontend-idle-${n >= 1000 ? `${n / 1000}k` : n}`,
          tunnel: `${total} KiB/conn (RSS server ${serverRss}, agent ${agentRss})`,
          baseline: `heap server ${per(hub0.heapUsed, hub1.heapUsed)} / agent ${per(ag0.heapUsed, ag1.heapUsed)} KiB/conn; opened in ${round(opened.ms / 1000, 2)} s`,
          ratio: '—',
          target: '≤ 32 KiB',
          result: verdict(total <= 32),
        },
      );
      const t0 = nowMs();
      while (server.registry.pick(ctx.clusterName)?.session.openStreams && nowMs() - t0 < 10_000)
        await sleep(50);

      // The floor: the same clients holding n bare TLS connections to a fresh node:tls process.
      const floor = await TlsFloorServer.start({
        certPem: ctx.serverCert.certPem,
        keyPem: ctx.serverCert.keyPem,
        clientCaPem: clientCa.certPem,
      });
      try {
        const f0 = await floor.server.memory();
        await client.openIdle({ port: floor.port, identity: 'frontend' }, n, 50);
        await sleep(500);
        const f1 = await floor.server.memory();
        await client.closeIdle();
        const floorRss = per(f0.rss, f1.rss);
        emit(
          {
            scenario: 'frontend-idle-2k-tls-floor',
            connections: n,
            held: f1.held,
            bare_tls_rss_kib_per_connection: floorRss,
            bare_tls_heap_kib_per_connection: per(f0.heapUsed, f1.heapUsed),
            frontend_server_rss_kib_per_connection: serverRss,
            note: 'a bare node:tls server process holding the same idle client connections: the least a TLS-terminating frontend in Node pays per connection',
            loadavg_1m: la(),
          },
          {
            scenario: 'frontend-idle-2k-tls-floor',
            tunnel: `bare node:tls ${floorRss} KiB/conn RSS`,
            baseline: `frontend server side ${serverRss} KiB/conn`,
            ratio: '—',
            target: '(floor)',
            result: floorRss > 32 ? 'floor > 32 KiB' : '—',
          },
        );
      } finally {
        await floor.server.stop();
      }
    });
    // ---- bulk ---------------------------------------------------------------------------------
    const bulkScenario = async (name: string, streams: number): Promise<void> => {
      const per = Math.floor(sizes.bulkTotal / streams);
      const bytes = per * streams;
      const runs: Record<Side, Array<{ mbps: number; hubS: number; agentS: number }>> = {
        direct: [],
        frontend: [],
        h2: [],
        anp: [],
      };
      for (const k of sides) await client.bulk(paths.bulk[k], streams, per / 4);
      for (let r = 0; r < REPEATS; r++) {
        for (const k of order(r)) {
          const c0 = await cpu(k);
          const res = await client.bulk(paths.bulk[k], streams, per);
          const c1 = await cpu(k);
          const gib = bytes / GiB;
          runs[k].push({
            mbps: bytes / 1e3 / res.ms,
            hubS: (c1.hub - c0.hub) / 1e6 / gib,
            agentS: (c1.agent - c0.agent) / 1e6 / gib,
          });
          progress(`  ${name} ${k}: ${(bytes / 1e3 / res.ms).toFixed(0)} MB/s`);
          await sleep(100);
        }
      }
      const med = (k: Side, f: 'mbps' | 'hubS' | 'agentS'): number =>
        round(median(runs[k].map((x) => x[f])), 2);
      const ratio = round(med('frontend', 'mbps') / med('direct', 'mbps'), 3);
      const hubCpu = med('frontend', 'hubS');
      emit(
        {
          scenario: name,
          ratio_vs_direct: ratio,
          frontend_mbps: med('frontend', 'mbps'),
          direct_mbps: med('direct', 'mbps'),
          h2_mbps: med('h2', 'mbps'),
          h2_hub_cpu_s_per_gib: med('h2', 'hubS'),
          h2_agent_cpu_s_per_gib: med('h2', 'agentS'),
          frontend_runs: runs.frontend.map((x) => round(x.mbps, 1)),
          direct_runs: runs.direct.map((x) => round(x.mbps, 1)),
          streams,
          bytes_per_stream: per,
          hub_cpu_s_per_gib: hubCpu,
          agent_cpu_s_per_gib: med('frontend', 'agentS'),
          direct_cluster_cpu_s_per_gib: med('direct', 'agentS'),
          hub_cpu_runs: runs.frontend.map((x) => round(x.hubS, 2)),
          agent_cpu_runs: runs.frontend.map((x) => round(x.agentS, 2)),
          target: { ratio_vs_direct: 0.3, hub_cpu_s_per_gib: 2.5 },
          met: ratio >= 0.3 && hubCpu <= 2.5,
          loadavg_1m: la(),
        },
        {
          scenario: name,
          tunnel: `${med('frontend', 'mbps')} MB/s; CPU s/GiB hub ${hubCpu} agent ${med('frontend', 'agentS')}; over h2 ${med('h2', 'mbps')} MB/s, hub ${med('h2', 'hubS')} s/GiB`,
          baseline: `direct ${med('direct', 'mbps')} MB/s (cluster CPU ${med('direct', 'agentS')} s/GiB)`,
          ratio: String(ratio),
          target: streams === 1 ? '≥ 0.3; hub ≤ 2.5 s/GiB' : '—',
          result: streams === 1 ? verdict(ratio >= 0.3 && hubCpu <= 2.5) : '—',
        },
      );
      if (!anp) return;
      // issue 26's goals against konnectivity: throughput ×1.2 (1 connection) / ×1.5 (16), and
      // no more CPU per GiB on either side
      const vsAnp = round(med('frontend', 'mbps') / med('anp', 'mbps'), 3);
      const goal = streams === 1 ? 1.2 : 1.5;
      const cpuMet = hubCpu <= med('anp', 'hubS') && med('frontend', 'agentS') <= med('anp', 'agentS');
      emit(
        {
          scenario: `${name}-vs-konnectivity`,
          ratio_vs_konnectivity: vsAnp,
          frontend_mbps: med('frontend', 'mbps'),
          konnectivity_mbps: med('anp', 'mbps'),
          konnectivity_runs: runs.anp.map((x) => round(x.mbps, 1)),
          konnectivity_ratio_vs_direct: round(med('anp', 'mbps') / med('direct', 'mbps'), 3),
          hub_cpu_s_per_gib: hubCpu,
          konnectivity_server_cpu_s_per_gib: med('anp', 'hubS'),
          agent_cpu_s_per_gib: med('frontend', 'agentS'),
          konnectivity_agent_cpu_s_per_gib: med('anp', 'agentS'),
          streams,
          target: { ratio_vs_konnectivity: goal, cpu_per_gib: 'each side ≤ konnectivity' },
          met: vsAnp >= goal && cpuMet,
          loadavg_1m: la(),
        },
        {
          scenario: `${name} vs konnectivity`,
          tunnel: `${med('frontend', 'mbps')} MB/s; CPU s/GiB hub ${hubCpu} agent ${med('frontend', 'agentS')}`,
          baseline: `konnectivity ${med('anp', 'mbps')} MB/s; CPU s/GiB server ${med('anp', 'hubS')} agent ${med('anp', 'agentS')}`,
          ratio: String(vsAnp),
          target: `≥ ${goal}; CPU/GiB ≤ konnectivity`,
          result: `${verdict(vsAnp >= goal)} rate; ${verdict(cpuMet)} CPU`,
        },
      );
    };
    await ctx.group('frontend-bulk-1', () => bulkScenario('frontend-bulk-1', 1));
    await ctx.group('frontend-bulk-16', () => bulkScenario('frontend-bulk-16', 16));

    // ---- new connection → first 1 KiB echo ----------------------------------------------------
    await ctx.group('frontend-connect-rr', async () => {
      const json: Record<string, unknown> = { scenario: 'frontend-connect-rr' };
      const cells: string[] = [];
      let goalLine = '';
      let met = true;
      /** konnectivity's full-handshake latency, and tether's p99 against direct, for issue 26's goals */
      const vsAnp = { p50: 0, p99: 0, tetherP50: 0, tetherP99: 0, directP99: 0, h2P50: 0, h2P99: 0 };
      for (const mode of [
        { key: 'full', resume: false },
        { key: 'resumed', resume: true },
      ]) {
        interface Runs {
          p50: number[];
          p99: number[];
          resumed: number[];
          cipher: string;
          hubUs: number[];
          agentUs: number[];
          clientUs: number[];
        }
        const runs = (): Runs => ({
          p50: [],
          p99: [],
          resumed: [],
          cipher: '',
          hubUs: [],
          agentUs: [],
          clientUs: [],
        });
        const lat: Record<Side, Runs> = { direct: runs(), frontend: runs(), h2: runs(), anp: runs() };
        for (const k of sides) await client.connectRr(paths.echo[k], 50, 1, mode.resume);
        for (let r = 0; r < REPEATS; r++) {
          for (const k of order(r)) {
            const c0 = await cpu(k);
            const res: ConnectRrResult = await client.connectRr(
              paths.echo[k],
              sizes.connectLatency,
              1,
              mode.resume,
            );
            const c1 = await cpu(k);
            const count = res.latencies.length;
            const l = lat[k];
            l.p50.push(percentile(res.latencies, 50));
            l.p99.push(percentile(res.latencies, 99));
            l.resumed.push(res.resumed / count);
            l.cipher = res.cipher;
            l.hubUs.push((c1.hub - c0.hub) / count);
            l.agentUs.push((c1.agent - c0.agent) / count);
            l.clientUs.push(res.cpuMicros / count);
            progress(
              `  connect-rr ${mode.key} ${k}: p50 ${percentile(res.latencies, 50).toFixed(0)} µs p99 ${percentile(res.latencies, 99).toFixed(0)} µs (resumed ${res.resumed}; CPU/conn hub ${((c1.hub - c0.hub) / count).toFixed(0)} µs)`,
            );
          }
        }
        const p = (k: Side, q: 'p50' | 'p99'): number => round(median(lat[k][q]), 0);
        const us = (xs: number[]): number => round(median(xs), 0);
        const s50 = round(p('frontend', 'p50') / p('direct', 'p50'), 2);
        const s99 = round(p('frontend', 'p99') / p('direct', 'p99'), 2);
        const m = mode.key;
        Object.assign(json, {
          [`${m}_ratio_vs_direct`]: round(p('direct', 'p50') / p('frontend', 'p50'), 3),
          [`${m}_p50_slowdown_vs_direct`]: s50,
          [`${m}_p99_slowdown_vs_direct`]: s99,
          [`${m}_frontend_p50_us`]: p('frontend', 'p50'),
          [`${m}_frontend_p99_us`]: p('frontend', 'p99'),
          [`${m}_direct_p50_us`]: p('direct', 'p50'),
          [`${m}_direct_p99_us`]: p('direct', 'p99'),
          [`${m}_frontend_p50_runs`]: lat.frontend.p50.map((x) => round(x, 0)),
          [`${m}_frontend_p99_runs`]: lat.frontend.p99.map((x) => round(x, 0)),
          [`${m}_direct_p50_runs`]: lat.direct.p50.map((x) => round(x, 0)),
          [`${m}_direct_p99_runs`]: lat.direct.p99.map((x) => round(x, 0)),
          [`${m}_resumed_share`]: {
            direct: median(lat.direct.resumed),
            frontend: median(lat.frontend.resumed),
          },
          // CPU per connection (load-insensitive). hub = the proxy-server alone; agent = the cluster
          // process (agent + echo target); for direct, that process runs the TLS listener + echo.
          [`${m}_hub_cpu_us_per_connection`]: us(lat.frontend.hubUs),
          [`${m}_hub_cpu_us_runs`]: lat.frontend.hubUs.map((x) => round(x, 0)),
          [`${m}_agent_cpu_us_per_connection`]: us(lat.frontend.agentUs),
          [`${m}_client_cpu_us_per_connection`]: us(lat.frontend.clientUs),
          [`${m}_direct_server_cpu_us_per_connection`]: us(lat.direct.agentUs),
          [`${m}_direct_client_cpu_us_per_connection`]: us(lat.direct.clientUs),
          cipher: { direct: lat.direct.cipher, frontend: lat.frontend.cipher },
          // over HTTP/2: a new tunnel is a new stream on an open TLS connection
          [`${m}_h2_p50_us`]: p('h2', 'p50'),
          [`${m}_h2_p99_us`]: p('h2', 'p99'),
          [`${m}_h2_hub_cpu_us_per_connection`]: us(lat.h2.hubUs),
        });
        if (anp)
          Object.assign(json, {
            [`${m}_konnectivity_p50_us`]: p('anp', 'p50'),
            [`${m}_konnectivity_p99_us`]: p('anp', 'p99'),
            [`${m}_konnectivity_server_cpu_us_per_connection`]: us(lat.anp.hubUs),
            [`${m}_konnectivity_agent_cpu_us_per_connection`]: us(lat.anp.agentUs),
          });
        cells.push(
          `${m}: p50 ${p('frontend', 'p50')} / p99 ${p('frontend', 'p99')} µs vs direct ${p('direct', 'p50')} / ${p('direct', 'p99')} (×${s50} / ×${s99}), CPU/conn hub ${us(lat.frontend.hubUs)} µs; h2 stream p50 ${p('h2', 'p50')} / p99 ${p('h2', 'p99')} µs`,
        );
        if (m === 'full') {
          met = s50 <= 1.6 && s99 <= 2.5;
          json.ratio_vs_direct = round(p('direct', 'p50') / p('frontend', 'p50'), 3);
          json.p50_slowdown_vs_direct = s50;
          json.p99_slowdown_vs_direct = s99;
          goalLine = `×${s50} / ×${s99}`;
          Object.assign(vsAnp, {
            p50: p('anp', 'p50'),
            p99: p('anp', 'p99'),
            tetherP50: p('frontend', 'p50'),
            tetherP99: p('frontend', 'p99'),
            directP99: p('direct', 'p99'),
            h2P50: p('h2', 'p50'),
            h2P99: p('h2', 'p99'),
          });
        }
      }
      // Opening rate: several openers at once, with resumption (what a pooled hub client does).
      const rates: Record<Side, number[]> = { direct: [], frontend: [], h2: [], anp: [] };
      const hubUs: number[] = [];
      const agentUs: number[] = [];
      const clientUs: number[] = [];
      for (let r = 0; r < REPEATS; r++) {
        for (const k of order(r)) {
          const c0 = await cpu(k);
          const res = await client.connectRr(paths.echo[k], sizes.connectRate, sizes.rateOpeners, true);
          const c1 = await cpu(k);
          const count = res.latencies.length;
          rates[k].push(count / (res.ms / 1000));
          if (k === 'frontend') {
            hubUs.push((c1.hub - c0.hub) / count);
            agentUs.push((c1.agent - c0.agent) / count);
            clientUs.push(res.cpuMicros / count);
          }
          progress(`  connect-rate ${k}: ${(count / (res.ms / 1000)).toFixed(0)}/s`);
        }
      }
      const rate = Math.round(median(rates.frontend));
      const hubCap = Math.round(1e6 / median(hubUs));
      const agentCap = Math.round(1e6 / median(agentUs));
      Object.assign(json, {
        connections_per_second: rate,
        direct_connections_per_second: Math.round(median(rates.direct)),
        h2_tunnels_per_second: Math.round(median(rates.h2)),
        connections_per_second_runs: rates.frontend.map(Math.round),
        direct_connections_per_second_runs: rates.direct.map(Math.round),
        openers: sizes.rateOpeners,
        // The load-insensitive form of the rate: what one core of each process opens per second at
        // the CPU cost measured here (resumed sessions). Client CPU is the third process's share.
        rate_hub_cpu_us_per_connection: round(median(hubUs), 0),
        rate_agent_cpu_us_per_connection: round(median(agentUs), 0),
        rate_client_cpu_us_per_connection: round(median(clientUs), 0),
        hub_connections_per_cpu_second: hubCap,
        agent_connections_per_cpu_second: agentCap,
        target: { p50_slowdown: 1.6, p99_slowdown: 2.5, connections_per_second: 1500 },
        met: met && rate >= 1500,
        loadavg_1m: la(),
      });
      emit(json, {
        scenario: 'frontend-connect-rr',
        tunnel: cells.join('; '),
        baseline: `${rate}/s opened (h2: ${json.h2_tunnels_per_second}/s) vs direct ${json.direct_connections_per_second}/s (${sizes.rateOpeners} openers); per core: hub ${hubCap}/s, agent ${agentCap}/s`,
        ratio: `full handshake ${goalLine}`,
        target: 'p50 ≤ ×1.6, p99 ≤ ×2.5, ≥ 1500/s',
        result: `${verdict(met)} latency; ${verdict(rate >= 1500)} rate`,
      });
      if (!anp) return;
      const anpRate = Math.round(median(rates.anp));
      const latMet = vsAnp.tetherP50 <= vsAnp.p50 && vsAnp.tetherP99 <= 2 * vsAnp.directP99;
      const rateMet = rate >= anpRate && rate >= 1000;
      // the same goals for a client that speaks HTTP/2 to the frontend (a new tunnel is a new stream)
      const h2Rate = Math.round(median(rates.h2));
      const h2Met =
        vsAnp.h2P50 <= vsAnp.p50 && vsAnp.h2P99 <= 2 * vsAnp.directP99 && h2Rate >= anpRate && h2Rate >= 1000;
      emit(
        {
          scenario: 'frontend-connect-rr-vs-konnectivity',
          p50_ratio_vs_konnectivity: round(vsAnp.tetherP50 / vsAnp.p50, 2),
          frontend_p50_us: vsAnp.tetherP50,
          konnectivity_p50_us: vsAnp.p50,
          frontend_p99_us: vsAnp.tetherP99,
          konnectivity_p99_us: vsAnp.p99,
          direct_p99_us: vsAnp.directP99,
          connections_per_second: rate,
          konnectivity_connections_per_second: anpRate,
          konnectivity_connections_per_second_runs: rates.anp.map(Math.round),
          h2_p50_us: vsAnp.h2P50,
          h2_p99_us: vsAnp.h2P99,
          h2_tunnels_per_second: h2Rate,
          h2_met: h2Met,
          target: {
            p50: '≤ konnectivity',
            p99: '≤ 2 × direct',
            connections_per_second: '≥ konnectivity and ≥ 1000',
          },
          met: latMet && rateMet,
          loadavg_1m: la(),
        },
        {
          scenario: 'frontend-connect-rr vs konnectivity',
          tunnel: `p50 ${vsAnp.tetherP50} / p99 ${vsAnp.tetherP99} µs; ${rate}/s; over h2 p50 ${vsAnp.h2P50} / p99 ${vsAnp.h2P99} µs; ${h2Rate}/s`,
          baseline: `konnectivity p50 ${vsAnp.p50} / p99 ${vsAnp.p99} µs; ${anpRate}/s (direct p99 ${vsAnp.directP99} µs)`,
          ratio: `p50 ×${round(vsAnp.tetherP50 / vsAnp.p50, 2)}; rate ×${round(rate / anpRate, 2)} (h2: ×${round(vsAnp.h2P50 / vsAnp.p50, 2)}; ×${round(h2Rate / anpRate, 2)})`,
          target: 'p50 ≤ konnectivity, p99 ≤ 2 × direct; rate ≥ konnectivity, ≥ 1000/s',
          result: `HTTP/1.1: ${verdict(latMet)} latency, ${verdict(rateMet)} rate; h2: ${verdict(h2Met)}`,
        },
      );
    });

    // ---- 1 KiB round trip on an open connection ------------------------------------------------
    await ctx.group('frontend-rr-small', async () => {
      const out: Record<Side, { p50: number[]; p99: number[] }> = {
        direct: { p50: [], p99: [] },
        frontend: { p50: [], p99: [] },
        h2: { p50: [], p99: [] },
        anp: { p50: [], p99: [] },
      };
      const hubUs: number[] = [];
      const agentUs: number[] = [];
      for (const k of sides) await client.rr(paths.echo[k], 0, sizes.rrWarmup);
      for (let r = 0; r < REPEATS; r++) {
        for (const k of order(r)) {
          const c0 = await cpu(k);
          const lat = await client.rr(paths.echo[k], sizes.rrIterations, 50);
          const c1 = await cpu(k);
          if (k === 'frontend') {
            hubUs.push((c1.hub - c0.hub) / (sizes.rrIterations + 50));
            agentUs.push((c1.agent - c0.agent) / (sizes.rrIterations + 50));
          }
          out[k].p50.push(percentile(lat, 50));
          out[k].p99.push(percentile(lat, 99));
          progress(
            `  rr ${k}: p50 ${percentile(lat, 50).toFixed(0)} µs p99 ${percentile(lat, 99).toFixed(0)} µs`,
          );
        }
      }
      const p = (k: Side, q: 'p50' | 'p99'): number => round(median(out[k][q]), 1);
      const s99 = round(p('frontend', 'p99') / p('direct', 'p99'), 2);
      emit(
        {
          scenario: 'frontend-rr-small',
          ratio_vs_direct: round(p('direct', 'p50') / p('frontend', 'p50'), 3),
          p50_slowdown_vs_direct: round(p('frontend', 'p50') / p('direct', 'p50'), 2),
          p99_slowdown_vs_direct: s99,
          frontend_p50_us: p('frontend', 'p50'),
          frontend_p99_us: p('frontend', 'p99'),
          h2_p50_us: p('h2', 'p50'),
          h2_p99_us: p('h2', 'p99'),
          direct_p50_us: p('direct', 'p50'),
          direct_p99_us: p('direct', 'p99'),
          frontend_p50_runs: out.frontend.p50.map((x) => round(x, 0)),
          frontend_p99_runs: out.frontend.p99.map((x) => round(x, 0)),
          direct_p50_runs: out.direct.p50.map((x) => round(x, 0)),
          direct_p99_runs: out.direct.p99.map((x) => round(x, 0)),
          // CPU per round trip (includes a connection setup spread over the iterations)
          hub_cpu_us_per_round_trip: round(median(hubUs), 1),
          agent_cpu_us_per_round_trip: round(median(agentUs), 1),
          iterations: sizes.rrIterations,
          request_bytes: 1024,
          target: { p99_slowdown: 2 },
          met: s99 <= 2,
          loadavg_1m: la(),
        },
        {
          scenario: 'frontend-rr-small',
          tunnel: `p50 ${p('frontend', 'p50')} / p99 ${p('frontend', 'p99')} µs; CPU/round trip hub ${round(median(hubUs), 1)} µs agent ${round(median(agentUs), 1)} µs`,
          baseline: `direct ${p('direct', 'p50')} / ${p('direct', 'p99')} µs`,
          ratio: `p99 ×${s99}`,
          target: 'p99 ≤ ×2',
          result: verdict(s99 <= 2),
        },
      );
      if (anp)
        emit(
          {
            scenario: 'frontend-rr-small-vs-konnectivity',
            frontend_p50_us: p('frontend', 'p50'),
            frontend_p99_us: p('frontend', 'p99'),
            konnectivity_p50_us: p('anp', 'p50'),
            konnectivity_p99_us: p('anp', 'p99'),
            konnectivity_p99_slowdown_vs_direct: round(p('anp', 'p99') / p('direct', 'p99'), 2),
            loadavg_1m: la(),
          },
          {
            scenario: 'frontend-rr-small vs konnectivity',
            tunnel: `p50 ${p('frontend', 'p50')} / p99 ${p('frontend', 'p99')} µs`,
            baseline: `konnectivity ${p('anp', 'p50')} / ${p('anp', 'p99')} µs`,
            ratio: `p50 ×${round(p('frontend', 'p50') / p('anp', 'p50'), 2)} / p99 ×${round(p('frontend', 'p99') / p('anp', 'p99'), 2)}`,
            target: '(goal: p99 ≤ ×2 direct, above)',
            result: '—',
          },
        );
    });
  } finally {
    await client.shutdown();
    await frontend.stop();
    await anp?.stop();
  }
}
