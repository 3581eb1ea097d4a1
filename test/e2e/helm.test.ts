// The Helm charts on real control planes, with the real helm built from hack/helm: `helm install`
// of charts/tether-hub creates everything `tether init` would (CRDs, admission, bootstrap identity,
// Deployments, RBAC, certificates, APIService; the agent CA read from the hub by `lookup`), and a
// real `tether proxy-server` runs on the certificates Helm made and lets the gateway's certificate
// through its CONNECT frontend under the chart's RBAC,
// `helm upgrade` with other replicas and image changes the Deployments and keeps the CAs, and
// `helm uninstall` leaves none of the release's objects behind (the CRDs in crds/ stay, as Helm
// documents); the same for charts/tether-agent on a managed control plane. No node: the objects
// are checked, the pods never run. Own control planes, since the shared ones already hold the
// admission policies and agent namespaces Helm would refuse to adopt.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { hubCrdManifests, managedCrdManifests } from '../../src/api/index.ts';
import { chartsDir } from '../../src/install/charts.ts';
import { agentNames, agentNamespace, hubNames, hubNamespace } from '../../src/install/names.ts';
import { isNotFound } from '../../src/kube/index.ts';
import { type ControlPlane, startControlPlane } from '../../src/localenv/controlplane.ts';
import { ensureHelm, runHelm } from '../../src/localenv/helm.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { bootstrapKubeconfigYaml } from '../../src/registration/bootstrap.ts';
import { pollUntil } from '../../src/wait.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-helm-e2e-'));
const home = join(dir, 'helm-home');
const measured: Record<string, string> = {};
let helm = '';
let hub: ControlPlane | undefined;
let managed: ControlPlane | undefined;
const processes: SupervisedProcess[] = [];

const seconds = (since: number): string => `${((Date.now() - since) / 1000).toFixed(1)} s`;

beforeAll(async () => {
  let t = Date.now();
  helm = await ensureHelm((line) => process.stderr.write(`[helm] ${line}\n`));
  measured.ensureHelm = seconds(t);
  t = Date.now();
  const started = await Promise.allSettled([
    startControlPlane('helm-hub', { baseDir: dir }),
    startControlPlane('helm-managed', { baseDir: dir }),
  ]);
  hub = started[0].status === 'fulfilled' ? started[0].value : undefined;
  managed = started[1].status === 'fulfilled' ? started[1].value : undefined;
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  measured.controlPlanes = seconds(t);
}, 25 * 60_000);

afterAll(async () => {
  await Promise.all(processes.splice(0).map((p) => p.stop(3000)));
  await Promise.all([hub?.stop(), managed?.stop()]);
  rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`[helm e2e] ${JSON.stringify(measured)}\n`);
});

function kubeConfig(cp: ControlPlane | undefined): KubeConfig {
  if (!cp) throw new Error('control plane not started');
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return kc;
}

async function helmOn(cp: ControlPlane | undefined, args: string[]): Promise<string> {
  if (!cp) throw new Error('control plane not started');
  const { stdout } = await runHelm(helm, args, { home, kubeconfig: cp.kubeconfigPath, timeoutMs: 240_000 });
  return stdout;
}

function valuesFile(name: string, values: Record<string, unknown>): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(values));
  return path;
}

/** The objects of a release as Helm recorded them (`helm get manifest`). */
async function releaseObjects(cp: ControlPlane | undefined, release: string): Promise<KubernetesObject[]> {
  const manifest = await helmOn(cp, ['get', 'manifest', release, '--namespace', 'default']);
  return parseAllDocuments(manifest)
    .map((d) => d.toJSON() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
}

async function exists(api: KubernetesObjectApi, o: KubernetesObject): Promise<boolean> {
  try {
    await api.read({
      apiVersion: o.apiVersion ?? '',
      kind: o.kind ?? '',
      metadata: { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace },
    });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

const describeObject = (o: KubernetesObject): string =>
  `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/** Uninstalls and waits until no object of the release exists (namespaces take their finalization). */
async function uninstallLeavesNothing(
  cp: ControlPlane | undefined,
  release: string,
  objects: KubernetesObject[],
) {
  const api = KubernetesObjectApi.makeApiClient(kubeConfig(cp));
  const t = Date.now();
  await helmOn(cp, ['uninstall', release, '--namespace', 'default', '--wait', '--timeout', '3m']);
  measured[`${release} uninstall --wait`] = seconds(t);
  let left: string[] = [];
  await pollUntil(
    async () => {
      left = [];
      for (const o of objects) if (await exists(api, o)) left.push(describeObject(o));
      return left.length === 0;
    },
    { timeoutMs: 60_000, intervalMs: 500, description: `the objects of ${release} to be gone` },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; still there: ${left.join(', ')}`);
  });
  measured[`${release} gone after uninstall`] = seconds(t);
  await expect(helmOn(cp, ['status', release, '--namespace', 'default'])).rejects.toThrow(/not found/);
}

