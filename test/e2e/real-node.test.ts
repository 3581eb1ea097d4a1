// A local control plane with one real node (containerd + runc + kubelet + kube-proxy in a network
// namespace tether creates, kube-scheduler on the host): the Node turns Ready, a Deployment of a
// locally built image becomes Available, a ClusterIP Service serves it inside the node namespace,
// `kubectl logs`/`exec` reach the kubelet through the apiserver, the namespace reaches nothing but
// its host end, and after stop nothing the node created is left on the host. Cluster DNS first, on
// the same node: startNode resolves only once CoreDNS (built from Go modules, hack/coredns) answers
// behind kube-dns at 10.0.0.10; pods resolve `kubernetes.default.svc.cluster.local`, `<svc>.<ns>.svc`
// and the short `<svc>` of their own namespace through the search path, reach the echoserver
// Service by name, get NXDOMAIN for names outside the cluster (there is no upstream), and after
// stop the DNS pod is gone with the rest of the node.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
const NAME = `rn${process.pid % 100000}`;
/** the namespace of the node's echo Deployment and Service */
const NS = 'node-app';
/** the namespace of the DNS cases' echo Service and its pod */
const APP_NS = 'dns-app';

let dir: string;
let network: NodeNetwork | undefined;
let cp: ControlPlane | undefined;
let node: RealNode | undefined;
let core: CoreV1Api;
let apps: AppsV1Api;
const measured: Record<string, string> = {};

function hostChains(): Promise<string> {
  return Promise.all(
    ['iptables-save', 'ip6tables-save'].map((c) =>
      exec(c, []).then(({ stdout }) =>
        stdout
          .split('\n')
          .filter((l) => l.startsWith(':'))
          .sort()
          .join('\n'),
      ),
    ),
  ).then((x) => x.join('\n'));
}

function podNetns(): string[] {
  return existsSync('/run/netns') ? readdirSync('/run/netns').filter((n) => n.startsWith('cni-')) : [];
}

let sharedBefore: SharedHostState | undefined;
let chainsBefore = '';
let netnsDirBefore = false;
let netnsBefore: string[] = [];
/** set by the stop case, checked by the one after it */
let nodeDir = '';
let shimSockets: string[] = [];

beforeAll(async () => {
  chainsBefore = await hostChains();
  sharedBefore = sharedHostState();
  netnsBefore = podNetns();
  netnsDirBefore = existsSync('/run/netns');
  let t = Date.now();
  const binaries = await ensureNodeBinaries((l) => process.stderr.write(`[real-node] ${l}\n`));
  const images = await ensureNodeImages((l) => process.stderr.write(`[real-node] ${l}\n`));
  measured.binariesAndImages = `${((Date.now() - t) / 1000).toFixed(1)} s`;
  dir = mkdtempSync(join(tmpdir(), 'tether-real-node-'));
  t = Date.now();
  network = await createNodeNetwork(NAME);
  cp = await startControlPlane(NAME, { baseDir: dir, nodeNetwork: { hostAddress: network.hostAddress } });
  measured.controlPlane = `${((Date.now() - t) / 1000).toFixed(1)} s`;
  t = Date.now();
  const progress = (l: string): void => {
    const dnsLine = /cluster DNS on .* answering in ([\d.]+)s/.exec(l);
    if (dnsLine) measured.dnsAddsToStartNode = `${dnsLine[1]} s`;
  };
  node = await startNode(cp, network, { baseDir: dir, binaries, images, progress });
  measured.nodeReady = `${((Date.now() - t) / 1000).toFixed(1)} s`;
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
}, 900_000);

afterAll(async () => {
  await node?.stop();
  await cp?.stop();
  await network?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`[real-node] measured: ${JSON.stringify(measured)}\n`);
}, 120_000);

function kubectl(args: string[]): Promise<string> {
  return exec('kubectl', [`--kubeconfig=${cp?.kubeconfigPath}`, ...args], { timeout: 30_000 }).then(
    (r) => r.stdout,
  );
}

/** An HTTP GET from inside the node's network namespace (node's own fetch, 2 s timeout). */
function getInNode(url: string): Promise<string> {
  if (!node) throw new Error('no node');
  return node
    .exec(process.execPath, [
      '-e',
      `fetch(${JSON.stringify(url)},{signal:AbortSignal.timeout(2000)}).then(r=>r.text()).then(t=>process.stdout.write(t))`,
    ])
    .then((r) => r.stdout);
}

/** Runs the echoserver binary's client mode in a pod (`get URL`, `dial HOST:PORT`). */
function inPod(namespace: string, pod: string, args: string[]): Promise<string> {
  return kubectl(['exec', '-n', namespace, pod, '--', '/echoserver', ...args]);
}

