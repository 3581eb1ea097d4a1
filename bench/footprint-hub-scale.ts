// Hub memory per managed cluster (`npm run bench -- footprint --hub-scale [--quick] [--steps=0,100,…]`):
// `tether hub` (bundled, as the image runs it) on a real hub control plane while simulated managed
// clusters are added in steps — ManagedClusters accepted by the hub (hubAcceptsClient), no agents —
// so the hub does its per-cluster work (cluster namespace, RBAC, lease watchdog, taints, informer
// caches). After each step, once every cluster namespace exists and the hub has idled `--settle`
// seconds (default 10), its RSS and, after a forced GC, its V8 heap. Reported as MB per 100
// clusters (the slope from the first to the last step) and per step, with the step-0 hub as the
// same run's baseline. Full: 0, 100, 250, 500, 1000 clusters; --quick: 0, 100, 200.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ManagedCluster, managedClusterResource } from '../src/api/index.ts';
import { buildBundle } from '../src/image/bundle.ts';
import { loadKubeconfig, namespaceResource, ResourceClient } from '../src/kube/index.ts';
import { startEnvironment } from '../src/localenv/environment.ts';
import { freePort, localChildEnv } from '../src/localenv/process.ts';
import { pollUntil } from '../src/wait.ts';
import { heapAfterGc, inspectorUrl } from './lib/inspector-gc.ts';
import { rssParts, spawnUntilReady } from './lib/process-footprint.ts';
import { type BenchOptions, flag } from './lib/stats.ts';

const MB = 1e6;

interface Step {
  clusters: number;
  rssMb: number;
  anonMb: number;
  heapMb: number;
}

export async function runHubScale(opts: BenchOptions): Promise<void> {
  const steps = (flag(opts.args, 'steps') ?? (opts.quick ? '0,100,200' : '0,100,250,500,1000'))
    .split(',')
    .map(Number);
  const settleMs = Number(flag(opts.args, 'settle') ?? 10) * 1000;
  const progress = (msg: string): void => console.error(`[hub-scale] ${msg}`);
  const { entry } = await buildBundle();
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-hub-scale-'));
  const env = await startEnvironment({ clusters: 0, dir: join(dir, 'env'), tunnel: false, namePrefix: 'hs' });
  let hub: Awaited<ReturnType<typeof spawnUntilReady>> | undefined;
  try {
    const kc = loadKubeconfig(env.hub.kubeconfigPath);
    const clusters = new ResourceClient<ManagedCluster>(kc, managedClusterResource);
    const namespaces = new ResourceClient(kc, namespaceResource);
    const ops = await freePort();
    hub = await spawnUntilReady({
      name: 'hub',
      args: [entry, 'hub', `--kubeconfig=${env.hub.kubeconfigPath}`, `--ops-port=${ops}`],
      opsPort: ops,
      logFile: join(dir, 'hub.log'),
      env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'warn' }),
      timeoutMs: 120_000,
    });
    const url = inspectorUrl(hub.proc.tail(40));
    if (!url) throw new Error('the hub printed no inspector URL');
    const results: Step[] = [];
    let made = 0;
    for (const target of steps) {
      const t = Date.now();
      for (; made < target; made += 10) {
        const batch = Array.from({ length: Math.min(10, target - made) }, (_, i) => `sim-${made + i}`);
        await Promise.all(
          batch.map((name) => clusters.create({ metadata: { name }, spec: { hubAcceptsClient: true } })),
        );
      }
      await pollUntil(
        async () => {
          const { items } = await namespaces.list();
          return items.filter((n) => n.metadata?.name?.startsWith('sim-')).length >= target;
        },
        { timeoutMs: 600_000, intervalMs: 1000, description: `the hub to make ${target} cluster namespaces` },
      );
      await sleep(settleMs);
      const { anon, file } = rssParts(hub.pid);
      const heap = await heapAfterGc(url);
      results.push({ clusters: target, rssMb: (anon + file) / MB, anonMb: anon / MB, heapMb: heap / MB });
      progress(
        `${target} clusters in ${((Date.now() - t) / 1000).toFixed(0)} s: RSS ${((anon + file) / MB).toFixed(1)} MB`,
      );
    }
    const first = results[0];
    const last = results.at(-1);
    if (!first || !last) throw new Error('no steps');
    const per100 = (f: (s: Step) => number) =>
      last.clusters > first.clusters ? ((f(last) - f(first)) / (last.clusters - first.clusters)) * 100 : 0;
    console.log('\nclusters  hub RSS MB  anon MB  V8 heap MB (after GC)  RSS / step-0');
    for (const s of results)
      console.log(
        `${String(s.clusters).padStart(8)}  ${s.rssMb.toFixed(1).padStart(10)}  ${s.anonMb.toFixed(1).padStart(7)}  ${s.heapMb.toFixed(1).padStart(22)}  ${(s.rssMb / first.rssMb).toFixed(2)}`,
      );
    console.log(
      `per 100 clusters: RSS ${per100((s) => s.rssMb).toFixed(1)} MB, V8 heap ${per100((s) => s.heapMb).toFixed(1)} MB\n`,
    );
    console.log(
      JSON.stringify({
        scenario: 'footprint-hub-scale',
        steps: results.map((s) => ({
          clusters: s.clusters,
          rss_mb: Number(s.rssMb.toFixed(1)),
          anon_mb: Number(s.anonMb.toFixed(1)),
          heap_mb: Number(s.heapMb.toFixed(1)),
        })),
        rss_mb_per_100_clusters: Number(per100((s) => s.rssMb).toFixed(2)),
        heap_mb_per_100_clusters: Number(per100((s) => s.heapMb).toFixed(2)),
        baseline_step0_rss_mb: Number(first.rssMb.toFixed(1)),
        loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      }),
    );
  } finally {
    await hub?.proc.stop(10_000);
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
