// Rounds of watches through the gateway with a heap snapshot of the gateway and the proxy-server
// before the first round and after each: whether what a closed watch leaves behind grows with every
// round (a leak) or only after the first (caches, warm-up). Not part of `npm run bench`; run it alone:
//
//   node bench/lib/heap-rounds.ts [--watches=500] [--rounds=2] [--updates=5] [--hold-updates=0]
//                                 [--linger=0] [--out=DIR]
//
// `--hold-updates=N` also snapshots the first round while its watches are open, before and after N
// more updates: what grows there grows with events delivered, not with tunnels closed.
//
// `--linger=S` takes one more snapshot S seconds after the last round: what is still held then is
// not waiting on a timer shorter than S.
//
// Prints, per process and round, the kinds (constructor / closure name) whose count or size changed
// the most, and writes every snapshot to DIR (default a temp dir, kept) for a closer look in DevTools.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'undici';
import { startEnvironment } from '../../src/localenv/environment.ts';
import type { ControlPlaneInfo } from '../../src/localenv/types.ts';
import { pollUntil } from '../../src/wait.ts';
import { type HeapKind, heapGrowth, summarizeHeapSnapshot, takeHeapSnapshot } from './heap-snapshot.ts';
import { heapAfterGc } from './inspector-gc.ts';
import { mb, procSample } from './proc-stats.ts';
import { adminOrigin, createNamespace } from './soak-probes.ts';
import { type SoakProcess, startSoakStack } from './soak-stack.ts';
import { originPool, UpdateStream, WatchSet } from './soak-watch.ts';
import { flag, sleep } from './stats.ts';

const NS = 'heap-rounds';
const CM = 'watched';
const TOP = 25;

function count(args: string[], name: string, fallback: number): number {
  const raw = flag(args, name);
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return n;
}

