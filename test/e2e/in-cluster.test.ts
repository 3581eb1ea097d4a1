// tether installed into real clusters the way a user installs it (`tether up` on real nodes):
// `tether init` runs the hub controllers, proxy-server and gateway as pods on the hub node, `tether
// join` runs the klusterlet-agent as a pod on each managed node, which reaches the hub only through
// squid, and tether's own agents (proxy-agent, ManagedServiceAccount agent) run as addon pods the
// hub delivered, Available on the hub. Then, through the hub: kubectl exec / logs / port-forward into a pod on a managed cluster,
// a ManifestWork Deployment that turns Available with ReadyReplicas feedback, cluster-proxy's client
// paths from this machine (a ManagedServiceAccount token Secret's kubeconfig through the user-server,
// a konnectivity gRPC client through the proxy-server's frontend), an agent pod that is
// deleted and comes back with the same identity (no new CSR), a SIGTERMed proxy-agent addon pod that
// drains an open watch instead of cutting it, the hub credentials an admin of a managed cluster finds
// there minting no hub ServiceAccount token and reading no hub Secret, `tether console` in headless
// Chromium showing the fleet, a cluster's add-ons and a work's feedback, and `tether unjoin` leaving
// nothing behind.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isIP, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { hubNamespace } from '../../src/install/names.ts';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import type { Environment } from '../../src/localenv/environment.ts';
import { startInClusterEnvironment } from '../../src/localenv/in-cluster-stack.ts';
import { ensureNodeImages } from '../../src/localenv/node-images.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { KonnectivityClient } from '../fixtures/konnectivity-client.ts';
import {
  removeScreenshotDir,
  screenshotDir,
  startBrowserPage,
  startConsoleCommand,
  waitInPage,
} from './fixtures/browser.ts';

const exec = promisify(execFile);
// node names are per host: a `tether up` (hub, cluster1, …) may run on this machine meanwhile
const PREFIX = `ic${process.pid % 100000}-`;
const AGENT_NS = 'open-cluster-management-agent';
const ADDON_NS = 'open-cluster-management-agent-addon';
const PROXY_AGENT = 'cluster-proxy-proxy-agent';
const measured: Record<string, string> = {};

let parent: string;
let env: Environment | undefined;
let echoImage = '';
const children: ChildProcess[] = [];
const grpcClients: KonnectivityClient[] = [];

function kubectl(kubeconfig: string, args: string[], timeout = 30_000): Promise<string> {
  return exec('kubectl', [`--kubeconfig=${kubeconfig}`, ...args], { timeout }).then((r) => r.stdout);
}

function tether(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return exec(process.execPath, ['bin/tether.js', ...args], { timeout: 180_000 });
}

function environment(): Environment {
  if (!env) throw new Error('no environment');
  return env;
}

const hubKc = (): string => environment().hub.kubeconfigPath;
const cluster = (i: number) => {
  const c = environment().clusters[i];
  if (!c) throw new Error(`no cluster ${i}`);
  return c;
};
const gatewayKc = (name: string): string => {
  const path = environment().gatewayKubeconfigs?.[name];
  if (!path) throw new Error(`no gateway kubeconfig for ${name}`);
  return path;
};

beforeAll(async () => {
  // a cold machine builds the node binaries and images here
  await ensureNodeBinaries((l) => process.stderr.write(`[in-cluster] ${l}\n`));
  echoImage = (await ensureNodeImages((l) => process.stderr.write(`[in-cluster] ${l}\n`))).echoserver.ref;
  parent = mkdtempSync(join(tmpdir(), 'tether-in-cluster-'));
  const t = Date.now();
  env = await startInClusterEnvironment({
    clusters: 2,
    dir: join(parent, 'env'),
    namePrefix: PREFIX,
    // the work agent refreshes status (the addons' and the test work's Deployment availability)
    // every 2 s, not every 30 s (its default, pinned in test/cli/agent-periods.test.ts)
    joinArgs: ['--status-sync-interval=2'],
    // cluster 0's klusterlet agent hosts the add-on agents (join's default); cluster 1 runs them as pods
    addonAgentPodsOn: [1],
    progress: (l) => process.stderr.write(`[in-cluster] ${l}\n`),
  });
  measured.start = `${((Date.now() - t) / 1000).toFixed(1)} s`;
}, 900_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const c of grpcClients) c.close();
  await env?.stop();
  if (parent) rmSync(parent, { recursive: true, force: true });
  process.stderr.write(`[in-cluster] measured: ${JSON.stringify(measured)}\n`);
}, 180_000);

