// `startEnvironment({ nodes: true })`: a hub and one managed cluster, each with a real node. The
// managed node reaches its own apiserver and squid, but the hub apiserver only through squid (a
// direct connection is dropped by the firewall in its namespace, at its own host end, at the hub's
// host end and over IPv6); squid lets it reach the hub apiserver (TLS verified against the hub CA
// for the host-end IP) and the hub node's NodePorts and nothing else; the hub apiserver and the
// host reach hub pods by IP; the tether image is in every node's containerd; stop() leaves nothing.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import { type Environment, startEnvironment } from '../../src/localenv/environment.ts';
import type { RealNode } from '../../src/localenv/node.ts';
import { FIREWALL_CHAIN } from '../../src/localenv/node-firewall.ts';
import { cgroupsLeft, mountsUnder } from '../../src/localenv/node-host-state.ts';
import { ensureNodeImages } from '../../src/localenv/node-images.ts';
import { processesInNetns } from '../../src/localenv/node-network.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  newSharedState,
  nodeShimSockets,
  ownLeftovers,
  type SharedHostState,
  sharedHostState,
} from './fixtures/real-node-host.ts';

const exec = promisify(execFile);
const PROBE = fileURLToPath(new URL('./fixtures/netns-probe.ts', import.meta.url));
const NS = 'default';
// node names are per host: a `tether up` (hub, cluster1, …) may run on this machine meanwhile
const PREFIX = `e${process.pid % 100000}-`;
const HUB = `${PREFIX}hub`;
const CLUSTER1 = `${PREFIX}cluster1`;

let parent: string;
let env: Environment | undefined;
let hubNode: RealNode;
let managedNode: RealNode;
let sharedBefore: SharedHostState | undefined;
let chainsBefore = '';
const progressLines: string[] = [];
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

/**
 * The shared host state, unless any node network exists (ours included: the first call is before
 * ours exist, the second after they are gone): another node between start and stop owns part of it
 * even before its kubelet runs (the kubelet's sysctls are recorded and restored around it).
 */