function table(title: string, rows: HeapKind[]): string {
  const lines = rows
    .slice(0, TOP)
    .map((k) => `  ${String(k.count).padStart(8)} ${String(k.size).padStart(11)} B  ${k.kind}`);
  return `${title}\n  ${'count'.padStart(8)} ${'size'.padStart(13)}  kind\n${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const watches = count(args, 'watches', 500);
  const rounds = count(args, 'rounds', 2);
  const updatesPerRound = count(args, 'updates', 5);
  const lingerS = flag(args, 'linger') === undefined ? 0 : count(args, 'linger', 0);
  const holdUpdates = flag(args, 'hold-updates') === undefined ? 0 : count(args, 'hold-updates', 0);
  const out = flag(args, 'out') ?? mkdtempSync(join(tmpdir(), 'tether-heap-rounds-out-'));
  mkdirSync(out, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'tether-heap-rounds-'));
  const progress = (line: string) => process.stderr.write(`[heap-rounds] ${line}\n`);
  const env = await startEnvironment({ clusters: 1, dir: join(dir, 'env'), progress, mode: 'tunnel' });
  const pools: Pool[] = [];
  let stack: Awaited<ReturnType<typeof startSoakStack>> | undefined;
  try {
    const cluster1 = env.clusters[0] as ControlPlaneInfo;
    stack = await startSoakStack({
      dir: join(dir, 'stack'),
      hub: env.hub,
      managed: cluster1,
      cluster: 'heap',
      squidUrl: env.tunnel?.squidUrl,
      maxTunnelsPerCaller: watches + 100,
      inspect: true,
      readyTimeoutMs: 120_000,
    });
    const s = stack;
    const procs: SoakProcess[] = [s.proxyServer, s.gateway];
    const hub = originPool(adminOrigin(env.hub), watches + 8);
    const direct = originPool(adminOrigin(cluster1), 4);
    pools.push(hub, direct);
    await createNamespace(direct, NS);
    const updates = new UpdateStream(direct, NS, CM);
    const rv = await updates.create();
    const path = (from: string) =>
      s.gatewayPath(
        `/api/v1/namespaces/${NS}/configmaps?watch=1&fieldSelector=metadata.name%3D${CM}&resourceVersion=${from}`,
      );
    const baseFds = new Map<string, number>();
    const settle = async (): Promise<void> => {
      let last = -1;
      await pollUntil(
        () => {
          const now = procs.reduce((n, p) => n + procSample(p.pid).fds, 0);
          const stable =
            now === last && procs.every((p) => procSample(p.pid).fds <= (baseFds.get(p.name) ?? 1e9) + 12);
          last = now;
          return stable;
        },
        { timeoutMs: 60_000, intervalMs: 1000, description: 'fds to settle' },
      ).catch((err: Error) => progress(`not settled: ${err.message}`));
    };
    const summaries = new Map<string, HeapKind[][]>();
    const labels: string[] = [];
    const snapshot = async (label: string): Promise<void> => {
      labels.push(label);
      for (const p of procs) {
        const text = await takeHeapSnapshot(p.inspector ?? '');
        const file = join(out, `${p.name.replace('/', '-')}-${label}.heapsnapshot`);
        writeFileSync(file, text);
        const summary = summarizeHeapSnapshot(text);
        const list = summaries.get(p.name) ?? [];
        list.push(summary);
        summaries.set(p.name, list);
        const heap = await heapAfterGc(p.inspector ?? '');
        const { fds, rss } = procSample(p.pid);
        progress(`${label} ${p.name}: heap ${mb(heap)}, fds ${fds}, rss ${mb(rss)} (${file})`);
      }
    };

    // Warm-up: a few watches end to end, so lazily built state is in the baseline.
    const warm = new WatchSet({ pool: hub, path, count: 4, resourceVersion: rv, sentAt: () => undefined });
    await warm.open();
    await updates.next();
    warm.close();
    await sleep(2000);
    for (const p of procs) baseFds.set(p.name, procSample(p.pid).fds);
    await settle();
    await snapshot('round0');

    for (let r = 1; r <= rounds; r++) {
      const set = new WatchSet({
        pool: hub,
        path,
        count: watches,
        resourceVersion: String(await currentRv(direct)),
        sentAt: updates.sentAt,
        openTimeoutMs: 180_000,
      });
      const openMs = await set.open();
      const from = updates.count;
      for (let i = 0; i < updatesPerRound; i++) await updates.next();
      await pollUntil(() => set.seenBy(updates.count) === watches, {
        timeoutMs: 60_000,
        intervalMs: 200,
        description: `every watch to see ${updatesPerRound} updates after ${from}`,
      }).catch((err: Error) => progress(err.message));
      progress(
        `round ${r}: ${watches} watches open in ${Math.round(openMs)} ms; totals ${JSON.stringify(set.totals())}`,
      );
      if (r === 1 && holdUpdates > 0) {
        await snapshot('round1-open');
        const t0 = Date.now();
        for (let i = 0; i < holdUpdates; i++) await updates.next();
        await pollUntil(() => set.seenBy(updates.count) === watches, {
          timeoutMs: 120_000,
          intervalMs: 200,
          description: `every watch to see the ${holdUpdates} held updates`,
        }).catch((err: Error) => progress(err.message));
        progress(
          `round 1: ${holdUpdates} more updates in ${Date.now() - t0} ms, ${watches * holdUpdates} events; totals ${JSON.stringify(set.totals())}`,
        );
        await snapshot('round1-held');
      }
      set.close();
      await sleep(2000);
      await settle();
      await snapshot(`round${r}`);
    }
    if (lingerS > 0) {
      progress(`lingering ${lingerS} s…`);
      await sleep(lingerS * 1000);
      await snapshot('linger');
    }

    for (const p of procs) {
      const list = summaries.get(p.name) ?? [];
      for (let r = 1; r < list.length; r++) {
        const g = heapGrowth(list[r - 1] ?? [], list[r] ?? []);
        const total = g.reduce((n, k) => n + k.size, 0);
        process.stdout.write(
          table(
            `\n${p.name}: ${labels[r - 1]} → ${labels[r]}, shallow size ${total >= 0 ? '+' : ''}${total} B; by size`,
            g,
          ),
        );
        process.stdout.write(
          table(
            `${p.name}: ${labels[r - 1]} → ${labels[r]}; by count`,
            [...g].sort((a, b) => b.count - a.count),
          ),
        );
      }
    }
  } finally {
    for (const p of pools) await p.destroy().catch(() => {});
    await stack?.stop().catch(() => {});
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function currentRv(pool: Pool): Promise<string> {
  const res = await pool.request({ method: 'GET', path: `/api/v1/namespaces/${NS}/configmaps/${CM}` });
  const body = (await res.body.json()) as { metadata: { resourceVersion: string } };
  return body.metadata.resourceVersion;
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