describe('tether installed in real clusters', () => {
  it('runs the hub and the agents as pods; both clusters join through squid and are Available', async () => {
    const hubPods = JSON.parse(await kubectl(hubKc(), ['-n', hubNamespace, 'get', 'pods', '-o', 'json']));
    const running = (pods: {
      items: Array<{ metadata: { name: string }; spec: { nodeName: string }; status: { phase: string } }>;
    }) => pods.items.filter((p) => p.status.phase === 'Running');
    expect(
      running(hubPods)
        .map((p) => p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, ''))
        .sort(),
    ).toEqual(['tether-gateway', 'tether-hub-controllers', 'tether-proxy-server']);
    expect(new Set(running(hubPods).map((p) => p.spec.nodeName))).toEqual(new Set([environment().hub.name]));
    for (const i of [0, 1]) {
      const c = cluster(i);
      const pods = JSON.parse(await kubectl(c.kubeconfigPath, ['-n', AGENT_NS, 'get', 'pods', '-o', 'json']));
      expect(running(pods).map((p) => p.spec.nodeName)).toEqual([c.name]);
    }
    const clusters = JSON.parse(await kubectl(hubKc(), ['get', 'managedclusters', '-o', 'json']));
    for (const mc of clusters.items) {
      const cond = (t: string) => mc.status.conditions.find((x: { type: string }) => x.type === t)?.status;
      expect([
        mc.metadata.name,
        cond('ManagedClusterJoined'),
        cond('ManagedClusterConditionAvailable'),
      ]).toEqual([mc.metadata.name, 'True', 'True']);
    }
    expect(clusters.items).toHaveLength(2);
  });

  it("tether's proxy-agent and ManagedServiceAccount agent run inside the klusterlet agent (cluster 0) or as addon pods (cluster 1), and every addon is Available", async () => {
    type Pod = {
      metadata: { name: string };
      spec: { nodeName: string; containers: Array<{ args: string[] }> };
      status: { phase: string };
    };
    const podsIn = async (c: ReturnType<typeof cluster>, ns: string): Promise<Pod[]> =>
      JSON.parse(await kubectl(c.kubeconfigPath, ['-n', ns, 'get', 'pods', '-o', 'json'])).items;
    const agentArgs = async (c: ReturnType<typeof cluster>) =>
      (await podsIn(c, AGENT_NS)).flatMap((p) => p.spec.containers.flatMap((x) => x.args));

    // cluster 0: no addon pod; the klusterlet announces what it hosts and renews both add-ons' leases
    const hosting = cluster(0);
    expect((await podsIn(hosting, ADDON_NS)).map((p) => p.metadata.name)).toEqual([]);
    const args0 = await agentArgs(hosting);
    expect(args0).toContain('--in-process-addons=cluster-proxy,managed-serviceaccount');
    expect(args0).toContain('--no-serviceaccount');
    const leases = await kubectl(hosting.kubeconfigPath, ['-n', ADDON_NS, 'get', 'leases', '-o', 'name']);
    expect(leases.split('\n').filter(Boolean).sort()).toEqual([
      'lease.coordination.k8s.io/cluster-proxy',
      'lease.coordination.k8s.io/managed-serviceaccount',
    ]);
    const mc = JSON.parse(await kubectl(hubKc(), ['get', 'managedcluster', hosting.name, '-o', 'json']));
    expect(mc.status.clusterClaims).toContainEqual({
      name: 'in-process-addons.tether.dev',
      value: 'cluster-proxy,managed-serviceaccount',
    });

    // cluster 1: both agents as pods on its node; the klusterlet runs neither
    const pods = cluster(1);
    const running = (await podsIn(pods, ADDON_NS)).filter((p) => p.status.phase === 'Running');
    expect(running.map((p) => p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, '')).sort()).toEqual([
      PROXY_AGENT,
      'managed-serviceaccount-addon-agent',
    ]);
    expect(new Set(running.map((p) => p.spec.nodeName))).toEqual(new Set([pods.name]));
    const args1 = await agentArgs(pods);
    expect(args1.filter((a) => a.startsWith('--proxy-server') || a.startsWith('--in-process'))).toEqual([]);
    expect(args1).toContain('--no-serviceaccount');
    const table = await kubectl(hubKc(), ['get', 'managedclusteraddons', '-A']);
    const [header = '', ...rows] = table.trim().split('\n');
    expect(header.split(/\s+/).slice(0, 3)).toEqual(['NAMESPACE', 'NAME', 'AVAILABLE']);
    const available = rows
      .map((r) => r.split(/\s+/))
      .filter((cols) => cols[2] === 'True')
      .map((cols) => `${cols[0]}/${cols[1]}`);
    for (const i of [0, 1])
      for (const addon of ['managed-serviceaccount', 'cluster-proxy', 'cluster-gateway'])
        expect(available, table).toContain(`${cluster(i).name}/${addon}`);
  });

  it('the addon CRDs convert through the hub pod’s webhook Service: a v1alpha1 ManagedClusterAddOn reads at v1beta1 with OCM’s mapping', async () => {
    const c = cluster(0);
    const addon = 'in-cluster-conversion';
    const manifest = [
      'apiVersion: addon.open-cluster-management.io/v1alpha1',
      'kind: ClusterManagementAddOn',
      `metadata: {name: ${addon}}`,
      'spec: {}',
      '---',
      'apiVersion: addon.open-cluster-management.io/v1alpha1',
      'kind: ManagedClusterAddOn',
      `metadata: {name: ${addon}, namespace: ${c.name}}`,
      'spec: {installNamespace: conversion-target}',
    ].join('\n');
    const file = join(parent, 'conversion-addon.yaml');
    writeFileSync(file, manifest);
    await kubectl(hubKc(), ['apply', '-f', file]);
    try {
      const v1beta1 = JSON.parse(
        await kubectl(hubKc(), [
          '-n',
          c.name,
          'get',
          `managedclusteraddons.v1beta1.addon.open-cluster-management.io/${addon}`,
          '-o',
          'json',
        ]),
      );
      expect(v1beta1.apiVersion).toBe('addon.open-cluster-management.io/v1beta1');
      expect(
        v1beta1.metadata.annotations?.['addon.open-cluster-management.io/v1alpha1-install-namespace'],
      ).toBe('conversion-target');
      expect(v1beta1.spec.installNamespace).toBeUndefined();
    } finally {
      await kubectl(hubKc(), ['delete', '--ignore-not-found', '-f', file]);
    }
  });

  it('kubectl exec, logs and port-forward reach a pod on a managed cluster through the gateway', async () => {
    const gw = gatewayKc(cluster(0).name);
    const pod = 'echo';
    await kubectl(gw, ['run', pod, `--image=${echoImage}`, '--image-pull-policy=Never', '--port=8080']);
    await kubectl(gw, ['wait', '--for=condition=Ready', `pod/${pod}`, '--timeout=90s'], 100_000);
    expect((await kubectl(gw, ['exec', pod, '--', '/echoserver', 'hostname'])).trim()).toBe(pod);
    const pf = spawn('kubectl', [`--kubeconfig=${gw}`, 'port-forward', `pod/${pod}`, ':8080'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(pf);
    let out = '';
    pf.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const port = await pollUntil(async () => /127\.0\.0\.1:(\d+)/.exec(out)?.[1], {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: 'kubectl port-forward to listen',
    });
    const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(body).toContain(`hello from ${pod}`);
    pf.kill('SIGTERM');
    const logs = await kubectl(gw, ['logs', pod]);
    expect(logs).toMatch(/GET \//);
    await kubectl(gw, ['delete', 'pod', pod, '--wait=false']);
  });

  it("a ManagedServiceAccount token Secret's kubeconfig reaches its cluster from this machine through the user-server; at the other cluster's path the token is refused", async () => {
    const services = environment().hubServices;
    if (!services) throw new Error('tether up on real nodes exposes the user-server');
    for (const i of [0, 1]) {
      // cluster 0 runs the ManagedServiceAccount agent in the klusterlet agent, cluster 1 as a pod
      const name = cluster(i).name;
      const other = cluster(1 - i).name;
      const kubeconfig = await pollUntil(
        async () => {
          const secret = JSON.parse(
            await kubectl(hubKc(), ['-n', name, 'get', 'secret', 'tether-gateway', '-o', 'json']),
          );
          const text = Buffer.from(secret.data?.kubeconfig ?? '', 'base64').toString('utf8');
          return text.includes(`${services.userServerUrl}/${name}`) ? text : undefined;
        },
        {
          timeoutMs: 30_000,
          description: `the tether-gateway token Secret of ${name} to name the user-server`,
        },
      );
      const own = join(parent, `msa-${name}.kubeconfig`);
      writeFileSync(own, kubeconfig, { mode: 0o600 });
      const whoami = JSON.parse(await kubectl(own, ['auth', 'whoami', '-o', 'json']));
      expect(whoami.status.userInfo.username).toBe(`system:serviceaccount:${ADDON_NS}:tether-gateway`);
      const elsewhere = join(parent, `msa-${name}-at-${other}.kubeconfig`);
      writeFileSync(
        elsewhere,
        kubeconfig.replace(`${services.userServerUrl}/${name}`, `${services.userServerUrl}/${other}`),
        {
          mode: 0o600,
        },
      );
      await expect(kubectl(elsewhere, ['get', 'ns'])).rejects.toThrow(/Unauthorized|must be logged in/);
    }
  });

  it("a konnectivity gRPC client on this machine reaches a cluster's apiserver through the proxy-server's NodePort; a certificate granted that cluster only is refused for the other", async () => {
    const services = environment().hubServices;
    if (!services) throw new Error('tether up on real nodes exposes the frontend');
    const name = cluster(0).name;
    const mc = JSON.parse(await kubectl(hubKc(), ['get', 'managedcluster', name, '-o', 'json']));
    const clientConfig = mc.spec.managedClusterClientConfigs[0];
    const apiserver = new URL(clientConfig.url);
    const frontend = new URL(services.connectFrontendUrl);
    const konnectivity = (certPem: string, keyPem: string) => {
      const c = new KonnectivityClient({
        address: frontend.host,
        caPem: readFileSync(services.connectCaPath, 'utf8'),
        // the proxy-server's certificate names its Service (and the node address); not an IP as SNI
        serverName: `tether-proxy-server.${hubNamespace}.svc`,
        certPem,
        keyPem,
      });
      grpcClients.push(c);
      return c;
    };
    const admitted = konnectivity(
      readFileSync(services.proxyClientCertPath, 'utf8'),
      readFileSync(services.proxyClientKeyPath, 'utf8'),
    );
    // TLS to the managed apiserver inside the tunnel, verified against the cluster's CA
    const conn = await admitted.dial(`${name}:443`);
    const tls = tlsConnect({
      socket: conn as unknown as Socket,
      ca: Buffer.from(clientConfig.caBundle, 'base64').toString('utf8'),
      servername: isIP(apiserver.hostname) ? undefined : apiserver.hostname,
      ...(isIP(apiserver.hostname) ? { checkServerIdentity: () => undefined } : {}),
    });
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      tls.on('data', (d: Buffer) => {
        text += d.toString();
      });
      tls.once('end', () => resolve(text));
      tls.once('error', reject);
      tls.once('secureConnect', () =>
        tls.write(`GET /healthz HTTP/1.1\r\nHost: ${apiserver.host}\r\nConnection: close\r\n\r\n`),
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200[\s\S]*ok$/);
    tls.destroy();

    // a proxy-client certificate of a user the hub grants cluster 0 only, by name
    const core = new KubeConfig();
    core.loadFromFile(hubKc());
    const secret = await core
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: 'tether-proxy-client-ca', namespace: hubNamespace });
    const ca = await loadCertificateAuthority(
      Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8'),
      Buffer.from(secret.data?.['ca.key'] ?? '', 'base64').toString('utf8'),
    );
    const scoped = await issueCertificate(ca, { commonName: 'one-cluster', usage: 'client' });
    await kubectl(hubKc(), [
      'create',
      'clusterrole',
      'one-cluster-proxy',
      '--verb=get',
      '--resource=managedclusters.cluster.open-cluster-management.io/proxy',
      `--resource-name=${name}`,
    ]);
    await kubectl(hubKc(), [
      'create',
      'clusterrolebinding',
      'one-cluster-proxy',
      '--clusterrole=one-cluster-proxy',
      '--user=one-cluster',
    ]);
    const limited = konnectivity(scoped.certPem, scoped.keyPem);
    // hub RBAC reaches the SubjectAccessReview within moments (a denial is cached 3 s)
    const allowed = await pollUntil(() => limited.dial(`${name}:443`).catch(() => undefined), {
      timeoutMs: 15_000,
      intervalMs: 500,
      description: `the new grant to let one-cluster dial ${name}`,
    });
    allowed.destroy();
    const other = cluster(1).name;
    await expect(limited.dial(`${other}:443`)).rejects.toThrow(
      new RegExp(`403 .*one-cluster may not get managedclusters/proxy for ${other}`),
    );
    await kubectl(hubKc(), ['delete', 'clusterrolebinding,clusterrole', 'one-cluster-proxy']);
  });

  it('a ManifestWork Deployment of a locally built image turns Available with ReadyReplicas feedback', async () => {
    const name = cluster(0).name;
    const work = {
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: { name: 'echo-deployment', namespace: name },
      spec: {
        workload: {
          manifests: [
            {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              metadata: { name: 'echo', namespace: 'default' },
              spec: {
                replicas: 2,
                selector: { matchLabels: { app: 'echo-work' } },
                template: {
                  metadata: { labels: { app: 'echo-work' } },
                  spec: { containers: [{ name: 'echo', image: echoImage, imagePullPolicy: 'Never' }] },
                },
              },
            },
          ],
        },
        manifestConfigs: [
          {
            resourceIdentifier: {
              group: 'apps',
              resource: 'deployments',
              namespace: 'default',
              name: 'echo',
            },
            feedbackRules: [{ type: 'WellKnownStatus' }],
          },
        ],
      },
    };
    const dir = mkdtempSync(join(tmpdir(), 'tether-work-'));
    try {
      const file = join(dir, 'work.json');
      await import('node:fs').then((fs) => fs.writeFileSync(file, JSON.stringify(work)));
      const t = Date.now();
      await kubectl(hubKc(), ['apply', '-f', file]);
      const ready = await pollUntil(
        async () => {
          const w = JSON.parse(
            await kubectl(hubKc(), ['-n', name, 'get', 'manifestwork', 'echo-deployment', '-o', 'json']),
          );
          const available = w.status?.conditions?.find(
            (c: { type: string }) => c.type === 'Available',
          )?.status;
          const values = w.status?.resourceStatus?.manifests?.[0]?.statusFeedback?.values ?? [];
          const readyReplicas = values.find((v: { name: string }) => v.name === 'ReadyReplicas')?.fieldValue
            ?.integer;
          return available === 'True' && readyReplicas === 2 ? readyReplicas : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500, description: 'the work to be Available with ReadyReplicas 2' },
      );
      measured.workDeploymentReady = `${((Date.now() - t) / 1000).toFixed(1)} s`;
      expect(ready).toBe(2);
      // left for the console test next, which shows it and deletes it (the environment's stop would too)
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the console (tether console, headless Chromium) shows the fleet with every add-on, a cluster page with its add-ons, its tunnel and that work with its feedback', async () => {
    const shots = screenshotDir('in-cluster-console');
    const console_ = await startConsoleCommand(hubKc());
    const browser = await startBrowserPage(shots).catch(async (err) => {
      await console_.stop();
      throw err;
    });
    try {
      const { page } = browser;
      await page.goto(console_.url);
      for (const i of [0, 1]) {
        const c = cluster(i).name;
        await waitInPage(
          page,
          `document.querySelector('[data-testid="cluster-row-${c}"]')?.dataset.available === 'True'`,
          `${c} Available`,
        );
        for (const addon of ['cluster-proxy', 'managed-serviceaccount', 'cluster-gateway'])
          await waitInPage(
            page,
            `document.querySelector('[data-testid="addon-${c}-${addon}"]')?.dataset.status === 'True'`,
            `${c}'s ${addon} badge Available`,
          );
      }
      await browser.screenshot('fleet');
      const name = cluster(0).name;
      await page.goto(`${console_.url}#/clusters/${name}`);
      await waitInPage(
        page,
        `document.querySelectorAll('[data-testid^="addon-row-"]').length === 3`,
        `${name}'s three add-ons`,
      );
      const row = await waitInPage<string>(
        page,
        `(() => { const r = document.querySelector('[data-testid="work-row-echo-deployment"]'); return r?.dataset.available === 'True' && r.textContent.includes('ReadyReplicas') ? r.textContent : undefined; })()`,
        'the echo-deployment work Available with its ReadyReplicas feedback',
      );
      expect(row).toMatch(/ReadyReplicas\D*2/);
      // the tunnel, from the proxy-server through the gateway's clustergateways/<name>/tunnel, as the viewer
      await waitInPage(
        page,
        `Number(document.querySelector('[data-testid="tunnel-agents"]')?.dataset.count) >= 1`,
        `${name}'s tunnel with its agent on the cluster page`,
      );
      await browser.screenshot('cluster');
      expect(browser.errors).toEqual([]);
    } finally {
      await browser.close();
      await console_.stop();
      removeScreenshotDir(shots);
      await kubectl(hubKc(), [
        '-n',
        cluster(0).name,
        'delete',
        'manifestwork',
        'echo-deployment',
        '--ignore-not-found',
      ]);
    }
  });

  it('a deleted agent pod comes back with the same identity: no new CSR, still Available, gateway works', async () => {
    const c = cluster(0);
    const csrs = async (): Promise<string[]> =>
      JSON.parse(
        await kubectl(hubKc(), [
          'get',
          'csr',
          '-l',
          `open-cluster-management.io/cluster-name=${c.name}`,
          '-o',
          'json',
        ]),
      ).items.map((x: { metadata: { name: string } }) => x.metadata.name);
    const before = await csrs();
    expect(before.length).toBeGreaterThan(0);
    const oldPod = (await kubectl(c.kubeconfigPath, ['-n', AGENT_NS, 'get', 'pods', '-o', 'name'])).trim();
    await kubectl(c.kubeconfigPath, ['-n', AGENT_NS, 'delete', oldPod, '--wait=true'], 60_000);
    await kubectl(
      c.kubeconfigPath,
      ['-n', AGENT_NS, 'wait', '--for=condition=Available', 'deployment/klusterlet-agent', '--timeout=90s'],
      100_000,
    );
    const newPod = (await kubectl(c.kubeconfigPath, ['-n', AGENT_NS, 'get', 'pods', '-o', 'name'])).trim();
    expect(newPod).not.toBe(oldPod);
    const logs = await kubectl(c.kubeconfigPath, ['-n', AGENT_NS, 'logs', newPod]);
    expect(logs).not.toContain('bootstrapping from');
    expect(await csrs()).toEqual(before);
    await pollUntil(
      async () =>
        (await kubectl(gatewayKc(c.name), ['get', 'ns', 'default', '-o', 'name'])).includes('default'),
      {
        timeoutMs: 30_000,
        intervalMs: 500,
        description: 'kubectl through the gateway via the new agent pod',
      },
    );
  });

  it('a SIGTERMed proxy-agent addon pod drains an open watch through the gateway instead of cutting it', async () => {
    const c = cluster(1); // the cluster whose proxy-agent is a pod
    const ns = 'default';
    const watch = spawn(
      'kubectl',
      [`--kubeconfig=${gatewayKc(c.name)}`, '-n', ns, 'get', 'configmaps', '--watch', '-o', 'name'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(watch);
    let out = '';
    watch.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await pollUntil(async () => out.includes('kube-root-ca.crt'), {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: 'the watch through the gateway to list',
    });
    // the tunnel is the cluster-proxy addon's: its proxy-agent pod holds it
    const oldPod = (
      await kubectl(c.kubeconfigPath, [
        '-n',
        ADDON_NS,
        'get',
        'pods',
        '-o',
        'name',
        '-l',
        `app=${PROXY_AGENT}`,
      ])
    ).trim();
    expect(oldPod).toMatch(/^pod\//);
    await kubectl(c.kubeconfigPath, ['-n', ADDON_NS, 'delete', oldPod, '--wait=false']);
    // the kubelet has sent SIGTERM once the agent says it drains
    await pollUntil(
      async () =>
        (await kubectl(c.kubeconfigPath, ['-n', ADDON_NS, 'logs', oldPod]).catch(() => '')).includes(
          'draining tunnels',
        ),
      { timeoutMs: 30_000, intervalMs: 250, description: 'the old proxy-agent pod to start draining' },
    );
    await kubectl(c.kubeconfigPath, ['-n', ns, 'create', 'configmap', 'after-sigterm']);
    const t = Date.now();
    await pollUntil(async () => out.includes('configmap/after-sigterm'), {
      timeoutMs: 15_000,
      intervalMs: 100,
      description: 'the open watch to see a ConfigMap created after the SIGTERM',
    });
    measured.eventDuringDrain = `${Date.now() - t} ms`;
    expect(watch.exitCode).toBeNull();
    watch.kill('SIGTERM');
    await kubectl(c.kubeconfigPath, ['-n', ns, 'delete', 'configmap', 'after-sigterm']);
    await kubectl(
      c.kubeconfigPath,
      ['-n', ADDON_NS, 'wait', '--for=condition=Available', `deployment/${PROXY_AGENT}`, '--timeout=90s'],
      100_000,
    );
  });

  it("a compromised hub component pod cannot read the hub's Secrets or run pods: each ServiceAccount has only its own calls", async () => {
    const canI = async (sa: string, args: string[]): Promise<string> =>
      (
        await exec(
          'kubectl',
          [
            `--kubeconfig=${hubKc()}`,
            'auth',
            'can-i',
            ...args,
            `--as=system:serviceaccount:${hubNamespace}:${sa}`,
          ],
          { timeout: 30_000 },
        ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
      ).stdout.trim();
    const c1 = cluster(0).name;
    for (const sa of ['tether-hub-controllers', 'tether-proxy-server', 'tether-gateway']) {
      expect(await canI(sa, ['get', 'secrets', '-n', 'kube-system']), sa).toBe('no');
      expect(await canI(sa, ['list', 'secrets', '--all-namespaces']), sa).toBe('no');
      expect(await canI(sa, ['get', 'secrets/tether-proxy-server-ca', '-n', hubNamespace]), sa).toBe('no');
      expect(await canI(sa, ['create', 'pods', '-n', hubNamespace]), sa).toBe('no');
      expect(await canI(sa, ['create', 'clusterrolebindings']), sa).toBe(
        sa === 'tether-hub-controllers' ? 'yes' : 'no',
      );
    }
    // what they do need
    expect(await canI('tether-gateway', ['get', 'secrets/tether-gateway', '-n', c1])).toBe('yes');
    expect(await canI('tether-proxy-server', ['create', 'subjectaccessreviews.authorization.k8s.io'])).toBe(
      'yes',
    );
    expect(
      await canI('tether-hub-controllers', [
        'update',
        'certificatesigningrequests.certificates.k8s.io',
        '--subresource=approval',
      ]),
    ).toBe('yes');
  });

  it('a managed-cluster admin cannot mint a hub ServiceAccount token or read hub Secrets with the hub credentials it finds on its cluster', async () => {
    const c = cluster(0);
    const hubConfig = JSON.parse(
      await kubectl(hubKc(), ['config', 'view', '--raw', '--minify', '-o', 'json']),
    );
    const hubCluster = hubConfig.clusters[0].cluster as {
      server: string;
      'certificate-authority-data': string;
    };
    const dir = mkdtempSync(join(parent, 'stolen-'));
    // What an admin of cluster1 reads off its cluster: the agent's and the managed-serviceaccount
    // add-on's hub credentials, each a client certificate the hub signed.
    for (const [ns, secretName, legit] of [
      [AGENT_NS, 'hub-kubeconfig-secret', ['get', 'managedcluster', c.name]],
      [ADDON_NS, 'managed-serviceaccount-hub-kubeconfig', ['-n', c.name, 'get', 'managedserviceaccounts']],
    ] as const) {
      const secret = JSON.parse(
        await kubectl(c.kubeconfigPath, ['-n', ns, 'get', 'secret', secretName, '-o', 'json']),
      );
      const kubeconfig = join(dir, `${secretName}.kubeconfig`);
      writeFileSync(
        kubeconfig,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'hub', cluster: hubCluster }],
          users: [
            {
              name: 'stolen',
              user: {
                'client-certificate-data': secret.data['tls.crt'],
                'client-key-data': secret.data['tls.key'],
              },
            },
          ],
          contexts: [{ name: 'stolen', context: { cluster: 'hub', user: 'stolen' } }],
          'current-context': 'stolen',
        }),
        { mode: 0o600 },
      );
      const asStolen = (args: readonly string[]) => kubectl(kubeconfig, [...args]);
      const refusal = (args: readonly string[]) =>
        asStolen(args).then(
          () => 'admitted',
          (err: { stderr?: string }) => err.stderr ?? '',
        );
      await asStolen(legit); // the credential works for what it is for
      const tokenSecret = join(dir, `${secretName}-token.json`);
      writeFileSync(
        tokenSecret,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/service-account-token',
          metadata: {
            name: `stolen-token-${secretName}`,
            namespace: c.name,
            annotations: { 'kubernetes.io/service-account.name': 'default' },
          },
        }),
      );
      expect(await refusal(['create', '-f', tokenSecret]), secretName).toMatch(
        /managedcluster-secrets|forbidden/i,
      );
      expect(await refusal(['-n', c.name, 'get', 'secrets']), secretName).toMatch(/forbidden/i);
      expect(await refusal(['-n', c.name, 'get', 'secret', 'tether-gateway-unknown']), secretName).toMatch(
        /forbidden/i,
      );
    }
    const left = await kubectl(hubKc(), ['-n', c.name, 'get', 'secrets', '-o', 'name']);
    expect(left).not.toContain('stolen-token-');
  });

  it('tether init --dry-run prints what init applied', async () => {
    const { stdout } = await tether(['init', '--dry-run', `--kubeconfig=${hubKc()}`]);
    const objects = parseAllDocuments(stdout).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } },
    );
    const names = objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
    for (const expected of [
      `Deployment/${hubNamespace}/tether-hub-controllers`,
      `Deployment/${hubNamespace}/tether-proxy-server`,
      `Deployment/${hubNamespace}/tether-gateway`,
      'APIService//v1alpha1.cluster.core.oam.dev',
      `Secret/${hubNamespace}/tether-proxy-server-tls`,
      'CustomResourceDefinition//managedclusters.cluster.open-cluster-management.io',
    ])
      expect(names).toContain(expected);
    for (const o of objects.filter((x) => x.kind === 'Deployment')) {
      await kubectl(hubKc(), ['-n', hubNamespace, 'get', 'deployment', o.metadata.name, '-o', 'name']);
    }
  });

  it('tether unjoin removes the agent, everything join installed and the addon agents it ran', async () => {
    const c = cluster(1);
    const t = Date.now();
    await tether(['unjoin', `--cluster-name=${c.name}`, `--kubeconfig=${c.kubeconfigPath}`]);
    measured.unjoin = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    await expect(kubectl(c.kubeconfigPath, ['get', 'ns', AGENT_NS])).rejects.toThrow(/NotFound/);
    await expect(kubectl(c.kubeconfigPath, ['get', 'ns', ADDON_NS])).rejects.toThrow(/NotFound/);
    expect(await kubectl(c.kubeconfigPath, ['get', 'clusterrolebindings', '-o', 'name'])).not.toContain(
      'klusterlet-agent',
    );
    expect(
      await kubectl(c.kubeconfigPath, [
        'get',
        'pods',
        '-A',
        '-l',
        'app.kubernetes.io/part-of=tether',
        '-o',
        'name',
      ]),
    ).toBe('');
  });
});