/** A Deployment of `replicas` echoservers from the node's image, optionally behind a Service of the same name. */
async function createEcho(namespace: string, name: string, replicas: number, withService: boolean) {
  if (!node) throw new Error('no node');
  const labels = { app: name };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name },
      spec: {
        replicas,
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
}

/** A Deployment of one echoserver pod (optionally behind a Service of the same name); its pod's name. */
async function echoDeployment(namespace: string, name: string, withService: boolean): Promise<string> {
  await createEcho(namespace, name, 1, withService);
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
});

describe('a local control plane with one real node', () => {
  it('registers the node Ready with its veth address as InternalIP', async () => {
    const n = await core.readNode({ name: NAME });
    expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address).toBe(network?.nodeAddress);
  });

  it('runs a Deployment of a locally built image to Available and serves it through a ClusterIP Service inside the node namespace', async () => {
    if (!node) throw new Error('no node');
    const t = Date.now();
    await createEcho(NS, 'echo', 2, true);
    await pollUntil(
      async () => {
        const d = await apps.readNamespacedDeployment({ name: 'echo', namespace: NS });
        return d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') &&
          d.status?.availableReplicas === 2
          ? d
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'Deployment echo to be Available with 2 replicas' },
    );
    measured.deploymentAvailable = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    const svc = await core.readNamespacedService({ name: 'echo', namespace: NS });
    const clusterIp = svc.spec?.clusterIP;
    expect(clusterIp).toMatch(/^10\.0\.0\.\d+$/);
    const body = await pollUntil(() => getInNode(`http://${clusterIp}/`), {
      timeoutMs: 20_000,
      intervalMs: 300,
      description: `the echo Service at ${clusterIp} from inside ${network?.netns}`,
    });
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=echo' });
    const podNames = pods.items.map((p) => p.metadata?.name);
    expect(podNames).toHaveLength(2);
    expect(body).toMatch(/^hello from /);
    expect(podNames).toContain(body.trim().replace('hello from ', ''));
    for (const p of pods.items) expect(p.status?.podIP).toMatch(/^10\.245\.\d+\.\d+$/);
    const rss = node.rss();
    measured.rssMiB = JSON.stringify(
      Object.fromEntries(Object.entries(rss).map(([k, v]) => [k, Math.round(v / 1048576)])),
    );
    for (const p of ['containerd', 'kubelet', 'kube-proxy']) expect(rss[p]).toBeGreaterThan(0);
  });

  it('answers kubectl logs and kubectl exec (apiserver → kubelet inside the namespace)', async () => {
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=echo' });
    const pod = pods.items[0]?.metadata?.name;
    if (!pod) throw new Error('no echo pod');
    // the request of the previous test (or this one) shows up in one of the two pods' logs
    await getInNode(`http://${pods.items[0]?.status?.podIP}:8080/from-logs-test`);
    const logs = await pollUntil(
      async () => {
        const out = await kubectl(['logs', '-n', NS, pod]);
        return out.includes('GET /from-logs-test') ? out : undefined;
      },
      { timeoutMs: 10_000, description: `kubectl logs ${pod} to show the request` },
    );
    expect(logs).toContain('listening on :8080');
    const out = await kubectl(['exec', '-n', NS, pod, '--', '/echoserver', 'hostname']);
    expect(out.trim()).toBe(pod);
  });

  it('lets a pod reach a ClusterIP Service served by pods on the same bridge, and the apiserver through the kubernetes Service', async () => {
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=echo' });
    const pod = pods.items[0]?.metadata?.name;
    if (!pod) throw new Error('no echo pod');
    const svc = await core.readNamespacedService({ name: 'echo', namespace: NS });
    // 10 tries: one of the two endpoints is the calling pod itself (hairpin), the other its neighbour
    for (let i = 0; i < 10; i++) {
      const body = await kubectl([
        'exec',
        '-n',
        NS,
        pod,
        '--',
        '/echoserver',
        'get',
        `http://${svc.spec?.clusterIP}/`,
      ]);
      expect(body).toMatch(/^hello from echo-/);
    }
    // the `kubernetes` Service's endpoint is the apiserver on the host end of the veth
    const endpoints = await core.readNamespacedEndpoints({ name: 'kubernetes', namespace: 'default' });
    expect(endpoints.subsets?.[0]?.addresses?.[0]?.ip).toBe(network?.hostAddress);
    const dialed = await kubectl(['exec', '-n', NS, pod, '--', '/echoserver', 'dial', '10.0.0.1:443']);
    expect(dialed.trim()).toBe('connected');
  });

  it('drops what the node namespace sends anywhere but its host end', async () => {
    if (!node || !network) throw new Error('no node');
    const routes = (await node.exec('ip', ['-4', 'route'])).stdout;
    expect(routes).not.toMatch(/^default/m);
    const dropped = async (): Promise<number> => {
      const out = (
        await node?.exec('iptables', ['-w', '-t', 'mangle', '-L', 'POSTROUTING', '-v', '-x', '-n'])
      )?.stdout;
      const line = out?.split('\n').find((l) => l.includes('DROP'));
      return Number(line?.trim().split(/\s+/)[0]);
    };
    // A ClusterIP no Service owns, found by listing the ones in use: the apiserver hands them out at
    // random (a CI run's echo Service once got 10.0.0.250, which this test had taken as free).
    const owned = new Set(
      (await core.listServiceForAllNamespaces()).items.flatMap((svc) => svc.spec?.clusterIPs ?? []),
    );
    const unowned = Array.from({ length: 50 }, (_, i) => `10.0.0.${254 - i}`).find((ip) => !owned.has(ip));
    const before = await dropped();
    // it is routed towards the host and must die at the veth, in the namespace
    await expect(getInNode(`http://${unowned}/`)).rejects.toThrow();
    expect(await dropped()).toBeGreaterThan(before);
  });

  it('respawns a SIGKILLed kubelet with the same command line: pods keep serving, the node rejoins, exec works again', async () => {
    if (!node) throw new Error('no node');
    const kubelet = node.processes.find((p) => p.name === `${NAME}/kubelet`);
    if (!kubelet?.pid || !kubelet.readiness) throw new Error('no kubelet with readiness');
    const oldPid = kubelet.pid;
    process.kill(oldPid, 'SIGKILL');
    await kubelet.exited;
    const svc = await core.readNamespacedService({ name: 'echo', namespace: NS });
    // the pods do not depend on the kubelet process
    expect(await getInNode(`http://${svc.spec?.clusterIP}/`)).toMatch(/^hello from echo-/);
    const t = Date.now();
    expect(kubelet.respawn()).toBe(true);
    await kubelet.readiness();
    measured.kubeletRejoin = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    expect(kubelet.pid).not.toBe(oldPid);
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=echo' });
    const pod = pods.items[0]?.metadata?.name;
    if (!pod) throw new Error('no echo pod');
    const out = await pollUntil(() => kubectl(['exec', '-n', NS, pod, '--', '/echoserver', 'hostname']), {
      timeoutMs: 20_000,
      description: 'kubectl exec through the respawned kubelet',
    });
    expect(out.trim()).toBe(pod);
  });

  it('leaves no process, mount, namespace, veth or cgroup behind after stop (DNS pod included)', async () => {
    if (!node || !network || !cp) throw new Error('no node');
    const podPids = pidsInCgroupTree(`/tether-${NAME}`);
    const pods = (await core.listPodForAllNamespaces()).items.filter((p) => p.spec?.nodeName === NAME);
    // two echoservers here, cluster DNS, and the DNS cases' echo and client: a pause and a program each
    expect(pods).toHaveLength(5);
    expect(podPids.length).toBeGreaterThanOrEqual(2 * pods.length);
    const pids = [
      ...podPids,
      ...(await processesInNetns(network.netns)),
      ...node.processes.map((p) => p.pid),
    ].filter((p): p is number => p !== undefined);
    nodeDir = node.dir;
    shimSockets = await nodeShimSockets(network.netns);
    expect(shimSockets.length).toBe(pods.length);
    const t = Date.now();
    await node.stop();
    measured.nodeStop = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    await cp.stop();
    const alive = pids.filter((p) => existsSync(`/proc/${p}`));
    expect(alive).toEqual([]);
    expect(mountsUnder([nodeDir, dir])).toEqual([]);
    expect(existsSync(`/run/netns/${network.netns}`)).toBe(false);
    expect(podNetns().filter((n) => !netnsBefore.includes(n))).toEqual([]);
    // /run/netns is shared: its mount is ours to undo only if no other namespace appeared meanwhile
    if (!existsSync('/run/netns') || readdirSync('/run/netns').length === 0) {
      expect(existsSync('/run/netns')).toBe(netnsDirBefore);
    }
    expect(existsSync(`/sys/class/net/${network.hostIface}`)).toBe(false);
    expect(cgroupsLeft(`/tether-${NAME}`)).toEqual([]);
    expect(existsSync(nodeDir)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(nodeDir);
  });

  it("leaves the host's iptables chains, shared directories and kubelet sysctls as they were after stop", async () => {
    if (!nodeDir) throw new Error('the node was not stopped by the case before');
    expect(await hostChains()).toBe(chainsBefore);
    expect(ownLeftovers({ name: NAME, dir: nodeDir, shimSockets })).toEqual([]);
    // hard-coded directories and the kubelet's sysctls: as before, unless another kubelet runs (then
    // they are partly its own)
    expect(newSharedState(sharedBefore, sharedHostState())).toEqual([]);
  });
});
