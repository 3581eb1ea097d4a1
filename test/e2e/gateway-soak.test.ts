// Short soak of the path users take for watches: 200 kubectl-style watches on the hub
// (`clustergateways/<cluster>/proxy/api/v1/...?watch=1`) → aggregator → `tether gateway` process →
// CONNECT frontend of a `tether proxy-server` process → tunnel → `tether proxy-agent` process (through
// squid) → cluster1's kube-apiserver. 300 updates of one ConfigMap must reach every watch exactly
// once and in order; once the watches close, what the gateway and proxy-server hold (open fds, V8
// heap after a forced GC through the inspector) must come back to what they held before. Two more
// rounds of watches must leave nothing behind per closed watch: no tunnel stream or caller socket
// left in either process (counted in a heap snapshot), and no heap growth from one round to the
// next. The long version is `npm run bench -- soak`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { summarizeHeapSnapshot, takeHeapSnapshot } from '../../bench/lib/heap-snapshot.ts';
import { type ProcSample, procSample } from '../../bench/lib/proc-stats.ts';
import { adminOrigin, type Holding, holding } from '../../bench/lib/soak-probes.ts';
import { type SoakProcess, type SoakStack, startSoakStack } from '../../bench/lib/soak-stack.ts';
import { originPool, UpdateStream, WatchSet } from '../../bench/lib/soak-watch.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';

const WATCHES = 200;
const UPDATES = 300;
/** fds a process may hold above its baseline once the watches are gone (pools, timers, a straggler) */
const FD_SLACK = 12;
/** V8 heap (after a forced GC) a process may hold above its baseline: ~15 KB per watch would exceed it */
const HEAP_SLACK = 3e6;
/**
 * RSS a process may keep above its baseline: V8 and the allocator keep pages a load made them take
 * (+55 MB for the gateway with 200 watches, measured), so this only bounds memory grossly; the heap
 * after a forced GC is the sharp check.
 */
const RSS_SLACK = 160e6;
/** watches in each of the two rounds that must leave nothing behind, and updates each round sees */
const ROUND_WATCHES = 200;
const ROUND_UPDATES = 10;
/**
 * Objects of one tunnel that may still be live once the watches are gone (a straggler being torn
 * down). A closed tunnel the proxy-server kept (its half-open timer held its stream, and the
 * stream's listeners the caller's socket, for 60 s) is one of each per watch: 200 here.
 */
const OBJECT_SLACK = 8;
/**
 * Growth of the heap without compiled code (a snapshot after a forced GC) allowed from one round to
 * the next: +0.16–0.25 MB measured with 500 watches a round once nothing is held per closed tunnel.
 * Compiled code is left out: the JIT alone added up to 1 MB between two such rounds.
 */
const ROUND_HEAP_SLACK = 0.5e6;
/** per process, the objects each tunnel holds there while it is open */
const TUNNEL_OBJECTS = {
  server: ['object ClientHttp2Stream', 'object TLSSocket'],
  gateway: ['object TLSSocket'],
} as const;

const env = testEnv();
const cluster = uniqueName('soak');
const namespace = uniqueName('soak-cms');
const cluster1Core = adminKubeConfig(env.cluster1).makeApiClient(CoreV1Api);
let dir: string;
let stack: SoakStack | undefined;
const pools: Pool[] = [];
/** tunnel objects each process held before any tunnel was opened */
let fresh: { server: LiveObjects; gateway: LiveObjects };

const mb = (b: number): string => `${(b / 1e6).toFixed(1)} MB`;
const kb = (b: number): string => `${b >= 0 ? '+' : ''}${(b / 1e3).toFixed(0)} KB`;

interface LiveObjects {
  /** live objects of each kind asked for */
  counts: Record<string, number>;
  /** shallow size of everything live but compiled code, bytes */
  bytes: number;
}

/** Live objects of each of `kinds` in `p`, from a heap snapshot after a forced GC. */
async function liveObjects(p: SoakProcess, kinds: readonly string[]): Promise<LiveObjects> {
  if (!p.inspector) throw new Error(`${p.name} has no inspector URL; log:\n${p.tail(10)}`);
  const summary = summarizeHeapSnapshot(await takeHeapSnapshot(p.inspector));
  return {
    counts: Object.fromEntries(kinds.map((k) => [k, summary.find((x) => x.kind === k)?.count ?? 0])),
    bytes: summary.reduce((n, k) => (k.kind === 'code' ? n : n + k.size), 0),
  };
}

