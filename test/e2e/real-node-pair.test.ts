// Two control planes with a real node each on one host (what `tether up` needs: hub + managed):
// separate namespaces, subnets and cgroup roots; stopping one node leaves the other's pods, shim
// sockets and the kubelet's sysctls alone; after both stop nothing is left.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import { type ControlPlane, startControlPlane } from '../../src/localenv/controlplane.ts';
import { type RealNode, startNode } from '../../src/localenv/node.ts';
import { cgroupsLeft, pidsInCgroupTree } from '../../src/localenv/node-host-state.ts';
import { ensureNodeImages } from '../../src/localenv/node-images.ts';
import { createNodeNetwork, type NodeNetwork } from '../../src/localenv/node-network.ts';
import { pollUntil } from '../../src/wait.ts';
import { newSharedState, nodeShimSockets, ownLeftovers, sharedHostState } from './fixtures/real-node-host.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-real-node-pair-'));
const started: Array<{ network: NodeNetwork; cp?: ControlPlane; node?: RealNode }> = [];

// a cold machine builds the node binaries here (minutes), outside the scenario's own timeout
beforeAll(async () => {
  await ensureNodeBinaries();
  await ensureNodeImages();
}, 900_000);

afterAll(async () => {
  for (const s of started) {
    await s.node?.stop();
    await s.cp?.stop();
    await s.network.remove();
  }
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

async function startWithNode(name: string): Promise<{ cp: ControlPlane; node: RealNode; core: CoreV1Api }> {
  const network = await createNodeNetwork(name);
  const entry: (typeof started)[number] = { network };
  started.push(entry);
  entry.cp = await startControlPlane(name, {
    baseDir: dir,
    nodeNetwork: { hostAddress: network.hostAddress },
  });
  entry.node = await startNode(entry.cp, network, { baseDir: dir });
  const kc = new KubeConfig();
  kc.loadFromFile(entry.cp.kubeconfigPath);
  return { cp: entry.cp, node: entry.node, core: kc.makeApiClient(CoreV1Api) };
}

async function runPod(core: CoreV1Api, node: RealNode): Promise<string> {
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name: 'echo' },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'echo', image: node.images.echoserver.ref, imagePullPolicy: 'Never' }],
      },
    },
  });
  return pollUntil(
    async () => {
      const pod = await core.readNamespacedPod({ name: 'echo', namespace: 'default' });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { timeoutMs: 60_000, description: `pod echo on ${node.name} to run` },
  );
}

describe('two control planes with a real node each', () => {
  it('run side by side, and stopping one leaves the other working', async () => {
    const sharedBefore = sharedHostState();
    const tag = process.pid % 100000;
    const a = await startWithNode(`pa${tag}`);
    const b = await startWithNode(`pb${tag}`);
    expect(a.node.network.nodeAddress).not.toBe(b.node.network.nodeAddress);
    expect(a.node.network.podCidr).not.toBe(b.node.network.podCidr);
    const [ipA, ipB] = await Promise.all([runPod(a.core, a.node), runPod(b.core, b.node)]);
    expect(ipA?.startsWith(a.node.network.podCidr.replace(/0\/24$/, ''))).toBe(true);
    expect(ipB?.startsWith(b.node.network.podCidr.replace(/0\/24$/, ''))).toBe(true);
    const socketsA = await nodeShimSockets(a.node.network.netns);
    const socketsB = await nodeShimSockets(b.node.network.netns);
    // echo and cluster DNS on each node
    expect([socketsA.length, socketsB.length]).toEqual([2, 2]);
    const bPods = pidsInCgroupTree(`/tether-${b.node.name}`);
    expect(bPods.length).toBeGreaterThanOrEqual(2);
    const panicWhileRunning = readFileSync('/proc/sys/kernel/panic', 'utf8').trim();

    await a.node.stop();
    // b: pod processes, shim socket, Node Ready, serving from its namespace, kubelet sysctls untouched
    for (const p of bPods) expect(existsSync(`/proc/${p}`)).toBe(true);
    expect(ownLeftovers({ name: a.node.name, dir: a.node.dir, shimSockets: socketsA })).toEqual([]);
    expect(socketsB.filter((s) => existsSync(s))).toEqual(socketsB);
    const body = await b.node.exec(process.execPath, [
      '-e',
      `fetch('http://${ipB}:8080/').then(r=>r.text()).then(t=>process.stdout.write(t))`,
    ]);
    expect(body.stdout).toBe('hello from echo\n');
    const nodeB = await b.core.readNode({ name: b.node.name });
    expect(nodeB.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(readFileSync('/proc/sys/kernel/panic', 'utf8').trim()).toBe(panicWhileRunning);
    expect(cgroupsLeft(`/tether-${a.node.name}`)).toEqual([]);

    await b.node.stop();
    expect(ownLeftovers({ name: b.node.name, dir: b.node.dir, shimSockets: socketsB })).toEqual([]);
    expect(cgroupsLeft(`/tether-${b.node.name}`)).toEqual([]);
    for (const p of bPods) expect(existsSync(`/proc/${p}`)).toBe(false);
    // the last kubelet gone (unless another suite runs one), its forced sysctls are back
    const sharedAfter = sharedHostState();
    expect(newSharedState(sharedBefore, sharedAfter)).toEqual([]);
  });
});
