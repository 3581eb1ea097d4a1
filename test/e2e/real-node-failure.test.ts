// A real node that cannot start (its kubelet exits at once) fails with the kubelet's own words and
// takes everything it had started with it: containerd and the shims, the namespace and veth, the
// node's cgroups, mounts and directory.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNodeBinaries, type NodeBinaries } from '../../src/localenv/binaries.ts';
import { type ControlPlane, startControlPlane } from '../../src/localenv/controlplane.ts';
import { startNode } from '../../src/localenv/node.ts';
import { cgroupsLeft, mountsUnder } from '../../src/localenv/node-host-state.ts';
import { ensureNodeImages, type NodeImages } from '../../src/localenv/node-images.ts';
import { createNodeNetwork, type NodeNetwork } from '../../src/localenv/node-network.ts';

const NAME = `rf${process.pid % 100000}`;
let dir: string | undefined;
let network: NodeNetwork | undefined;
let cp: ControlPlane | undefined;
let binaries: NodeBinaries;
let images: NodeImages;

// a cold machine builds the node binaries here (minutes), outside the scenario's own timeout
beforeAll(async () => {
  binaries = await ensureNodeBinaries();
  images = await ensureNodeImages();
}, 900_000);

afterAll(async () => {
  await cp?.stop();
  await network?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a real node that fails to start', () => {
  it('reports the failing kubelet and leaves nothing behind', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tether-real-node-failure-'));
    network = await createNodeNetwork(NAME);
    cp = await startControlPlane(NAME, { baseDir: dir, nodeNetwork: { hostAddress: network.hostAddress } });
    const pidsBefore = new Set(readdirSync('/proc').filter((p) => /^\d+$/.test(p)));
    // a kubelet that refuses its flags: exits 1 with a usage error right after containerd is up
    const err = await startNode(cp, network, {
      baseDir: dir,
      images,
      binaries: { ...binaries, kubelet: binaries.kubeProxy },
      readyTimeoutMs: 30_000,
    }).catch((e: unknown) => e as Error & { code?: string });
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: string }).code).toBe('TETHER_PROCESS_FAILED');
    expect((err as Error).message).toContain(`${NAME}/kubelet exited`);
    expect((err as Error).message).toMatch(/unknown flag/);
    // nothing the node started runs on (containerd, shims, scheduler): no new process with those names
    const leftovers = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p) && !pidsBefore.has(p))
      .map(comm)
      .filter((c) => /containerd|kubelet|kube-proxy|kube-scheduler|pause/.test(c));
    expect(leftovers).toEqual([]);
    expect(existsSync(`/run/netns/${network.netns}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${network.hostIface}`)).toBe(false);
    expect(cgroupsLeft(`/tether-${NAME}`)).toEqual([]);
    expect(readdirSync(dir).filter((d) => d.startsWith('tether-node-'))).toEqual([]);
    expect(mountsUnder([dir])).toEqual([]);
  });
});

function comm(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}
