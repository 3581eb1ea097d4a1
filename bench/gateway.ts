// Gateway benchmark on real control planes: every figure through the gateway is set against the same
// operation straight to the managed kube-apiserver, measured in the same run under the same load.
//
//   npm run bench -- gateway [--quick] [--cpu-prof=DIR]
//
// Scenarios: gateway-get-small-{hub,gateway-only} (goals 1.5× and 1.15× direct p50 and p99),
// gateway-watch-100-{hub,gateway-only} (goal 2× direct), gateway-list-2000, and the references;
// user-server-{get-small,watch-100}: cluster-proxy's user-server (`/<cluster>/…`, cluster1's
// ServiceAccount token passed through) on the same tunnel, against the same direct baseline.
//
// Paths (bench/lib/cluster-gateway-stack.ts): `hub` = client → hub kube-apiserver (authn, RBAC,
// aggregator) → gateway (front-proxy auth, cached SubjectAccessReview) → tunnel stream
// (proxy-server ⇄ proxy-agent, reversed HTTP/2 over mTLS) → cluster1 kube-apiserver, what kubectl
// with a gateway kubeconfig does; `gateway-only` = the same without the hub (front-proxy certificate
// straight to the gateway port); `direct` = client → cluster1 (mTLS admin, keep-alive), the baseline.
// The client, gateway, proxy-server and proxy-agent share this process; the apiservers are processes
// of their own. For reference, where the time goes outside the gateway: the hub's own GET (hub-local),
// a trivial aggregated endpoint (the gateway's static discovery document, through the hub and
// straight), and cluster1 asked with the gateway's token and impersonation headers.
//
// Load: get-small is sequential (concurrency 1, one keep-alive connection per path), rounds of 50
// requests per path taking turns, so every path sees the same machine load; each JSON line carries
// the 1-minute load average. watch-100: 100 watches opened at once on fresh client connections,
// timed until every one has received its initial event (resourceVersion=0 lists the existing
// ConfigMap as ADDED), paths one after the other, three rounds each, medians.
//
// --cpu-prof=DIR: after the measurements, each path is run once more under the in-process V8
// profiler; DIR/<phase>.cpuprofile are what the gateway, tunnel and client did meanwhile.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import type { Pool } from 'undici';
import {
  BENCH_NAMESPACE,
  type ClientPath,
  type GatewayBenchStack,
  startGatewayBenchStack,
} from './lib/cluster-gateway-stack.ts';
import { type BenchOptions, flag, median, nowMs, percentile, printTable, round } from './lib/stats.ts';

const NS = BENCH_NAMESPACE;
const smallPath = `/api/v1/namespaces/${NS}/configmaps/small`;
const discoveryPath = '/apis/cluster.core.oam.dev/v1alpha1';

interface Row {
  scenario: string;
  path: string;
  figures: string;
  ratio: string;
}