function sharedStateWithoutNodes(): SharedHostState | undefined {
  const netns = existsSync('/run/netns')
    ? readdirSync('/run/netns').filter((n) => n.startsWith('tether-'))
    : [];
  return netns.length > 0 ? undefined : sharedHostState();
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Runs the probe fixture inside `node`'s network namespace and parses its JSON line. */
async function probe(node: RealNode, args: string[]): Promise<Record<string, string | number>> {
  const { stdout } = await node.exec(process.execPath, [PROBE, ...args]);
  return JSON.parse(stdout.trim());
}

/** Packets the managed firewall's final DROP has counted. */
async function firewallDrops(): Promise<number> {
  const { stdout } = await managedNode.exec('iptables', [
    '-w',
    '-t',
    'mangle',
    '-L',
    FIREWALL_CHAIN,
    '-v',
    '-x',
    '-n',
  ]);
  const line = stdout.split('\n').find((l) => /\bDROP\b/.test(l));
  return Number(line?.trim().split(/\s+/)[0]);
}

function kubectl(kubeconfig: string, args: string[]): Promise<string> {
  return exec('kubectl', [`--kubeconfig=${kubeconfig}`, ...args], { timeout: 30_000 }).then((r) => r.stdout);
}

// a cold machine builds the node binaries and images here, outside the scenarios' timeouts
beforeAll(async () => {
  await ensureNodeBinaries((l) => process.stderr.write(`[real-node-env] ${l}\n`));
  await ensureNodeImages((l) => process.stderr.write(`[real-node-env] ${l}\n`));
}, 900_000);

async function startMainEnvironment(): Promise<void> {
  chainsBefore = await hostChains();
  sharedBefore = sharedStateWithoutNodes();
  parent = mkdtempSync(join(tmpdir(), 'tether-real-node-env-'));
  const t = Date.now();
  env = await startEnvironment({
    clusters: 1,
    dir: join(parent, 'env'),
    nodes: true,
    tunnel: false,
    namePrefix: PREFIX,
    progress: (l) => {
      progressLines.push(l);
      process.stderr.write(`[real-node-env] ${l}\n`);
    },
  });
  measured.environmentStart = `${((Date.now() - t) / 1000).toFixed(1)} s`;
  const nodes = env.nodes ?? {};
  const [h, c] = [nodes[HUB], nodes[CLUSTER1]];
  if (!h || !c) throw new Error(`environment has no ${HUB} or ${CLUSTER1} node`);
  hubNode = h;
  managedNode = c;
}

describe('a local environment with real nodes (hub + cluster1)', () => {
  beforeAll(startMainEnvironment, 300_000);

  afterAll(async () => {
    await env?.stop();
    if (parent) rmSync(parent, { recursive: true, force: true });
    process.stderr.write(`[real-node-env] measured: ${JSON.stringify(measured)}\n`);
    const timings = progressLines.filter((l) =>
      /Ready in|imported into|tether image|control plane .* ready/.test(l),
    );
    process.stderr.write(`[real-node-env] start timings:\n  ${timings.join('\n  ')}\n`);
  }, 120_000);

  it('exposes both nodes, squid on the managed host end, the hub apiserver for nodes and the image', () => {
    if (!env) throw new Error('no environment');
    const hubNet = hubNode.network;
    const managedNet = managedNode.network;
    expect(env.hubApiserverUrlForNodes).toBe(`https://${hubNet.hostAddress}:${portOf(env.hub.apiserverUrl)}`);
    expect(env.squid?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env.squid?.urlFor(CLUSTER1)).toBe(
      `http://${managedNet.hostAddress}:${portOf(env.squid?.url ?? '')}`,
    );
    expect(() => env?.squid?.urlFor(HUB)).toThrow(`no managed cluster ${HUB}`);
    expect(env.image?.ref).toMatch(/^localhost\/tether:/);
    expect(env.tunnel).toBeUndefined();
    // the supervisor sees the nodes' processes and squid
    const names = env.processes().map((p) => p.name);
    for (const n of [
      `${HUB}/kubelet`,
      `${CLUSTER1}/kubelet`,
      `${CLUSTER1}/containerd`,
      `${CLUSTER1}/kube-proxy`,
      'squid',
    ]) {
      expect(names).toContain(n);
    }
  });

  it('lets the managed node reach its own apiserver but drops every direct connection to the hub', async () => {
    if (!env) throw new Error('no environment');
    const hubPort = portOf(env.hub.apiserverUrl);
    const ownPort = portOf(env.clusters[0]?.apiserverUrl ?? '');
    const managedHost = managedNode.network.hostAddress;
    expect(await probe(managedNode, ['tcp', managedHost, String(ownPort)])).toEqual({ result: 'connected' });
    // the hub apiserver binds 0.0.0.0: without the firewall this connects
    expect(await probe(managedNode, ['tcp', managedHost, String(hubPort)])).toEqual({ result: 'timeout' });
    // dropped by the firewall's last rule (nothing else sends to the host end on a port it refuses)
    expect(await firewallDrops()).toBeGreaterThan(0);
    // the hub's own host end and the hub node: not routed, or dropped
    for (const address of [hubNode.network.hostAddress, hubNode.network.nodeAddress]) {
      const r = await probe(managedNode, ['tcp', address, String(hubPort)]);
      expect(r.result).not.toBe('connected');
    }
    // IPv6: the host end's link-local address would reach every [::] listener of the host
    const { stdout } = await exec('ip', ['-6', '-o', 'addr', 'show', 'dev', managedNode.network.hostIface]);
    const linkLocal = /inet6 (fe80::[0-9a-f:]+)\//.exec(stdout)?.[1];
    if (linkLocal) {
      const r = await probe(managedNode, ['tcp', `${linkLocal}%eth0`, String(hubPort)]);
      expect(r.result).not.toBe('connected');
    }
  });

  it('lets a managed pod reach its own apiserver through the kubernetes Service but not the hub apiserver', async () => {
    if (!env) throw new Error('no environment');
    const kubeconfig = env.clusters[0]?.kubeconfigPath ?? '';
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'probe' },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'echo', image: managedNode.images.echoserver.ref, imagePullPolicy: 'Never' }],
        },
      },
    });
    await pollUntil(
      async () =>
        (await core.readNamespacedPod({ name: 'probe', namespace: NS })).status?.phase === 'Running',
      { timeoutMs: 60_000, intervalMs: 250, description: 'pod probe on cluster1 to run' },
    );
    const dial = (target: string): Promise<string> =>
      kubectl(kubeconfig, ['exec', '-n', NS, 'probe', '--', '/echoserver', 'dial', target]).then(
        (o) => o.trim(),
        (e: { stderr?: string }) => `failed: ${e.stderr ?? ''}`,
      );
    expect(await dial('10.0.0.1:443')).toBe('connected');
    const hubPort = portOf(env.hub.apiserverUrl);
    expect(await dial(`${managedNode.network.hostAddress}:${hubPort}`)).toMatch(/^failed: [\s\S]*timeout/);
    const squidPort = portOf(env.squid?.url ?? '');
    expect(await dial(`${managedNode.network.hostAddress}:${squidPort}`)).toBe('connected');
  });

  it('reaches the hub apiserver through squid (TLS verified for the host-end IP) and nothing else', async () => {
    if (!env?.squid) throw new Error('no squid');
    const proxy = new URL(env.squid.urlFor(CLUSTER1)).host;
    const hub = new URL(env.hubApiserverUrlForNodes ?? '');
    const r = await probe(managedNode, [
      'connect',
      proxy,
      hub.hostname,
      hub.port,
      env.hub.caCertPath,
      '/version',
    ]);
    expect(r.proxyStatus).toMatch(/^HTTP\/1\.1 200/);
    // anonymous /version is public; a 401/403 would still be the hub apiserver answering
    expect([200, 401, 403]).toContain(r.httpStatus);
    if (r.httpStatus === 200) expect(JSON.parse(String(r.body)).gitVersion).toMatch(/^v1\./);
    // squid is no way to anything else: the managed cluster's own or any other host port, loopback
    const ownPort = portOf(env.clusters[0]?.apiserverUrl ?? '');
    for (const [host, port] of [
      [hub.hostname, String(ownPort)],
      ['127.0.0.1', hub.port],
      [managedNode.network.hostAddress, hub.port],
    ] as const) {
      const denied = await probe(managedNode, ['connect', proxy, host, port, env.hub.caCertPath, '/']);
      expect(denied.proxyStatus).toMatch(/^HTTP\/1\.1 403/);
    }
    await pollUntil(
      () => readFileSync(env?.squid?.accessLogPath ?? '', 'utf8').includes(`CONNECT ${hub.host}`),
      {
        timeoutMs: 10_000,
        description: 'the CONNECT in squid access log',
      },
    );
  });

  it('lets the host and the hub apiserver reach a hub pod by IP, and squid the hub NodePort', async () => {
    if (!env?.squid) throw new Error('no squid');
    const kc = new KubeConfig();
    kc.loadFromFile(env.hub.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const labels = { app: 'echo' };
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'echo', labels },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'echo',
              image: hubNode.images.echoserver.ref,
              imagePullPolicy: 'Never',
              ports: [{ containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
            },
          ],
        },
      },
    });
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'echo' },
        spec: { type: 'NodePort', selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const podIp = await pollUntil(
      async () => {
        const p = await core.readNamespacedPod({ name: 'echo', namespace: NS });
        return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
          ? p.status?.podIP
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'pod echo on the hub to be Ready' },
    );
    expect(podIp).toMatch(/^10\.245\.\d+\.\d+$/);
    // host → pod IP: the host route via the node address
    const direct = await fetch(`http://${podIp}:8080/`, { signal: AbortSignal.timeout(3000) });
    expect(await direct.text()).toMatch(/^hello from echo\b/);
    // hub apiserver → pod IP (the service proxy dials an endpoint address, as aggregation does)
    const viaApiserver = await pollUntil(
      () =>
        kubectl(env?.hub.kubeconfigPath ?? '', [
          'get',
          '--raw',
          `/api/v1/namespaces/${NS}/services/echo:80/proxy/`,
        ]),
      { timeoutMs: 20_000, description: 'the hub apiserver proxying to the echo pod' },
    );
    expect(viaApiserver).toMatch(/^hello from echo\b/);
    const apiserverPid = env.processes().find((p) => p.name === `${HUB}/kube-apiserver`)?.pid;
    expect(readFileSync(`/proc/${apiserverPid}/cmdline`, 'utf8')).toContain(
      '--enable-aggregator-routing=true',
    );
    // managed node → squid → hub node NodePort (where the proxy-server's agent endpoint will be)
    const nodePort = svc.spec?.ports?.[0]?.nodePort;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    const proxy = new URL(env.squid.urlFor(CLUSTER1)).host;
    const r = await pollUntil(
      async () => {
        const x = await probe(managedNode, [
          'get-via',
          proxy,
          hubNode.network.nodeAddress,
          String(nodePort),
          '/',
        ]);
        return x.httpStatus === 200 ? x : undefined;
      },
      { timeoutMs: 20_000, description: 'the echo NodePort through squid' },
    );
    expect(r.body).toMatch(/^hello from echo\b/);
  });

  it('has the tether image in every node’s containerd', async () => {
    if (!env?.image) throw new Error('no image');
    for (const node of [hubNode, managedNode]) {
      const { stdout } = await exec('ctr', [
        '--address',
        join(node.dir, 'containerd', 'containerd.sock'),
        '--namespace',
        'k8s.io',
        'images',
        'ls',
        '-q',
      ]);
      expect(stdout.split('\n')).toContain(env.image.ref);
    }
    const imported = progressLines.filter((l) => l.startsWith('tether image imported into node'));
    expect(imported).toHaveLength(2);
  });

  it('respawns a SIGKILLed squid under the supervisor: managed nodes reach the hub through it again', async () => {
    if (!env?.squid) throw new Error('no squid');
    const reports: string[] = [];
    env.supervise({ report: (m) => reports.push(m), onGiveUp: (r) => reports.push(`gave up: ${r}`) });
    const squid = env.squid.process;
    const oldPid = squid.pid;
    if (!oldPid) throw new Error('squid is not running');
    const proxy = new URL(env.squid.urlFor(CLUSTER1)).host;
    const hub = new URL(env.hubApiserverUrlForNodes ?? '');
    const t = Date.now();
    process.kill(oldPid, 'SIGKILL');
    await pollUntil(() => reports.some((r) => r.startsWith(`squid is running again (pid ${squid.pid})`)), {
      timeoutMs: 30_000,
      description: `squid to be respawned (reports: ${JSON.stringify(reports)})`,
    });
    measured.squidRespawn = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    expect(squid.pid).not.toBe(oldPid);
    const r = await probe(managedNode, [
      'connect',
      proxy,
      hub.hostname,
      hub.port,
      env.hub.caCertPath,
      '/version',
    ]);
    expect(r.proxyStatus).toMatch(/^HTTP\/1\.1 200/);
    expect(reports.filter((m) => m.startsWith('gave up'))).toEqual([]);
  });

  it('leaves no process, namespace, veth, route, mount, cgroup, chain, squid or state behind after stop', async () => {
    if (!env) throw new Error('no environment');
    const nodes = [hubNode, managedNode];
    const shims = await Promise.all(nodes.map((n) => nodeShimSockets(n.network.netns)));
    const pids = [
      ...env.pids(),
      ...(await Promise.all(nodes.map((n) => processesInNetns(n.network.netns)))).flat(),
    ];
    expect(pids.length).toBeGreaterThan(10);
    const squidDir = join(env.squid?.accessLogPath ?? '', '..');
    expect(existsSync(squidDir)).toBe(true);
    const stateDir = join(env.dir, 'state');
    const t = Date.now();
    await env.stop();
    measured.environmentStop = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    const stopped = env;
    env = undefined;
    expect(pids.filter((p) => existsSync(`/proc/${p}`))).toEqual([]);
    const routes = (await exec('ip', ['-4', 'route'])).stdout;
    for (const [i, node] of nodes.entries()) {
      expect(existsSync(`/run/netns/${node.network.netns}`)).toBe(false);
      expect(existsSync(`/sys/class/net/${node.network.hostIface}`)).toBe(false);
      expect(routes).not.toContain(node.network.podCidr.split('/')[0]);
      expect(cgroupsLeft(`/tether-${node.name}`)).toEqual([]);
      expect(mountsUnder([node.dir])).toEqual([]);
      expect(existsSync(node.dir)).toBe(false);
      // the environment's directory for node directories goes too
      expect(existsSync(dirname(node.dir))).toBe(false);
      expect(ownLeftovers({ name: node.name, dir: node.dir, shimSockets: shims[i] ?? [] })).toEqual([]);
    }
    expect(existsSync(squidDir)).toBe(false);
    expect(existsSync(stateDir)).toBe(false);
    expect(
      readdirSync(stopped.dir).filter((f) => f.endsWith('.kubeconfig') || f === 'tether-up.pid'),
    ).toEqual([]);
    expect(await hostChains()).toBe(chainsBefore);
    expect(newSharedState(sharedBefore, sharedStateWithoutNodes())).toEqual([]);
  });
});

