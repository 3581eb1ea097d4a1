// Cluster DNS on a real node: startNode resolves only once CoreDNS (built from Go modules, hack/coredns)
// answers behind kube-dns at 10.0.0.10; pods resolve `kubernetes.default.svc.cluster.local`,
// `<svc>.<ns>.svc` and the short `<svc>` of their own namespace through the search path, reach the
// echoserver Service by name, get NXDOMAIN for names outside the cluster (there is no upstream), and
// after stop the DNS pod is gone with the rest of the node.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import { type ControlPlane, startControlPlane } from '../../src/localenv/controlplane.ts';
import { type RealNode, startNode } from '../../src/localenv/node.ts';
import { CLUSTER_DNS_IP, resolveInNetns } from '../../src/localenv/node-dns.ts';
import { cgroupsLeft, mountsUnder, pidsInCgroupTree } from '../../src/localenv/node-host-state.ts';
import { ensureNodeImages } from '../../src/localenv/node-images.ts';
import { createNodeNetwork, type NodeNetwork, processesInNetns } from '../../src/localenv/node-network.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  newSharedState,
  nodeShimSockets,
  ownLeftovers,
  type SharedHostState,
  sharedHostState,
} from './fixtures/real-node-host.ts';

const exec = promisify(execFile);
const NAME = `rd${process.pid % 100000}`;
/** the namespace of the echo Service and its pod */
const APP_NS = 'dns-app';

let dir: string;
let network: NodeNetwork | undefined;
let cp: ControlPlane | undefined;
let node: RealNode | undefined;
let core: CoreV1Api;
let apps: AppsV1Api;
let sharedBefore: SharedHostState | undefined;
const measured: Record<string, string> = {};

beforeAll(async () => {
  sharedBefore = sharedHostState();
  const log = (l: string): void => {
    process.stderr.write(`[real-node-dns] ${l}\n`);
    const dns = /cluster DNS on .* answering in ([\d.]+)s/.exec(l);
    if (dns) measured.dnsAddsToStartNode = `${dns[1]} s`;
  };
  let t = Date.now();
  const binaries = await ensureNodeBinaries(log);
  const images = await ensureNodeImages(log);
  measured.binariesAndImages = `${((Date.now() - t) / 1000).toFixed(1)} s`;
  dir = mkdtempSync(join(tmpdir(), 'tether-real-node-dns-'));
  network = await createNodeNetwork(NAME);
  cp = await startControlPlane(NAME, { baseDir: dir, nodeNetwork: { hostAddress: network.hostAddress } });
  t = Date.now();
  node = await startNode(cp, network, { baseDir: dir, binaries, images, progress: log });
  measured.startNode = `${((Date.now() - t) / 1000).toFixed(1)} s`;
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
}, 900_000);

afterAll(async () => {
  await node?.stop();
  await cp?.stop();
  await network?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`[real-node-dns] measured: ${JSON.stringify(measured)}\n`);
}, 120_000);

function kubectl(args: string[]): Promise<string> {
  return exec('kubectl', [`--kubeconfig=${cp?.kubeconfigPath}`, ...args], { timeout: 30_000 }).then(
    (r) => r.stdout,
  );
}

/** Runs the echoserver binary's client mode in a pod (`get URL`, `dial HOST:PORT`). */
function inPod(namespace: string, pod: string, args: string[]): Promise<string> {
  return kubectl(['exec', '-n', namespace, pod, '--', '/echoserver', ...args]);
}

/** A Deployment of one echoserver pod (optionally behind a Service of the same name); its pod's name. */
async function echoDeployment(namespace: string, name: string, withService: boolean): Promise<string> {
  if (!node) throw new Error('no node');
  const labels = { app: name };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'echo',
                image: node.images.echoserver.ref,
                imagePullPolicy: 'Never',
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    },
  });
  if (withService) {
    await core.createNamespacedService({
      namespace,
      body: { metadata: { name }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] } },
    });
  }
  return pollUntil(
    async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: `app=${name}` });
      const ready = pods.items.find((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready?.metadata?.name;
    },
    { timeoutMs: 60_000, intervalMs: 250, description: `a Ready pod of ${namespace}/${name}` },
  );
}