async function get(pool: Pool, path: string, headers: Record<string, string>): Promise<string> {
  const res = await pool.request({
    method: 'GET',
    path,
    headers: { accept: 'application/json', ...headers },
  });
  const body = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${body.slice(0, 200)}`);
  return body;
}

interface Lane {
  client: ClientPath;
  pool: Pool;
  path: string;
  samples: number[];
  /** CPU ms spent while this lane ran: this process (client, gateway, tunnel) and the control planes */
  cpu: { bench: number; controlPlanes: number };
}

type CpuClock = () => { bench: number; controlPlanes: number };

/** Sequential GETs, `rounds` × `perRound` per lane, lanes taking turns (rotating order) each round. */
async function interleavedLatencies(
  lanes: Lane[],
  rounds: number,
  perRound: number,
  cpuMs: CpuClock,
): Promise<void> {
  for (const lane of lanes) for (let i = 0; i < 30; i++) await get(lane.pool, lane.path, lane.client.headers);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < lanes.length; k++) {
      const lane = lanes[(r + k) % lanes.length] as Lane;
      const before = cpuMs();
      for (let i = 0; i < perRound; i++) {
        const t = nowMs();
        await get(lane.pool, lane.path, lane.client.headers);
        lane.samples.push(nowMs() - t);
      }
      const after = cpuMs();
      lane.cpu.bench += after.bench - before.bench;
      lane.cpu.controlPlanes += after.controlPlanes - before.controlPlanes;
    }
  }
}

/** CPU ms per request of a lane (load-insensitive, unlike latency). */
function cpuPerRequest(l: Lane): { bench: number; control_planes: number; total: number } {
  const n = l.samples.length;
  return {
    bench: round(l.cpu.bench / n, 3),
    control_planes: round(l.cpu.controlPlanes / n, 3),
    total: round((l.cpu.bench + l.cpu.controlPlanes) / n, 3),
  };
}

/**
 * Opens `count` watches at once on a fresh pool; resolves with the time until every watch has
 * received an event naming `initialName` (its initial ADDED), then closes them.
 */
async function watchesEstablished(
  client: ClientPath,
  path: string,
  count: number,
  initialName: string,
): Promise<number> {
  const pool = client.pool(count + 8);
  const aborts: AbortController[] = [];
  let done = 0;
  const t0 = nowMs();
  try {
    await Promise.all(
      Array.from({ length: count }, async () => {
        const abort = new AbortController();
        aborts.push(abort);
        const res = await pool.request({
          method: 'GET',
          path: client.path(path),
          headers: client.headers,
          signal: abort.signal,
        });
        if (res.statusCode !== 200) throw new Error(`watch ${path}: ${res.statusCode}`);
        await new Promise<void>((resolve, reject) => {
          // Only the tail of the previous chunk is kept: enough for a match split between chunks.
          const needle = `"name":"${initialName}"`;
          let tail = '';
          const onData = (d: Buffer): void => {
            const text = tail + d.toString('latin1');
            tail = text.slice(-needle.length);
            if (text.includes(needle)) {
              res.body.off('data', onData);
              res.body.resume();
              done++;
              resolve();
            }
          };
          res.body.on('data', onData);
          res.body.once('error', reject);
          res.body.once('end', () => reject(new Error(`watch ${path} ended before its initial event`)));
        });
      }),
    );
    return nowMs() - t0;
  } finally {
    if (done < count) process.stderr.write(`watch: ${done}/${count} got their initial event\n`);
    for (const a of aborts) a.abort();
    await pool.destroy().catch(() => {});
  }
}

/** The in-process V8 profiler, one .cpuprofile per phase (what the gateway path does in this process). */
async function phaseProfiler(dir: string): Promise<{
  profile<T>(phase: string, work: () => Promise<T>): Promise<T>;
  close(): void;
}> {
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  return {
    async profile(phase, work) {
      await session.post('Profiler.start');
      try {
        return await work();
      } finally {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(join(dir, `${phase}.cpuprofile`), JSON.stringify(profile));
      }
    },
    close: () => session.disconnect(),
  };
}

export async function run(opts: BenchOptions): Promise<void> {
  const quick = opts.quick;
  const cpuProf = flag(opts.args, 'cpu-prof');
  const t0 = nowMs();
  const progress = (msg: string): void => {
    process.stderr.write(`[gateway ${((nowMs() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
  };
  const rows: Row[] = [];
  const emit = (json: Record<string, unknown>, row?: Row): void => {
    console.log(
      JSON.stringify({ bench: 'gateway', ...json, quick, loadavg: loadavg().map((x) => round(x)) }),
    );
    if (row) rows.push(row);
  };
  const stack: GatewayBenchStack = await startGatewayBenchStack(progress);
  const pools: Pool[] = [];
  try {
    const { c1, hubCore } = stack;
    await c1.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: 'small' }, data: { a: 'b' } },
    });
    await hubCore.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'small' } } });
    const lane = (client: ClientPath, path: string): Lane => {
      const pool = client.pool(1);
      pools.push(pool);
      return { client, pool, path: client.path(path), samples: [], cpu: { bench: 0, controlPlanes: 0 } };
    };

    // get-small and the references beside it, interleaved.
    const lanes = {
      direct: lane(stack.direct, smallPath),
      hub: lane(stack.hub, smallPath),
      gatewayOnly: lane(stack.gatewayOnly, smallPath),
      userServer: lane(stack.userServer, smallPath),
      impersonating: lane(stack.directImpersonating, smallPath),
      hubLocal: lane(stack.hubLocal, '/api/v1/namespaces/default/configmaps/small'),
      aggregatedTrivial: lane(stack.hubLocal, discoveryPath),
      gatewayTrivial: lane({ ...stack.gatewayOnly, path: (p) => p }, discoveryPath),
    };
    const rounds = quick ? 6 : 20;
    const perRound = 50;
    progress(
      `get-small: ${rounds * perRound} sequential GETs per path, ${Object.keys(lanes).length} paths interleaved`,
    );
    await interleavedLatencies(Object.values(lanes), rounds, perRound, stack.cpuMs);
    const st = (l: Lane) => ({
      p50: round(percentile(l.samples, 50), 3),
      p99: round(percentile(l.samples, 99), 3),
    });
    const d = st(lanes.direct);
    const dCpu = cpuPerRequest(lanes.direct);
    const load = { concurrency: 1, requests_per_path: rounds * perRound, interleaved_rounds: rounds };
    for (const [scenario, l, goal, label] of [
      ['gateway-get-small-hub', lanes.hub, 1.5, 'hub+aggregator+gateway+tunnel'],
      ['gateway-get-small-gateway-only', lanes.gatewayOnly, 1.15, 'gateway+tunnel (no hub)'],
      ['user-server-get-small', lanes.userServer, undefined, 'user-server+tunnel, bearer passed through'],
      [
        'gateway-get-small-impersonating',
        lanes.impersonating,
        undefined,
        'direct, gateway token + impersonation',
      ],
      ['gateway-get-small-hub-local', lanes.hubLocal, undefined, 'hub GET of its own ConfigMap'],
    ] as const) {
      const s = st(l);
      const r50 = round(s.p50 / d.p50);
      const r99 = round(s.p99 / d.p99);
      const cpu = cpuPerRequest(l);
      emit(
        {
          scenario,
          ratio_vs_direct: r50,
          ratio_vs_direct_p99: r99,
          ms: s,
          direct_ms: d,
          cpu_ms_per_request: cpu,
          direct_cpu_ms_per_request: dCpu,
          cpu_ratio_vs_direct: round(cpu.total / dCpu.total),
          ...(goal ? { goal: `<= ${goal}x p50 and p99`, met: r50 <= goal && r99 <= goal } : {}),
          load,
        },
        {
          scenario,
          path: `${label} vs direct`,
          figures: `p50 ${s.p50} vs ${d.p50} ms; p99 ${s.p99} vs ${d.p99} ms`,
          ratio: `${r50}× p50, ${r99}× p99`,
        },
      );
    }
    const agg = st(lanes.aggregatedTrivial);
    const gwt = st(lanes.gatewayTrivial);
    emit(
      {
        scenario: 'gateway-aggregation-trivial',
        ratio_vs_direct: round(agg.p50 / d.p50),
        ratio_vs_direct_p99: round(agg.p99 / d.p99),
        ms: agg,
        gateway_only_ms: gwt,
        direct_ms: d,
        aggregation_cost_p50_ms: round(agg.p50 - gwt.p50, 3),
        load,
      },
      {
        scenario: 'gateway-aggregation-trivial',
        path: `hub aggregator → gateway discovery doc vs straight to gateway`,
        figures: `p50 ${agg.p50} vs ${gwt.p50} ms; p99 ${agg.p99} vs ${gwt.p99} ms`,
        ratio: `${round(agg.p50 / d.p50)}× direct GET p50`,
      },
    );

    // watch-100
    const watches = 100;
    const watchPath = `/api/v1/namespaces/${NS}/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=true`;
    const reps = 3;
    progress(`watch-${watches}: ${watches} watches at once, ${reps} rounds per path`);
    const established: Record<string, number[]> = { direct: [], hub: [], gatewayOnly: [], userServer: [] };
    for (let r = 0; r < reps; r++) {
      for (const [key, client] of [
        ['direct', stack.direct],
        ['hub', stack.hub],
        ['gatewayOnly', stack.gatewayOnly],
        ['userServer', stack.userServer],
      ] as const) {
        established[key]?.push(await watchesEstablished(client, watchPath, watches, 'small'));
      }
    }
    const wd = round(median(established.direct ?? []), 1);
    for (const [scenario, key, goal, label] of [
      [`gateway-watch-${watches}-hub`, 'hub', 2, 'hub+aggregator+gateway+tunnel'],
      [`gateway-watch-${watches}-gateway-only`, 'gatewayOnly', undefined, 'gateway+tunnel (no hub)'],
      [`user-server-watch-${watches}`, 'userServer', undefined, 'user-server+tunnel, bearer passed through'],
    ] as const) {
      const xs = established[key] ?? [];
      const m = round(median(xs), 1);
      const ratio = round(m / wd);
      emit(
        {
          scenario,
          ratio_vs_direct: ratio,
          established_ms: m,
          direct_established_ms: wd,
          runs_ms: xs.map((x) => round(x, 1)),
          direct_runs_ms: (established.direct ?? []).map((x) => round(x, 1)),
          ...(goal ? { goal: `<= ${goal}x`, met: ratio <= goal } : {}),
          load: { watches, concurrency: watches, rounds: reps, fresh_client_connections: true },
        },
        {
          scenario,
          path: `${label} vs direct`,
          figures: `all ${watches} got their initial event: ${m} vs ${wd} ms (median of ${reps})`,
          ratio: `${ratio}×`,
        },
      );
    }

    if (cpuProf !== undefined) {
      const dir = resolvePath(cpuProf || 'bench-profiles');
      progress(`cpu profiles of each path to ${dir}`);
      const prof = await phaseProfiler(dir);
      try {
        for (const [phase, l] of [
          ['get-small-direct', lanes.direct],
          ['get-small-gateway-only', lanes.gatewayOnly],
          ['get-small-hub', lanes.hub],
        ] as const) {
          await prof.profile(phase, async () => {
            for (let i = 0; i < 500; i++) await get(l.pool, l.path, l.client.headers);
          });
        }
        await prof.profile('watch-100-hub', () => watchesEstablished(stack.hub, watchPath, watches, 'small'));
        await prof.profile('watch-100-gateway-only', () =>
          watchesEstablished(stack.gatewayOnly, watchPath, watches, 'small'),
        );
      } finally {
        prof.close();
      }
    }

    // list-2000: one unpaginated list of 2 000 ConfigMaps of 512 B (streaming a large body).
    const count = 2000;
    progress(`list-${count}: creating ${count} ConfigMaps`);
    const payload = 'x'.repeat(512);
    for (let i = 0; i < count; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, count - i) }, (_, j) =>
          c1.createNamespacedConfigMap({
            namespace: NS,
            body: { metadata: { name: `item-${i + j}` }, data: { payload } },
          }),
        ),
      );
    }
    const listReps = quick ? 3 : 10;
    const listLanes = [
      lane(stack.direct, `/api/v1/namespaces/${NS}/configmaps`),
      lane(stack.hub, `/api/v1/namespaces/${NS}/configmaps`),
    ];
    await interleavedLatencies(listLanes, listReps, 1, stack.cpuMs);
    const [ld, lh] = listLanes.map((l) => round(median(l.samples), 1)) as [number, number];
    emit(
      {
        scenario: `gateway-list-${count}`,
        ratio_vs_direct: round(lh / ld),
        median_ms: lh,
        direct_median_ms: ld,
        load: { concurrency: 1, reps: listReps },
      },
      {
        scenario: `gateway-list-${count}`,
        path: 'hub+aggregator+gateway+tunnel vs direct',
        figures: `median ${lh} vs ${ld} ms`,
        ratio: `${round(lh / ld)}×`,
      },
    );

    console.log('');
    console.log(
      `gateway benchmark (${quick ? 'quick' : 'full'}); client, gateway, proxy-server and agent in one process; load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    printTable(
      ['scenario', 'path', 'figures', 'ratio'],
      rows.map((r) => [r.scenario, r.path, r.figures, r.ratio]),
    );
  } finally {
    await Promise.all(pools.map((p) => p.destroy().catch(() => {})));
    await stack.stop();
  }
}
