// A machine that cannot run real nodes gets TETHER_NODE_UNSUPPORTED naming the reason and the
// process mode (`tether up --processes`), before anything is created.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEnvironment } from '../../src/localenv/environment.ts';
import {
  checkInotifyHeadroom,
  checkNodesSupported,
  INOTIFY_INSTANCES_PER_NODE,
  inotifyInstancesInUse,
  inotifyInstancesOf,
} from '../../src/localenv/node-environment.ts';

function thrown(fn: () => void): { code?: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected a throw');
}

describe('real nodes unsupported', () => {
  it('says that root is needed and names --processes', () => {
    const err = thrown(() => checkNodesSupported({ uid: 1000, exists: () => true }));
    expect(err.code).toBe('TETHER_NODE_UNSUPPORTED');
    expect(err.message).toContain('real nodes need root');
    expect(err.message).toContain("'tether up --processes'");
  });

  it('names missing containerd and runc, how to install them, and --processes', () => {
    const gone = ['/usr/bin/containerd', '/usr/sbin/runc', '/usr/bin/runc'];
    const err = thrown(() => checkNodesSupported({ uid: 0, exists: (p) => !gone.includes(p) }));
    expect(err.code).toBe('TETHER_NODE_UNSUPPORTED');
    expect(err.message).toMatch(/real nodes need containerd, runc: run 'bash hack\/deps.sh'/);
    expect(err.message).toContain('--processes');
  });

  it('says that cgroups are missing', () => {
    const err = thrown(() => checkNodesSupported({ uid: 0, exists: (p) => !p.startsWith('/sys/fs/cgroup') }));
    expect(err.code).toBe('TETHER_NODE_UNSUPPORTED');
    expect(err.message).toContain('cgroups');
  });

  it('refuses nodes together with the process tunnel stack, creating nothing', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'tether-env-nodes-'));
    try {
      const dir = join(parent, 'env');
      const err = await startEnvironment({ clusters: 1, dir, nodes: true, tunnel: true }).then(
        async (e) => {
          await e.stop();
          throw new Error('expected startEnvironment to reject');
        },
        (e: unknown) => e as { code?: string; message: string },
      );
      expect(err.code).toBe('TETHER_INVALID_ARGUMENT');
      expect(err.message).toContain('nodes: true');
      expect(existsSync(dir)).toBe(false);
      expect(readdirSync(parent)).toEqual([]);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('refuses a name prefix that would not make DNS-label control plane names, creating nothing', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'tether-env-prefix-'));
    try {
      for (const namePrefix of ['Bad_', '-x', 'a'.repeat(22)]) {
        const err = await startEnvironment({ clusters: 1, dir: join(parent, 'env'), namePrefix }).then(
          async (e) => {
            await e.stop();
            throw new Error(`started with prefix ${namePrefix}`);
          },
          (e: unknown) => e as { code?: string; message: string },
        );
        expect(err.code).toBe('TETHER_INVALID_ARGUMENT');
        expect(err.message).toContain(`name prefix "${namePrefix}"`);
      }
      expect(readdirSync(parent)).toEqual([]);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('refuses more nodes than the inotify instances left allow, naming the sysctl and --processes', () => {
    expect(() =>
      checkInotifyHeadroom(3, { max: 128, inUse: 128 - 3 * INOTIFY_INSTANCES_PER_NODE }),
    ).not.toThrow();
    const err = thrown(() => checkInotifyHeadroom(3, { max: 128, inUse: 60 }));
    expect(err.code).toBe('TETHER_LIMIT_EXCEEDED');
    expect(err.message).toContain('60 of fs.inotify.max_user_instances=128 are in use');
    expect(err.message).toContain('sysctl -w fs.inotify.max_user_instances=512');
    expect(err.message).toContain('--processes');
  });

  it('counts the inotify instances a process holds', async () => {
    const { spawn } = await import('node:child_process');
    const watching = spawn(
      process.execPath,
      [
        '-e',
        `require('fs').watch(${JSON.stringify(tmpdir())}); console.log('watching'); setInterval(() => {}, 1000)`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise((resolve) => watching.stdout?.once('data', resolve));
      expect(inotifyInstancesOf(watching.pid ?? 0)).toBe(1);
      expect(inotifyInstancesInUse()).toBeGreaterThanOrEqual(1);
    } finally {
      watching.kill('SIGKILL');
    }
    expect(inotifyInstancesOf(2 ** 22 + 1)).toBe(0);
  });
});
