// Hub-side stream cancellations against a real `tether proxy-agent` process. Every client that
// disconnects from the CONNECT frontend, every dial timeout and every destroy() on the hub resets
// one tunnel stream (RST_STREAM). The agent is the HTTP/2 *server*, so nghttp2's rapid-reset
// protection would count those resets and close the whole session — cutting every other stream
// of that cluster. The hub is the authenticated peer; the agent must take any number of them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTetherError } from '../../src/errors.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { echoServer, type HubPki, hubPki, roundTrip, startServer } from './tunnel-fixtures.ts';

// nghttp2's rapid-reset defence closes a session after a burst of 1000 resets, then 33/s: 1000/s for
// 30 s is 30 000 resets, 30 times the burst, so the guard holds with room. It was 2000/s; on a 2-core
// machine shared with the e2e lane the agent then fell 10 s behind now and then (3 of 153 fresh dials
// timed out in one CI run, the session intact): the rate measured the machine, not the property.
const RATE_PER_SECOND = 1000;
const DURATION_MS = 30_000;
const BACKGROUND_STREAMS = 16;

let pki: HubPki;
let dir: string;
let echo: { port: number; close: () => Promise<void> };
let server: ProxyServer;
let agent: SupervisedProcess;

beforeAll(async () => {
  pki = await hubPki();
  dir = mkdtempSync(join(tmpdir(), 'tether-cancel-'));
  echo = await echoServer();
  server = await startServer(pki, { maxPendingDials: 20_000 });
  const cert = await pki.agentCert('cluster1', 'agent-a');
  const write = (name: string, content: string): string => {
    const p = join(dir, name);
    writeFileSync(p, content, { mode: 0o600 });
    return p;
  };
  const ops = await freePort();
  agent = new SupervisedProcess({
    name: 'proxy-agent',
    command: process.execPath,
    logFile: join(dir, 'agent.log'),
    args: [
      tetherBin,
      'proxy-agent',
      '--cluster-name=cluster1',
      '--agent-id=agent-a',
      `--proxy-server=127.0.0.1:${server.port}`,
      `--cert-file=${write('agent.crt', cert.certPem)}`,
      `--key-file=${write('agent.key', cert.keyPem)}`,
      `--hub-ca-file=${write('ca.crt', pki.ca.certPem)}`,
      `--kube-apiserver=127.0.0.1:${echo.port}`,
      `--ops-port=${ops}`,
    ],
    env: { ...process.env, TETHER_LOG_LEVEL: 'warn' },
  });
  await waitReady(agent, ops, 20_000);
  await server.waitForAgents('cluster1');
});