describe('a real-node environment aborted while its nodes start', () => {
  const prefix = `a${process.pid % 100000}-`;
  let abortParent: string | undefined;

  afterAll(() => {
    if (abortParent) rmSync(abortParent, { recursive: true, force: true });
  });

  it('rejects with the abort reason and leaves no process, namespace, veth, route, mount, cgroup or state', async () => {
    abortParent = mkdtempSync(join(tmpdir(), 'tether-real-node-env-abort-'));
    const dir = join(abortParent, 'env');
    const chains = await hostChains();
    const nodeBases = (): string[] => readdirSync(tmpdir()).filter((d) => d.startsWith('tether-nodes-'));
    const basesBefore = nodeBases();
    const aborter = new AbortController();
    const reason = new Error('the user pressed ctrl-c');
    const seen: string[] = [];
    let abortedAt = 0;
    // abort once the first node is Ready: the other node, squid and the image import are in flight
    const err = await startEnvironment({
      clusters: 1,
      dir,
      nodes: true,
      namePrefix: prefix,
      signal: aborter.signal,
      progress: (l) => {
        seen.push(l);
        if (/^node .* Ready in/.test(l) && !abortedAt) {
          abortedAt = Date.now();
          aborter.abort(reason);
        }
      },
    }).then(
      async (e) => {
        await e.stop();
        throw new Error(`started instead of aborting; progress: ${seen.join(' | ')}`);
      },
      (e: unknown) => e,
    );
    expect(err).toBe(reason);
    process.stderr.write(
      `[real-node-env] aborted after '${seen.find((l) => /Ready in/.test(l))}': rejected ${((Date.now() - abortedAt) / 1000).toFixed(1)} s later\n`,
    );
    const names = [`${prefix}hub`, `${prefix}cluster1`];
    const netns = (await exec('ip', ['netns', 'list'])).stdout;
    const ours = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(prefix);
        } catch {
          return false;
        }
      });
    expect(ours).toEqual([]);
    for (const name of names) {
      expect(netns).not.toContain(`tether-${name}`);
      expect(cgroupsLeft(`/tether-${name}`)).toEqual([]);
    }
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(`/tether-node-${prefix}`);
    // node directories live in a directory of the environment's own, removed with them
    expect(nodeBases().filter((d) => !basesBefore.includes(d))).toEqual([]);
    expect(existsSync(join(dir, 'state'))).toBe(false);
    expect(existsSync(join(dir, 'tether-up.pid'))).toBe(false);
    expect(await hostChains()).toBe(chains);
  });
});