describe('cluster DNS on a real node', () => {
  it('is answering behind kube-dns at 10.0.0.10 when startNode resolves, and answers NXDOMAIN for names outside the cluster', async () => {
    if (!network) throw new Error('no network');
    const svc = await core.readNamespacedService({ name: 'kube-dns', namespace: 'kube-system' });
    expect(svc.spec?.clusterIP).toBe(CLUSTER_DNS_IP);
    const pods = await core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'k8s-app=kube-dns',
    });
    expect(pods.items).toHaveLength(1);
    expect(pods.items[0]?.spec?.nodeName).toBe(NAME);
    expect(pods.items[0]?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    // no poll: the first query after startNode must answer
    const t = Date.now();
    expect(
      await resolveInNetns(network.netns, CLUSTER_DNS_IP, 'kubernetes.default.svc.cluster.local'),
    ).toEqual(['10.0.0.1']);
    measured.firstQuery = `${Date.now() - t} ms (incl. node process start)`;
    await expect(
      resolveInNetns(network.netns, CLUSTER_DNS_IP, 'nothere.default.svc.cluster.local'),
    ).rejects.toThrow(/ENOTFOUND/);
    // no forward and no upstream: NXDOMAIN at once rather than a timeout
    await expect(resolveInNetns(network.netns, CLUSTER_DNS_IP, 'example.com')).rejects.toThrow(/ENOTFOUND/);
    const coredns = pidsInCgroupTree(`/tether-${NAME}`).find(
      (pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'coredns',
    );
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${coredns}/status`, 'utf8'))?.[1];
    measured.corednsRssMiB = String(Math.round(Number(rss) / 1024));
  });

  it("lets a pod resolve kubernetes.default.svc.cluster.local, <svc>.<ns>.svc and its own namespace's <svc>, and reach the echoserver Service by name", async () => {
    await core.createNamespace({ body: { metadata: { name: APP_NS } } });
    const t = Date.now();
    const [appPod, otherPod] = await Promise.all([
      echoDeployment(APP_NS, 'echo', true),
      echoDeployment('default', 'client', false),
    ]);
    measured.twoPodsReady = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    // the Service's endpoint may be programmed a moment after the pod turns Ready
    const byShortName = await pollUntil(() => inPod(APP_NS, appPod, ['get', 'http://echo/']), {
      timeoutMs: 20_000,
      intervalMs: 300,
      description: 'http://echo/ from a pod in its namespace',
    });
    expect(byShortName.trim()).toBe(`hello from ${appPod}`);
    expect((await inPod(APP_NS, appPod, ['get', `http://echo.${APP_NS}.svc/`])).trim()).toBe(
      `hello from ${appPod}`,
    );
    expect((await inPod('default', otherPod, ['get', `http://echo.${APP_NS}.svc/`])).trim()).toBe(
      `hello from ${appPod}`,
    );
    expect(
      (await inPod('default', otherPod, ['get', `http://echo.${APP_NS}.svc.cluster.local/`])).trim(),
    ).toBe(`hello from ${appPod}`);
    // the apiserver by its Service name, fully qualified and through the search path
    for (const host of ['kubernetes.default.svc.cluster.local', 'kubernetes.default', 'kubernetes']) {
      expect((await inPod('default', otherPod, ['dial', `${host}:443`])).trim()).toBe('connected');
    }
    // the search path is the pod's own namespace: `echo` from default is another (absent) Service
    await expect(inPod('default', otherPod, ['get', 'http://echo/'])).rejects.toThrow(/no such host/);
    // outside the cluster: "no such host" at once, not a 5 s timeout per search-path try
    const t2 = Date.now();
    await expect(inPod('default', otherPod, ['dial', 'example.com:80'])).rejects.toThrow(/no such host/);
    measured.outsideNameFails = `${((Date.now() - t2) / 1000).toFixed(1)} s (incl. kubectl exec)`;
    expect(Date.now() - t2).toBeLessThan(10_000);
  });

  it('leaves no process, mount, namespace, cgroup or file of the node (DNS pod included) after stop', async () => {
    if (!node || !network || !cp) throw new Error('no node');
    const podPids = pidsInCgroupTree(`/tether-${NAME}`);
    // three pods (CoreDNS, echo, client): a pause and a program each
    expect(podPids.length).toBeGreaterThanOrEqual(6);
    const pids = [
      ...podPids,
      ...(await processesInNetns(network.netns)),
      ...node.processes.map((p) => p.pid),
    ].filter((p): p is number => p !== undefined);
    const nodeDir = node.dir;
    const shimSockets = await nodeShimSockets(network.netns);
    expect(shimSockets.length).toBe(3);
    const t = Date.now();
    await node.stop();
    measured.nodeStop = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    await cp.stop();
    expect(pids.filter((p) => existsSync(`/proc/${p}`))).toEqual([]);
    expect(mountsUnder([nodeDir, dir])).toEqual([]);
    expect(existsSync(`/run/netns/${network.netns}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${network.hostIface}`)).toBe(false);
    expect(cgroupsLeft(`/tether-${NAME}`)).toEqual([]);
    expect(ownLeftovers({ name: NAME, dir: nodeDir, shimSockets })).toEqual([]);
    expect(newSharedState(sharedBefore, sharedHostState())).toEqual([]);
    expect(existsSync(nodeDir)).toBe(false);
  });
});
