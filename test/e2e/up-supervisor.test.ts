// What ends or interrupts a `tether up`, each with an environment of its own: a SIGKILL of
// `tether up` itself leaves no process and no squid directory behind; a SIGTERM during start-up
// stops what has started and exits promptly, saying so truthfully. (Its supervisor restarting each
// process after kill -9, and the other faults, are in test/e2e/up.test.ts on one shared `tether up`.)
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { UpProcess } from './fixtures/up-env.ts';
import { descendants, isLive, processesMentioning } from './fixtures/up-process-tree.ts';

describe('tether up supervisor', () => {
  let up: UpProcess | undefined;

  beforeAll(async () => {
    up = UpProcess.start('up-supervisor');
    await up.ready(170_000);
  }, 180_000);

  afterAll(() => up?.remove(), 60_000);

  it('kill -9 of tether up itself leaves no process and no squid directory behind', async () => {
    const u = up as UpProcess;
    const root = u.pid;
    const squids = descendants(root).filter((p) => /(^|\/)squid$/.test(p.args[0] ?? ''));
    expect(squids.length, 'squid under tether up').toBeGreaterThan(0);
    const squid = squids.reduce((a, b) => (a.pid < b.pid ? a : b));
    const squidConf = squid.args[squid.args.indexOf('-f') + 1] as string;
    expect(squidConf).toMatch(/tether-squid-[^/]+\/squid\.conf$/);
    const children = descendants(root).map((p) => p.pid);
    expect(children.length).toBeGreaterThanOrEqual(11);
    process.kill(root, 'SIGKILL');
    await u.exited;
    await pollUntil(
      () =>
        (children.every((pid) => !isLive(pid)) &&
          processesMentioning(u.dir).length === 0 &&
          processesMentioning(squidConf).length === 0 &&
          !existsSync(dirname(squidConf))) ||
        undefined,
      {
        timeoutMs: 20_000,
        intervalMs: 250,
        description: `no process of ${u.dir}, no squid ${squidConf} and no squid directory`,
      },
    );
  }, 60_000);
});

describe('SIGTERM during tether up start-up', () => {
  for (const phase of ['starting 2 control planes', 'starting squid']) {
    it(`at "${phase}…" stops what has started and exits promptly, saying so truthfully`, async () => {
      const up = UpProcess.start('up-sigterm');
      const dir = up.dir;
      try {
        await pollUntil(() => up.output().includes(phase) || undefined, {
          timeoutMs: 170_000,
          intervalMs: 100,
          description: `"${phase}" from tether up; output so far:\n${up.output()}`,
        });
        const sentAt = Date.now();
        up.child.kill('SIGTERM');
        const code = await up.exited;
        const exitMs = Date.now() - sentAt;
        process.stdout.write(`SIGTERM at "${phase}" → exit in ${exitMs} ms\n`);
        expect(code, up.output()).toBe(0);
        expect(up.output()).not.toMatch(/ready: hub/);
        expect(up.output().trimEnd().split('\n').slice(-2)).toEqual([
          'tether: received SIGTERM; stopping…',
          'tether: stopped; all processes are gone',
        ]);
        expect(exitMs).toBeLessThan(30_000);
        // truthful: nothing of this environment runs any more and its state is gone
        expect(processesMentioning(dir)).toEqual([]);
        expect(existsSync(join(dir, 'state'))).toBe(false);
        expect(existsSync(join(dir, 'tether-up.pid'))).toBe(false);
      } finally {
        await up.remove();
      }
    }, 240_000);
  }
});
