// A machine that cannot run real nodes gets TETHER_NODE_UNSUPPORTED naming the reason and the
// process mode (`tether up --processes`), before anything is created.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEnvironment } from '../../src/localenv/environment.ts';
import { checkNodesSupported } from '../../src/localenv/node-environment.ts';

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
});