async function secretData(kc: KubeConfig, namespace: string, name: string): Promise<Record<string, string>> {
  const s = await kc.makeApiClient(CoreV1Api).readNamespacedSecret({ name, namespace });
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

describe('tether-hub chart on a real hub control plane', () => {
  const chart = join(chartsDir, 'tether-hub');
  let objects: KubernetesObject[] = [];

  it('helm install creates what tether init installs, with the agent CA read from the hub', async () => {
    const values = valuesFile('hub-1', {
      image: 'registry.example/tether:1.0.0',
      replicas: 1,
      proxyServerHosts: ['hub.example.com'],
    });
    const t = Date.now();
    await helmOn(hub, ['install', 'tether-hub', chart, '--namespace', 'default', '--values', values]);
    measured['tether-hub install'] = seconds(t);
    objects = await releaseObjects(hub, 'tether-hub');
    const kinds = new Set(objects.map((o) => o.kind));
    for (const k of [
      'Deployment',
      'Service',
      'ClusterRole',
      'RoleBinding',
      'APIService',
      'ValidatingAdmissionPolicy',
    ])
      expect(kinds, k).toContain(k);
    const kc = kubeConfig(hub);
    const api = KubernetesObjectApi.makeApiClient(kc);
    for (const o of objects) expect(await exists(api, o), describeObject(o)).toBe(true);
    for (const crd of hubCrdManifests())
      expect(await exists(api, crd as KubernetesObject), crd.metadata.name).toBe(true);
    const apps = kc.makeApiClient(AppsV1Api);
    const proxyServer = await apps.readNamespacedDeployment({
      name: hubNames.proxyServer,
      namespace: hubNamespace,
    });
    expect(proxyServer.spec?.replicas).toBe(1);
    expect(proxyServer.spec?.template.spec?.containers[0]?.image).toBe('registry.example/tether:1.0.0');
    const agentsService = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedService({ name: hubNames.proxyServerAgents, namespace: hubNamespace });
    expect(agentsService.spec?.type).toBe('NodePort');
    expect(agentsService.spec?.ports?.[0]?.nodePort).toBe(31091);
    // what tether init uses too (hubClientCaPem): the hub apiserver's client CA, as the hub publishes it
    const core = kc.makeApiClient(CoreV1Api);
    const agentCa = await core.readNamespacedConfigMap({ name: hubNames.agentCa, namespace: hubNamespace });
    const auth = await core.readNamespacedConfigMap({
      name: 'extension-apiserver-authentication',
      namespace: 'kube-system',
    });
    expect(agentCa.data?.['ca.crt']).toBe(auth.data?.['client-ca-file']);
    expect(new X509Certificate(agentCa.data?.['ca.crt'] ?? '').fingerprint256).toBe(
      new X509Certificate(readFileSync(hub?.caCertPath ?? '', 'utf8')).fingerprint256,
    );
  });

  it("the chart's certificates and RBAC serve a real proxy-server: the gateway's certificate gets through the CONNECT frontend", async () => {
    const kc = kubeConfig(hub);
    const file = (name: string, content: string | undefined): string => {
      const path = join(dir, name);
      writeFileSync(path, content ?? '', { mode: 0o600 });
      return path;
    };
    const tls = await secretData(kc, hubNamespace, hubNames.proxyServerTls);
    const clientCa = await secretData(kc, hubNamespace, hubNames.proxyClientCa);
    const connectCert = await secretData(kc, hubNamespace, hubNames.gatewayConnect);
    const serverCa = await secretData(kc, hubNamespace, hubNames.proxyServerCa);
    const agentCa = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: hubNames.agentCa, namespace: hubNamespace });
    // the proxy-server Deployment's own flags, with the files its volumes would hold
    const [agentPort, connectPort, ops] = await Promise.all([freePort(), freePort(), freePort()]);
    const server = new SupervisedProcess({
      name: 'helm/proxy-server',
      command: process.execPath,
      logFile: join(dir, 'proxy-server.log'),
      args: [
        tetherBin,
        'proxy-server',
        '--server-id=helm',
        '--bind-address=127.0.0.1',
        `--agent-port=${agentPort}`,
        `--connect-port=${connectPort}`,
        `--ops-port=${ops}`,
        `--tls-cert-file=${file('tls.crt', tls['tls.crt'])}`,
        `--tls-key-file=${file('tls.key', tls['tls.key'])}`,
        `--agent-ca-file=${file('agent-ca.crt', agentCa.data?.['ca.crt'])}`,
        `--proxy-client-ca-file=${file('proxy-client-ca.crt', clientCa['ca.crt'])}`,
        `--hub-kubeconfig=${hub?.kubeconfigPath}`,
      ],
    });
    processes.push(server);
    await waitReady(server, ops, 60_000);
    const connectAs = (cert: { certPem: string; keyPem: string }): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port: connectPort,
          // verified as the gateway verifies it: the chart's CA, the Service name
          servername: `${hubNames.proxyServer}.${hubNamespace}.svc`,
          ca: serverCa['ca.crt'],
          cert: cert.certPem,
          key: cert.keyPem,
        });
        socket.once('error', reject);
        socket.once('secureConnect', () =>
          socket.write('CONNECT helm-nowhere:443 HTTP/1.1\r\nHost: helm-nowhere:443\r\n\r\n'),
        );
        let head = '';
        socket.on('data', (d: Buffer) => {
          head += d.toString('latin1');
          if (head.includes('\r\n\r\n')) {
            socket.destroy();
            resolve(head);
          }
        });
      });
    // authenticated (the chart's client CA) and authorized (the chart's RBAC for system:tether:gateway):
    // the only thing missing is an agent
    const head = await connectAs({
      certPem: connectCert['tls.crt'] ?? '',
      keyPem: connectCert['tls.key'] ?? '',
    });
    expect(head).toMatch(/tether-error: TETHER_NO_AGENT/);
    // the same user from a CA the chart did not make is not a certificate caller
    const foreign = await issueCertificate(await createCertificateAuthority('foreign'), {
      commonName: 'system:tether:gateway',
      usage: 'client',
    });
    expect(await connectAs(foreign)).toMatch(/^HTTP\/1\.1 407/);
    await server.stop(3000);
  });

  it('helm upgrade with other replicas and image changes the Deployments and keeps the CAs', async () => {
    const kc = kubeConfig(hub);
    const before = {
      serverCa: await secretData(kc, hubNamespace, hubNames.proxyServerCa),
      serving: await secretData(kc, hubNamespace, hubNames.proxyServerTls),
      gateway: await secretData(kc, hubNamespace, hubNames.gatewayTls),
    };
    const values = valuesFile('hub-2', {
      image: 'registry.example/tether:1.1.0',
      replicas: 2,
      proxyServerHosts: ['hub.example.com', '198.51.100.7'],
    });
    const t = Date.now();
    await helmOn(hub, ['upgrade', 'tether-hub', chart, '--namespace', 'default', '--values', values]);
    measured['tether-hub upgrade'] = seconds(t);
    const apps = kc.makeApiClient(AppsV1Api);
    for (const name of [hubNames.controllers, hubNames.proxyServer, hubNames.gateway]) {
      const d = await apps.readNamespacedDeployment({ name, namespace: hubNamespace });
      expect(d.spec?.replicas, name).toBe(2);
      expect(d.spec?.template.spec?.containers[0]?.image, name).toBe('registry.example/tether:1.1.0');
    }
    const proxyServer = await apps.readNamespacedDeployment({
      name: hubNames.proxyServer,
      namespace: hubNamespace,
    });
    expect(proxyServer.spec?.template.spec?.containers[0]?.args).toContain('--server-count=2');
    // the CAs agents and the aggregator trust stay; the serving certificate is reissued from the
    // same CA for the new address
    expect(await secretData(kc, hubNamespace, hubNames.proxyServerCa)).toEqual(before.serverCa);
    expect(await secretData(kc, hubNamespace, hubNames.gatewayTls)).toEqual(before.gateway);
    const serving = await secretData(kc, hubNamespace, hubNames.proxyServerTls);
    expect(serving['tls.crt']).not.toBe(before.serving['tls.crt']);
    const cert = new X509Certificate(serving['tls.crt'] ?? '');
    expect(cert.verify(new X509Certificate(before.serverCa['ca.crt'] ?? '').publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain('IP Address:198.51.100.7');
    objects = await releaseObjects(hub, 'tether-hub');
  });

  it('helm uninstall leaves none of its objects behind; the CRDs stay', async () => {
    expect(objects.length).toBeGreaterThan(20);
    await uninstallLeavesNothing(hub, 'tether-hub', objects);
    const api = KubernetesObjectApi.makeApiClient(kubeConfig(hub));
    for (const crd of hubCrdManifests())
      expect(await exists(api, crd as KubernetesObject), crd.metadata.name).toBe(true);
  });
});