/** What the gateway and proxy-server hold once their fds stop moving (connections torn down). */
async function settled(s: SoakStack): Promise<{ gateway: Holding; server: Holding }> {
  let last = -1;
  return pollUntil(
    async () => {
      const now = procSample(s.gateway.pid).fds + procSample(s.proxyServer.pid).fds;
      const stable = now === last;
      last = now;
      return stable ? { gateway: await holding(s.gateway), server: await holding(s.proxyServer) } : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 1000, description: 'gateway and proxy-server fds to settle' },
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tether-soak-e2e-'));
  await cluster1Core.createNamespace({ body: { metadata: { name: namespace } } });
  stack = await startSoakStack({
    dir,
    hub: env.hub,
    managed: env.cluster1,
    cluster,
    squidUrl: env.tunnel.squidUrl,
    inspect: true,
  });
  fresh = {
    server: await liveObjects(stack.proxyServer, TUNNEL_OBJECTS.server),
    gateway: await liveObjects(stack.gateway, TUNNEL_OBJECTS.gateway),
  };
});

afterAll(async () => {
  for (const p of pools) await p.destroy().catch(() => {});
  await stack?.stop();
  await cluster1Core.deleteNamespace({ name: namespace }).catch(() => {});
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('gateway soak', () => {
  it(`${WATCHES} watches through the gateway see all ${UPDATES} updates exactly once in order; after they close, gateway and proxy-server fds and heap return to baseline`, async () => {
    const s = stack as SoakStack;
    const hub = originPool(adminOrigin(env.hub), WATCHES + 8);
    const direct = originPool(adminOrigin(env.cluster1), 4);
    pools.push(hub, direct);
    const cm = 'soaked';
    const updates = new UpdateStream(direct, namespace, cm);
    const rv = await updates.create();
    const watchPath = (from: string) =>
      s.gatewayPath(
        `/api/v1/namespaces/${namespace}/configmaps?watch=1&fieldSelector=metadata.name%3D${cm}&resourceVersion=${from}`,
      );

    // Warm-up: one watch end to end and closed again, so lazily built state (pools, TLS contexts,
    // authorization caches, code paths) is part of the baseline rather than counted as growth.
    const warm = new WatchSet({
      pool: hub,
      path: watchPath,
      count: 4,
      resourceVersion: rv,
      sentAt: () => undefined,
    });
    await warm.open();
    warm.close();
    // Baseline once fds stop moving (the warm-up's connections are being torn down).
    const before = await settled(s);

    const watches = new WatchSet({
      pool: hub,
      path: watchPath,
      count: WATCHES,
      resourceVersion: rv,
      sentAt: updates.sentAt,
    });
    const openMs = await watches.open();
    // Every watch holds a tunnel: the processes must show it, or this test measures nothing.
    const during = { gateway: procSample(s.gateway.pid), server: procSample(s.proxyServer.pid) };
    expect(during.server.sockets - before.server.sample.sockets).toBeGreaterThanOrEqual(WATCHES - FD_SLACK);
    expect(during.gateway.sockets - before.gateway.sample.sockets).toBeGreaterThanOrEqual(WATCHES - FD_SLACK);

    for (let i = 0; i < UPDATES; i++) await updates.next();
    await pollUntil(() => watches.seenBy(UPDATES) === WATCHES || watches.totals().reconnects > 0, {
      timeoutMs: 60_000,
      intervalMs: 100,
      description: `all ${WATCHES} watches to see update ${UPDATES} (${watches.seenBy(UPDATES)} have)`,
    });
    const totals = watches.totals();
    expect(watches.problems(), 'first problems of individual watches').toEqual([]);
    expect(totals).toEqual({ inOrder: WATCHES * UPDATES, duplicates: 0, gaps: 0, reconnects: 0 });
    for (const w of watches.watchers) expect(w.state.inOrder).toBe(UPDATES);

    watches.close();
    let last: { gateway: Holding; server: Holding } | undefined;
    const after = await pollUntil(
      async () => {
        const a = { gateway: await holding(s.gateway), server: await holding(s.proxyServer) };
        last = a;
        const back = (p: 'gateway' | 'server') =>
          a[p].sample.fds <= before[p].sample.fds + FD_SLACK &&
          a[p].heap <= before[p].heap + HEAP_SLACK &&
          a[p].sample.rss <= before[p].sample.rss + RSS_SLACK;
        return back('gateway') && back('server') ? a : undefined;
      },
      {
        timeoutMs: 45_000,
        intervalMs: 1000,
        description: `gateway and proxy-server fds (≤ baseline + ${FD_SLACK}), heap after GC (≤ baseline + ${mb(HEAP_SLACK)}) and RSS (≤ baseline + ${mb(RSS_SLACK)}) to return after the watches closed`,
      },
    ).catch((err: Error) => {
      const held = (p: 'gateway' | 'server') =>
        last
          ? `${p} fds ${before[p].sample.fds} → ${last[p].sample.fds}, heap ${mb(before[p].heap)} → ${mb(last[p].heap)}, rss ${mb(before[p].sample.rss)} → ${mb(last[p].sample.rss)}`
          : '';
      throw new Error(`${err.message}; ${held('gateway')}; ${held('server')}`);
    });
    const line = (name: string, b: Holding, d: ProcSample, a: Holding) =>
      `${name}: fds ${b.sample.fds} → ${d.fds} → ${a.sample.fds}, heap ${mb(b.heap)} → ${mb(a.heap)}, rss ${mb(b.sample.rss)} → ${mb(d.rss)} → ${mb(a.sample.rss)}`;
    process.stderr.write(
      `[soak] ${WATCHES} watches opened in ${openMs.toFixed(0)} ms; ${UPDATES} updates delivered to all\n` +
        `[soak] ${line('gateway', before.gateway, during.gateway, after.gateway)}\n` +
        `[soak] ${line('proxy-server', before.server, during.server, after.server)}\n`,
    );
  });
  it(`two more rounds of ${ROUND_WATCHES} watches leave nothing behind: once closed, no tunnel stream or caller socket stays in the proxy-server or gateway, and the heap does not grow from one round to the next`, async () => {
    const s = stack as SoakStack;
    const hub = originPool(adminOrigin(env.hub), ROUND_WATCHES + 8);
    const direct = originPool(adminOrigin(env.cluster1), 4);
    pools.push(hub, direct);
    const within = (held: LiveObjects, base: LiveObjects): boolean =>
      Object.entries(held.counts).every(([k, n]) => n <= (base.counts[k] ?? 0) + OBJECT_SLACK);
    const live = async (): Promise<{ server: LiveObjects; gateway: LiveObjects }> => ({
      server: await liveObjects(s.proxyServer, TUNNEL_OBJECTS.server),
      gateway: await liveObjects(s.gateway, TUNNEL_OBJECTS.gateway),
    });
    const counts = (x: { server: LiveObjects; gateway: LiveObjects }): string =>
      `proxy-server ${JSON.stringify(x.server.counts)}, gateway ${JSON.stringify(x.gateway.counts)}`;
    const rounds: Array<{ server: LiveObjects; gateway: LiveObjects }> = [];
    for (const round of [1, 2]) {
      const cm = `round-${round}`;
      const updates = new UpdateStream(direct, namespace, cm);
      const rv = await updates.create();
      const watches = new WatchSet({
        pool: hub,
        path: (from) =>
          s.gatewayPath(
            `/api/v1/namespaces/${namespace}/configmaps?watch=1&fieldSelector=metadata.name%3D${cm}&resourceVersion=${from}`,
          ),
        count: ROUND_WATCHES,
        resourceVersion: rv,
        sentAt: updates.sentAt,
      });
      await watches.open();
      for (let i = 0; i < ROUND_UPDATES; i++) await updates.next();
      await pollUntil(
        () => watches.seenBy(ROUND_UPDATES) === ROUND_WATCHES || watches.totals().reconnects > 0,
        {
          timeoutMs: 60_000,
          intervalMs: 100,
          description: `round ${round}: all ${ROUND_WATCHES} watches to see update ${ROUND_UPDATES}`,
        },
      );
      expect(watches.totals()).toEqual({
        inOrder: ROUND_WATCHES * ROUND_UPDATES,
        duplicates: 0,
        gaps: 0,
        reconnects: 0,
      });
      watches.close();
      const closedAt = Date.now();
      await settled(s);
      // Checked well within the 60 s half-open timeout: a timer that held closed tunnels shows here.
      let held = fresh;
      await pollUntil(
        async () => {
          held = await live();
          return within(held.server, fresh.server) && within(held.gateway, fresh.gateway);
        },
        {
          timeoutMs: 20_000,
          intervalMs: 1000,
          description: `round ${round}: tunnel objects in the proxy-server and gateway to come back to what they held before any tunnel (+${OBJECT_SLACK})`,
        },
      ).catch((err: Error) => {
        throw new Error(
          `${err.message}; ${((Date.now() - closedAt) / 1000).toFixed(1)} s after the watches closed, before any tunnel → now: ${counts(fresh)} → ${counts(held)}`,
        );
      });
      rounds.push(held);
    }
    const [first, second] = rounds as [(typeof rounds)[0], (typeof rounds)[0]];
    process.stderr.write(
      `[soak] rounds of ${ROUND_WATCHES} watches, heap without code after round 1 → 2: proxy-server ${kb(second.server.bytes - first.server.bytes)}, gateway ${kb(second.gateway.bytes - first.gateway.bytes)}; tunnel objects before any tunnel → after round 2: ${counts(fresh)} → ${counts(second)}\n`,
    );
    expect(
      second.server.bytes,
      'proxy-server heap (without code) after round 2 vs round 1',
    ).toBeLessThanOrEqual(first.server.bytes + ROUND_HEAP_SLACK);
    expect(second.gateway.bytes, 'gateway heap (without code) after round 2 vs round 1').toBeLessThanOrEqual(
      first.gateway.bytes + ROUND_HEAP_SLACK,
    );
  });
});
