// The build lock (src/localenv/build-lock.ts, used for the node images, helm and the Kubernetes binaries): two processes starting nodes on a fresh
// machine must not build the same image side by side (CoreDNS alone takes minutes on 2 cores), and
// a lock left by a killed process must not block the next build.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { withBuildLock } from '../../src/localenv/build-lock.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('image build lock', () => {
  it('runs two builds of one image one after the other, the second told that it waits', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tether-image-lock-'));
    const lock = join(dir, '.build-x.lock');
    const events: string[] = [];
    const notes: string[] = [];
    const build = (id: string) => async (): Promise<string> => {
      events.push(`start ${id}`);
      await new Promise((r) => setTimeout(r, 300));
      events.push(`end ${id}`);
      return id;
    };
    const results = await Promise.all([
      withBuildLock(lock, { what: 'hack/x', waitMs: 60_000, progress: (l) => notes.push(l) }, build('a')),
      withBuildLock(lock, { what: 'hack/x', waitMs: 60_000, progress: (l) => notes.push(l) }, build('b')),
    ]);
    expect(results).toEqual(['a', 'b']);
    expect(events).toEqual(['start a', 'end a', 'start b', 'end b']);
    expect(notes).toEqual([
      `waiting for another tether process (pid ${process.pid}) that is building hack/x…`,
    ]);
  });

  it('takes over the lock of a process that died holding it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tether-image-lock-'));
    const lock = join(dir, '.build-x.lock');
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), String(dead));
    const t = Date.now();
    expect(
      await withBuildLock(lock, { what: 'hack/x', waitMs: 60_000, progress: () => {} }, async () => 'built'),
    ).toBe('built');
    expect(Date.now() - t).toBeLessThan(2000);
  });
});