describe('tether-agent chart on a real managed control plane', () => {
  const chart = join(chartsDir, 'tether-agent');
  const pem = (path: string | undefined): string => readFileSync(path ?? '', 'utf8');
  let objects: KubernetesObject[] = [];

  function values(name: string, extra: Record<string, unknown>): string {
    return valuesFile(name, {
      clusterName: 'helm-cluster',
      bootstrapHubKubeconfig: bootstrapKubeconfigYaml({
        hubApiserver: hub?.apiserverUrl ?? 'https://hub.example:6443',
        hubCaPem: pem(hub?.caCertPath),
        token: 'abcdef.0123456789abcdef',
      }),
      proxyServer: 'hub.example.com:31091',
      proxyServerCa: pem(hub?.caCertPath),
      ...extra,
    });
  }

  it('helm install creates what tether join installs', async () => {
    const t = Date.now();
    await helmOn(managed, [
      'install',
      'tether-agent',
      chart,
      '--namespace',
      'default',
      '--values',
      values('agent-1', { image: 'registry.example/tether:1.0.0' }),
    ]);
    measured['tether-agent install'] = seconds(t);
    objects = await releaseObjects(managed, 'tether-agent');
    const kc = kubeConfig(managed);
    const api = KubernetesObjectApi.makeApiClient(kc);
    for (const o of objects) expect(await exists(api, o), describeObject(o)).toBe(true);
    for (const crd of managedCrdManifests())
      expect(await exists(api, crd as KubernetesObject), crd.metadata.name).toBe(true);
    const d = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: agentNames.deployment, namespace: agentNamespace });
    const args = d.spec?.template.spec?.containers[0]?.args ?? [];
    expect(args).toContain('--cluster-name=helm-cluster');
    expect(args).toContain('--proxy-server=hub.example.com:31091');
    expect(args.some((a) => a.startsWith('--proxy-url='))).toBe(false);
    const bootstrap = await secretData(kc, agentNamespace, 'bootstrap-hub-kubeconfig');
    expect(bootstrap.kubeconfig).toContain('abcdef.0123456789abcdef');
  });

  it('helm upgrade with another image and a forward proxy changes the Deployment', async () => {
    const t = Date.now();
    await helmOn(managed, [
      'upgrade',
      'tether-agent',
      chart,
      '--namespace',
      'default',
      '--values',
      values('agent-2', { image: 'registry.example/tether:1.1.0', proxyUrl: 'http://squid.example:3128' }),
    ]);
    measured['tether-agent upgrade'] = seconds(t);
    const d = await kubeConfig(managed)
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: agentNames.deployment, namespace: agentNamespace });
    const container = d.spec?.template.spec?.containers[0];
    expect(container?.image).toBe('registry.example/tether:1.1.0');
    expect(container?.args).toContain('--proxy-url=http://squid.example:3128');
    objects = await releaseObjects(managed, 'tether-agent');
  });

  it('helm uninstall leaves none of its objects behind; the CRDs stay', async () => {
    expect(objects.map((o) => o.kind)).toContain('Deployment');
    await uninstallLeavesNothing(managed, 'tether-agent', objects);
    const api = KubernetesObjectApi.makeApiClient(kubeConfig(managed));
    for (const crd of managedCrdManifests())
      expect(await exists(api, crd as KubernetesObject), crd.metadata.name).toBe(true);
  });
});
