// Long watch soak on the path users take: N kubectl-style watches on the hub
// (`clustergateways/<cluster>/proxy/api/v1/...?watch=1`) → aggregator → `tether gateway` process →
// CONNECT frontend of a `tether proxy-server` process → tunnel → `tether proxy-agent` process
// (through squid) → cluster1's kube-apiserver, held for M minutes while one ConfigMap is updated
// at a steady rate. Every watch must see every update exactly once and in order.
//
//   npm run bench -- soak [--quick] [--watches=1000] [--minutes=10] [--rate=2]
//
// Reported (each against a baseline taken in the same run):
// - delivery delay (update sent → event seen) through the gateway, p50 / p99, against the same
//   number of updates seen by a small set of direct watches on cluster1 (the baseline);
// - fds, RSS and V8 heap after a forced GC of the gateway and proxy-server processes before the
//   watches, at the peak while they run, and after they close (the baseline is "before");
// - RSS drift over the hold: first sample after opening vs last sample before closing (leaks grow
//   with time, not with the number of watches);
// - reconnects, duplicates and gaps over all watches (all should be 0).
// `--quick` is 200 watches for 1 minute.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'undici';
import { startEnvironment } from '../src/localenv/environment.ts';
import type { ControlPlaneInfo } from '../src/localenv/types.ts';
import { pollUntil } from '../src/wait.ts';
import { mb, procSample } from './lib/proc-stats.ts';
import { adminOrigin, createNamespace, holding } from './lib/soak-probes.ts';
import { startSoakStack } from './lib/soak-stack.ts';
import { originPool, UpdateStream, WatchSet } from './lib/soak-watch.ts';
import { type BenchOptions, flag, percentile, printTable, round, sleep } from './lib/stats.ts';

const NS = 'bench-soak';
const CM = 'soaked';
/** direct watches on cluster1 that give the delivery-delay baseline */
const DIRECT_WATCHES = 20;