afterAll(async () => {
  await agent?.stop(2000);
  await server?.stop(100);
  await echo?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Rejects when `p` has not settled within `ms` (a stalled stream counts as a failure). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} stalled for ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** One stream that keeps echoing small messages until stopped; counts failures. */
function backgroundStream(stream: Duplex, stats: { roundTrips: number; failures: string[] }) {
  let stopped = false;
  const done = (async () => {
    const payload = Buffer.alloc(4096, 7);
    while (!stopped) {
      const echoed = new Promise<number>((resolve, reject) => {
        if (stream.destroyed) {
          reject(new Error('background stream closed under load'));
          return;
        }
        let n = 0;
        const onData = (c: Buffer): void => {
          n += c.length;
          if (n >= payload.length) {
            cleanup();
            resolve(n);
          }
        };
        const onClose = (): void => {
          cleanup();
          reject(new Error('background stream closed under load'));
        };
        const cleanup = (): void => {
          stream.off('data', onData);
          stream.off('close', onClose);
        };
        stream.on('data', onData);
        stream.once('close', onClose);
        stream.write(payload);
      });
      const got = await within(echoed, 10_000, 'background stream').catch((err: Error) => {
        stats.failures.push(err.message);
        stopped = true;
        return 0;
      });
      if (got) stats.roundTrips++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

describe('tunnel under hub-side cancellation', () => {
  it(
    'hub-side cancellations cannot tear down a tunnel session',
    async () => {
      const sessionBefore = server.registry.pick('cluster1');
      expect(sessionBefore).toBeDefined();
      const stats = { roundTrips: 0, failures: [] as string[] };
      const background = await Promise.all(
        Array.from({ length: BACKGROUND_STREAMS }, () => server.dial('cluster1', 'kube-apiserver:443')),
      );
      for (const s of background) s.on('error', () => {});
      const loops = background.map((s) => backgroundStream(s, stats));

      // New dials that must keep working during the storm.
      let freshOk = 0;
      const freshFailures: string[] = [];
      // Cancellations: half dial-then-destroy (client gone after 200), half cancelled before the
      // agent answers (the dial-timeout path: RST_STREAM on a pending CONNECT).
      let cancelled = 0;
      const cancelErrors = new Map<string, number>();
      const started = Date.now();
      const tickMs = 10;
      const perTick = (RATE_PER_SECOND * tickMs) / 1000;
      let ticks = 0;
      const inflight = new Set<Promise<void>>();
      const track = (p: Promise<void>): void => {
        inflight.add(p);
        p.finally(() => inflight.delete(p));
      };
      while (Date.now() - started < DURATION_MS) {
        ticks++;
        // Keep to the schedule: issue whatever this point in time owes.
        const owed = Math.floor(((Date.now() - started) / 1000) * RATE_PER_SECOND) - cancelled;
        for (let i = 0; i < Math.min(owed, perTick * 5); i++) {
          cancelled++;
          const beforeAnswer = cancelled % 2 === 0;
          track(
            server.dial('cluster1', 'kube-apiserver:443', beforeAnswer ? { timeoutMs: 0 } : {}).then(
              (s) => {
                s.destroy();
              },
              (err: unknown) => {
                const code = isTetherError(err) ? err.code : 'other';
                cancelErrors.set(code, (cancelErrors.get(code) ?? 0) + 1);
              },
            ),
          );
        }
        if (ticks % 10 === 0) {
          track(
            server
              .dial('cluster1', 'kube-apiserver:443')
              .then(async (s) => {
                s.on('error', () => {});
                await within(roundTrip(s, Buffer.from('fresh')), 10_000, 'fresh stream').finally(() =>
                  s.destroy(),
                );
                freshOk++;
              })
              .catch((err: Error) => {
                freshFailures.push(isTetherError(err) ? err.code : err.message);
              }),
          );
        }
        await new Promise((r) => setTimeout(r, tickMs));
      }
      const elapsedS = (Date.now() - started) / 1000;
      await Promise.all(inflight);
      await Promise.all(loops.map((l) => l.stop()));
      const sessionAfter = server.registry.pick('cluster1');
      const rate = Math.round(cancelled / elapsedS);
      // Measured figures for the report; the assertions below are what must hold.
      console.log(
        `cancellations: ${cancelled} in ${elapsedS.toFixed(1)} s (${rate}/s; outcomes of cancelled dials: ${JSON.stringify(Object.fromEntries(cancelErrors))}); ` +
          `background round trips ${stats.roundTrips}, background failures ${stats.failures.length}; ` +
          `fresh dials ok ${freshOk}, failed ${freshFailures.length} ${JSON.stringify(freshFailures.slice(0, 3))}; ` +
          `same session: ${sessionAfter === sessionBefore}`,
      );
      expect(rate).toBeGreaterThanOrEqual(RATE_PER_SECOND * 0.9);
      expect(stats.failures).toEqual([]);
      expect(freshFailures).toEqual([]);
      expect(freshOk).toBeGreaterThan(100);
      expect(sessionAfter).toBe(sessionBefore);
      expect(sessionAfter?.session.isClosed).toBe(false);
      for (const s of background) s.destroy();
    },
    DURATION_MS + 60_000,
  );
});
