import type { CertificateAuthority, KeyPairPem } from '../../src/pki/index.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { ConnectFrontend } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import type { ClusterApi, TargetPorts } from './cluster-side.ts';
import { type Endpoint, RemoteFrontendClient } from './frontend-client.ts';
import { runLatencyScenarios } from './frontend-latency.ts';
import { type FrontendRun, la, REPEATS, type Side, type Sizes, verdict } from './frontend-run.ts';
import { TlsFloorServer } from './frontend-tls-floor.ts';
import { Konnectivity, procCpu } from './konnectivity.ts';
import { machineBusy, machineCores, machineCpu } from './machine-cpu.ts';
import { gc, median, nowMs, round, sleep } from './stats.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const pct = (f: number): string => `${Math.round(f * 100)} %`;

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
        grpc: { ...via('bulk', ctx.ports.bulk), grpc: true },
        anp: viaAnp(ctx.ports.bulk),
      },
      echo: {
        direct: { port: ctx.ports.tlsEcho, identity: 'direct' },
        frontend: via('echo', ctx.ports.echo),
        h2: { ...via('echo', ctx.ports.echo), h2: true },
        grpc: { ...via('echo', ctx.ports.echo), grpc: true },
        anp: viaAnp(ctx.ports.echo),
      },
    };
    /** the paths measured, interleaved: each repeat starts one later in this list */
    const sides: Side[] = anp
      ? ['direct', 'frontend', 'h2', 'grpc', 'anp']
      : ['direct', 'frontend', 'h2', 'grpc'];
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
      const runs: Record<
        Side,
        Array<{ mbps: number; hubS: number; agentS: number; clientS: number; busy: number; machineS: number }>
      > = {
        direct: [],
        frontend: [],
        h2: [],
        grpc: [],
        anp: [],
      };
      for (const k of sides) await client.bulk(paths.bulk[k], streams, per / 4);
      for (let r = 0; r < REPEATS; r++) {
        for (const k of order(r)) {
          const c0 = await cpu(k);
          const m0 = machineCpu();
          const res = await client.bulk(paths.bulk[k], streams, per);
          const m1 = machineCpu();
          const c1 = await cpu(k);
          const gib = bytes / GiB;
          const machine = machineBusy(m0, m1);
          runs[k].push({
            mbps: bytes / 1e3 / res.ms,
            hubS: (c1.hub - c0.hub) / 1e6 / gib,
            agentS: (c1.agent - c0.agent) / 1e6 / gib,
            clientS: res.cpuMicros / 1e6 / gib,
            busy: machine.busy,
            machineS: machine.cpuS / gib,
          });
          progress(`  ${name} ${k}: ${(bytes / 1e3 / res.ms).toFixed(0)} MB/s`);
          await sleep(100);
        }
      }
      const med = (k: Side, f: 'mbps' | 'hubS' | 'agentS' | 'clientS' | 'busy' | 'machineS'): number =>
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
          grpc_mbps: med('grpc', 'mbps'),
          grpc_ratio_vs_direct: round(med('grpc', 'mbps') / med('direct', 'mbps'), 3),
          grpc_hub_cpu_s_per_gib: med('grpc', 'hubS'),
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
          tunnel: `${med('frontend', 'mbps')} MB/s; CPU s/GiB hub ${hubCpu} agent ${med('frontend', 'agentS')}; over h2 ${med('h2', 'mbps')} MB/s, hub ${med('h2', 'hubS')} s/GiB; gRPC ${med('grpc', 'mbps')} MB/s (×${round(med('grpc', 'mbps') / med('direct', 'mbps'), 3)} direct), hub ${med('grpc', 'hubS')} s/GiB`,
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
          // the client process (its TLS to the frontend), the same program on both paths
          client_cpu_s_per_gib: med('frontend', 'clientS'),
          konnectivity_client_cpu_s_per_gib: med('anp', 'clientS'),
          // every process on the machine (clients and targets too), per GiB, and how busy its cores were
          machine_cpu_s_per_gib: med('frontend', 'machineS'),
          konnectivity_machine_cpu_s_per_gib: med('anp', 'machineS'),
          machine_busy: med('frontend', 'busy'),
          konnectivity_machine_busy: med('anp', 'busy'),
          machine_cores: machineCores,
          streams,
          target: { ratio_vs_konnectivity: goal, cpu_per_gib: 'each side ≤ konnectivity' },
          met: vsAnp >= goal && cpuMet,
          loadavg_1m: la(),
        },
        {
          scenario: `${name} vs konnectivity`,
          tunnel: `${med('frontend', 'mbps')} MB/s; CPU s/GiB hub ${hubCpu} agent ${med('frontend', 'agentS')} client ${med('frontend', 'clientS')}; machine ${med('frontend', 'machineS')} s/GiB, ${pct(med('frontend', 'busy'))} busy`,
          baseline: `konnectivity ${med('anp', 'mbps')} MB/s; CPU s/GiB server ${med('anp', 'hubS')} agent ${med('anp', 'agentS')} client ${med('anp', 'clientS')}; machine ${med('anp', 'machineS')} s/GiB, ${pct(med('anp', 'busy'))} busy`,
          ratio: String(vsAnp),
          target: `≥ ${goal}; CPU/GiB ≤ konnectivity`,
          result: `${verdict(vsAnp >= goal)} rate; ${verdict(cpuMet)} CPU`,
        },
      );
    };
    await ctx.group('frontend-bulk-1', () => bulkScenario('frontend-bulk-1', 1));
    await ctx.group('frontend-bulk-16', () => bulkScenario('frontend-bulk-16', 16));

    await runLatencyScenarios({ ctx, sizes, client, paths, sides, order, cpu, anp } satisfies FrontendRun);
  } finally {
    await client.shutdown();
    await frontend.stop();
    await anp?.stop();
  }
}