function positive(args: string[], name: string, fallback: number): number {
  const raw = flag(args, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got "${raw}"`);
  return n;
}

export async function run(opts: BenchOptions): Promise<void> {
  const watchCount = Math.round(positive(opts.args, 'watches', opts.quick ? 200 : 1000));
  const minutes = positive(opts.args, 'minutes', opts.quick ? 1 : 10);
  const rate = positive(opts.args, 'rate', 2);
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-soak-'));
  const progress = (line: string) => process.stderr.write(`[soak] ${line}\n`);
  const env = await startEnvironment({ clusters: 1, dir: join(dir, 'env'), progress, mode: 'tunnel' });
  const pools: Pool[] = [];
  let stack: Awaited<ReturnType<typeof startSoakStack>> | undefined;
  try {
    const cluster1 = env.clusters[0] as ControlPlaneInfo;
    const tunnel = env.tunnel;
    if (!tunnel) throw new Error('the environment started without squid');
    stack = await startSoakStack({
      dir: join(dir, 'stack'),
      hub: env.hub,
      managed: cluster1,
      cluster: 'soak',
      squidUrl: tunnel.squidUrl,
      maxTunnelsPerCaller: watchCount + 100,
      inspect: true,
      readyTimeoutMs: 120_000,
    });
    const s = stack;
    const hub = originPool(adminOrigin(env.hub), watchCount + 8);
    const direct = originPool(adminOrigin(cluster1), DIRECT_WATCHES + 4);
    pools.push(hub, direct);
    await createNamespace(direct, NS);
    const updates = new UpdateStream(direct, NS, CM);
    const rv = await updates.create();
    const rest = (from: string) =>
      `/api/v1/namespaces/${NS}/configmaps?watch=1&fieldSelector=metadata.name%3D${CM}&resourceVersion=${from}`;

    // Warm-up watches so lazily built state is part of the baseline.
    const warm = new WatchSet({
      pool: hub,
      path: (v) => s.gatewayPath(rest(v)),
      count: 4,
      resourceVersion: rv,
      sentAt: () => undefined,
    });
    await warm.open();
    warm.close();
    await sleep(3000);
    const before = { gateway: await holding(s.gateway), server: await holding(s.proxyServer) };
    progress(`opening ${watchCount} watches through the gateway and ${DIRECT_WATCHES} direct ones…`);
    const viaGateway = new WatchSet({
      pool: hub,
      path: (v) => s.gatewayPath(rest(v)),
      count: watchCount,
      resourceVersion: rv,
      sentAt: updates.sentAt,
      openTimeoutMs: 180_000,
    });
    const directSet = new WatchSet({
      pool: direct,
      path: rest,
      count: DIRECT_WATCHES,
      resourceVersion: rv,
      sentAt: updates.sentAt,
    });
    const openMs = await viaGateway.open();
    await directSet.open();
    progress(
      `${watchCount} watches open in ${(openMs / 1000).toFixed(1)} s; holding for ${minutes} min at ${rate} updates/s`,
    );

    const peak = { gateway: procSample(s.gateway.pid), server: procSample(s.proxyServer.pid) };
    const first = { gateway: peak.gateway, server: peak.server };
    let lastSample = first;
    const samplePeak = () => {
      const now = { gateway: procSample(s.gateway.pid), server: procSample(s.proxyServer.pid) };
      for (const k of ['gateway', 'server'] as const) {
        if (now[k].rss > peak[k].rss) peak[k] = { ...peak[k], rss: now[k].rss };
        if (now[k].fds > peak[k].fds) peak[k] = { ...peak[k], fds: now[k].fds };
      }
      lastSample = now;
    };
    const holdMs = minutes * 60_000;
    const start = Date.now();
    let nextSample = start;
    const cpuBefore = loadavg()[0] ?? 0;
    while (Date.now() - start < holdMs) {
      const t = Date.now();
      await updates.next();
      if (t >= nextSample) {
        samplePeak();
        nextSample = t + 10_000;
        const seen = viaGateway.seenBy(updates.count - 5);
        progress(
          `${Math.round((t - start) / 1000)} s: ${updates.count} updates; ${seen}/${watchCount} watches within 5 of the latest; gateway rss ${mb(lastSample.gateway.rss)}, proxy-server rss ${mb(lastSample.server.rss)}`,
        );
      }
      const wait = 1000 / rate - (Date.now() - t);
      if (wait > 0) await sleep(wait);
    }
    const total = updates.count;
    await pollUntil(
      () => viaGateway.seenBy(total) === watchCount && directSet.seenBy(total) === DIRECT_WATCHES,
      {
        timeoutMs: 120_000,
        intervalMs: 200,
        description: `every watch to see update ${total} (${viaGateway.seenBy(total)}/${watchCount} through the gateway)`,
      },
    ).catch((err: Error) => progress(`not every watch caught up: ${err.message}`));
    samplePeak();
    const endOfHold = lastSample;
    const totals = viaGateway.totals();
    viaGateway.close();
    directSet.close();
    await sleep(5000);
    const after = await pollUntil(
      async () => {
        const a = { gateway: await holding(s.gateway), server: await holding(s.proxyServer) };
        const back = (k: 'gateway' | 'server') => a[k].sample.fds <= before[k].sample.fds + 12;
        return back('gateway') && back('server') ? a : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 2000, description: 'fds to return to baseline' },
    ).catch(async () => ({ gateway: await holding(s.gateway), server: await holding(s.proxyServer) }));

    const ms = (x: number) => `${round(x, 1)} ms`;
    const g50 = percentile(viaGateway.delays, 50);
    const g99 = percentile(viaGateway.delays, 99);
    const d50 = percentile(directSet.delays, 50);
    const d99 = percentile(directSet.delays, 99);
    process.stdout.write(
      `\nsoak: ${watchCount} watches through the gateway for ${minutes} min, ${total} updates (${rate}/s), load average ${round(cpuBefore, 2)} → ${round(loadavg()[0] ?? 0, 2)}\n` +
        `watches opened in ${(openMs / 1000).toFixed(1)} s; events delivered in order ${totals.inOrder} of ${watchCount * total}; duplicates ${totals.duplicates}, gaps ${totals.gaps}, reconnects ${totals.reconnects}\n` +
        (viaGateway.problems().length ? `first problems: ${viaGateway.problems().join('; ')}\n` : '') +
        '\n',
    );
    printTable(
      ['figure', 'through the gateway', `baseline (${DIRECT_WATCHES} direct watches)`, 'ratio'],
      [
        ['delivery delay p50', ms(g50), ms(d50), `${round(g50 / d50, 2)}×`],
        ['delivery delay p99', ms(g99), ms(d99), `${round(g99 / d99, 2)}×`],
      ],
    );
    const row = (name: string, k: 'gateway' | 'server'): string[] => [
      name,
      `${before[k].sample.fds} → ${peak[k].fds} → ${after[k].sample.fds}`,
      `${mb(before[k].sample.rss)} → ${mb(peak[k].rss)} → ${mb(after[k].sample.rss)}`,
      `${mb(first[k].rss)} → ${mb(endOfHold[k].rss)}`,
      `${mb(before[k].heap)} → ${mb(after[k].heap)} (${round(after[k].heap / before[k].heap, 2)}×)`,
    ];
    process.stdout.write('\n');
    printTable(
      [
        'process',
        'fds before → peak → after',
        'RSS before → peak → after',
        'RSS drift over the hold',
        'heap after GC before → after',
      ],
      [row('tether gateway', 'gateway'), row('tether proxy-server', 'server')],
    );
  } finally {
    for (const p of pools) await p.destroy().catch(() => {});
    await stack?.stop().catch(() => {});
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
