// A tether that is SIGKILLed while its real node runs pods leaves containerd's shims and the pods
// behind (the parent-death signal only reaches containerd, the kubelet and kube-proxy). The next
// node of that name reclaims them: processes, mounts, cgroups, the namespace and the old directory.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import { cgroupsLeft, mountsUnder, pidsInCgroupTree } from '../../src/localenv/node-host-state.ts';
import { ensureNodeImages } from '../../src/localenv/node-images.ts';
import { createNodeNetwork, processesInNetns } from '../../src/localenv/node-network.ts';
import { reclaimStaleNode } from '../../src/localenv/node-reclaim.ts';
import { pollUntil } from '../../src/wait.ts';
import { newSharedState, nodeShimSockets, ownLeftovers, sharedHostState } from './fixtures/real-node-host.ts';

const NAME = `rk${process.pid % 100000}`;
const dir = mkdtempSync(join(tmpdir(), 'tether-real-node-reclaim-'));
let child: ChildProcess | undefined;

// a cold machine builds the node binaries here (minutes), outside the scenario's own timeout
beforeAll(async () => {
  await ensureNodeBinaries();
  await ensureNodeImages();
}, 900_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await reclaimStaleNode(NAME).catch(() => {});
  const net = await createNodeNetwork(NAME).catch(() => undefined);
  await net?.remove();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a real node whose tether was SIGKILLed', () => {
  it('is reclaimed by the next node of the same name', async () => {
    const sharedBefore = sharedHostState();
    const c = spawn(process.execPath, ['test/e2e/fixtures/real-node-child.ts', NAME, dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = c;
    let out = '';
    c.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    c.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const nodeDir = await pollUntil(
      () => {
        if (c.exitCode !== null) throw new Error(`child exited ${c.exitCode}: ${out}`);
        return /^READY (\S+)$/m.exec(out)?.[1];
      },
      { timeoutMs: 120_000, intervalMs: 200, description: 'the child node to run a pod' },
    );
    c.kill('SIGKILL');
    // the parent-death signal takes containerd, the kubelet and kube-proxy; shims and the pod stay
    await pollUntil(
      async () => {
        const pids = await processesInNetns(`tether-${NAME}`);
        return pids.every((p) => !/^(containerd|kubelet|kube-proxy)$/.test(comm(p)));
      },
      { timeoutMs: 20_000, description: 'the node daemons to die with their parent' },
    );
    const shims = await processesInNetns(`tether-${NAME}`);
    const shimSockets = await nodeShimSockets(`tether-${NAME}`);
    // its pod and cluster DNS
    expect(shimSockets.length).toBe(2);
    const podPids = pidsInCgroupTree(`/tether-${NAME}`);
    expect(shims.length).toBeGreaterThan(0);
    expect(podPids.length).toBeGreaterThanOrEqual(2);
    expect(mountsUnder([nodeDir]).length).toBeGreaterThan(0);

    const killed = await reclaimStaleNode(NAME);
    expect(killed).toBeGreaterThanOrEqual(shims.length + podPids.length);
    for (const p of [...shims, ...podPids]) expect(existsSync(`/proc/${p}`)).toBe(false);
    expect(mountsUnder([nodeDir])).toEqual([]);
    expect(existsSync(nodeDir)).toBe(false);
    expect(cgroupsLeft(`/tether-${NAME}`)).toEqual([]);
    expect(existsSync(`/run/netns/tether-${NAME}`)).toBe(false);
    // shim sockets, CNI results, the kubelet's hard-coded directories and its sysctls
    expect(ownLeftovers({ name: NAME, dir: nodeDir, shimSockets })).toEqual([]);
    const sharedAfter = sharedHostState();
    expect(newSharedState(sharedBefore, sharedAfter)).toEqual([]);
    // and the name is free again
    const net = await createNodeNetwork(NAME);
    await net.remove();
    expect(existsSync(`/run/netns/tether-${NAME}`)).toBe(false);
  });
});

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}
