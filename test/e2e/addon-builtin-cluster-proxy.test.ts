// The cluster-proxy addon on a real hub, in process mode: the proxy-agent runs as a process with
// exactly the command line the addon renders for its Deployment, and with the credential an addon
// registration yields — a CSR with OCM's default addon subject, signed by the hub's
// kube-controller-manager (kube-apiserver-client), approved here by the admin. Our own
// `tether proxy-server` (agent CA = the hub's client CA, admission by the hub's ManagedClusters)
// must let that identity hold its cluster's tunnel while the addon is enabled there, and refuse
// every other addon's.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterProxyAddon } from '../../src/addon/builtin/cluster-proxy.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import { type ManagedCluster, managedClusterResource } from '../../src/api/index.ts';
import { isAlreadyExists, ResourceClient } from '../../src/kube/index.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import { grantManagedClusterProxy } from '../../src/localenv/tunnel-stack.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from '../../src/pki/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';
import { one, type PodTemplate, renderContext } from '../addon/builtin-fixtures.ts';
import { addonCertificate as addonCertificateFor } from './fixtures/addon-builtin.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { admin, Cleanups } from './fixtures/registration-hub.ts';

const env = testEnv();
const hubKc = adminKubeConfig(env.hub);
const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const mcas = new ResourceClient<ManagedClusterAddOn>(hubKc, managedClusterAddOnResource);
const dir = mkdtempSync(join(tmpdir(), 'tether-addon-cluster-proxy-'));
const processes: SupervisedProcess[] = [];
const cleanups = new Cleanups();
const hubCaPem = readFileSync(env.hub.caCertPath, 'utf8');
const trustedUser = uniqueName('addon-proxy-svc');
const role = uniqueName('addon-proxy-role');
const server = { agentPort: 0, connectPort: 0, log: '' };
let trusted: KeyPairPem;
let hubCa: CertificateAuthority;
/** where the proxy-agents' kube-apiserver target points: cluster1's real apiserver */
const target = new URL(env.cluster1.apiserverUrl);

beforeAll(async () => {
  hubCa = await loadCertificateAuthority(hubCaPem, readFileSync(env.hub.caKeyPath, 'utf8'));
  const proxyClientCa = await createCertificateAuthority('addon-proxy-client-ca');
  trusted = await issueCertificate(proxyClientCa, { commonName: trustedUser, usage: 'client' });
  const serving = await issueCertificate(hubCa, {
    commonName: 'addon-proxy-server',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  await grantManagedClusterProxy(hubKc, trustedUser, role);
  cleanups.add(async () => {
    const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.deleteClusterRoleBinding({ name: role }).catch(() => {});
    await rbac.deleteClusterRole({ name: role }).catch(() => {});
  });
  const [agentPort, connectPort, ops] = await Promise.all([freePort(), freePort(), freePort()]);
  Object.assign(server, { agentPort, connectPort, log: join(dir, 'proxy-server.log') });
  const proc = new SupervisedProcess({
    name: 'addon-cluster-proxy/proxy-server',
    command: process.execPath,
    logFile: server.log,
    env: { ...process.env, TETHER_LOG_LEVEL: 'info' },
    args: [
      tetherBin,
      'proxy-server',
      '--server-id=addon-cluster-proxy',
      '--bind-address=127.0.0.1',
      `--agent-port=${agentPort}`,
      `--connect-port=${connectPort}`,
      `--ops-port=${ops}`,
      `--tls-cert-file=${write('server.crt', serving.certPem)}`,
      `--tls-key-file=${write('server.key', serving.keyPem)}`,
      // the hub's client CA: what kube-apiserver-client certificates (the addon's too) chain to
      `--agent-ca-file=${env.hub.caCertPath}`,
      `--proxy-client-ca-file=${write('proxy-client-ca.crt', proxyClientCa.certPem)}`,
      `--hub-kubeconfig=${env.hub.kubeconfigPath}`,
    ],
  });
  processes.push(proc);
  await waitReady(proc, ops, 30_000);
});

afterAll(async () => {
  await Promise.all(processes.splice(0).map((p) => p.stop(3000)));
  await cleanups.run();
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content, { mode: 0o600 });
  return p;
}

/** An accepted ManagedCluster with `addons` enabled on it (ManagedClusterAddOns in its namespace). */
async function acceptedCluster(prefix: string, addons: string[] = ['cluster-proxy']): Promise<string> {
  const name = uniqueName(prefix);
  await clusters.create({ metadata: { name }, spec: { hubAcceptsClient: true } });
  cleanups.add(() => clusters.delete(name, undefined, { ignoreNotFound: true }));
  await admin.namespaces.create({ metadata: { name } }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
  cleanups.add(() => admin.namespaces.delete(name, undefined, { ignoreNotFound: true }));
  for (const addon of addons)
    await mcas.create({
      apiVersion: 'addon.open-cluster-management.io/v1alpha1',
      kind: 'ManagedClusterAddOn',
      metadata: { name: addon, namespace: name },
      spec: {},
    });
  return name;
}

/** The cluster-proxy (or another addon's) certificate through the hub's CSR flow. */
const addonCertificate = (cluster: string, addon: string, agent?: string) =>
  addonCertificateFor(cleanups, cluster, addon, agent);

/**
 * `tether proxy-agent` with the args the cluster-proxy addon renders for `cluster`: the pod's mount
 * paths mapped to files here, the ops port to a free local one, and the in-pod apiserver address
 * (KUBERNETES_SERVICE_HOST/PORT) to cluster1's apiserver.
 */
async function startAddonAgent(
  cluster: string,
  cert: KeyPairPem,
  opts: { claimCluster?: string } = {},
): Promise<{ ops: number; certDir: string }> {
  const addon = clusterProxyAddon({
    proxyServer: `127.0.0.1:${server.agentPort}`,
    proxyServerCaPem: hubCaPem,
    image: 'unused-in-process-mode',
  });
  const objects = await addon.manifests(renderContext('cluster-proxy', cluster));
  const args = one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args ?? [];
  const caData = one<{ data: Record<string, string> }>(objects, 'ConfigMap').data['ca.crt'] ?? '';
  const root = join(dir, uniqueName(cluster));
  const certDir = join(root, 'hub-kubeconfig');
  mkdirSync(certDir, { recursive: true });
  mkdirSync(join(root, 'proxy-server-ca'));
  writeFileSync(join(certDir, 'tls.crt'), cert.certPem);
  writeFileSync(join(certDir, 'tls.key'), cert.keyPem, { mode: 0o600 });
  writeFileSync(join(root, 'proxy-server-ca', 'ca.crt'), caData);
  const ops = await freePort();
  const local = args
    .map((a) => a.replaceAll('/managed/', `${root}/`))
    .map((a) => (a.startsWith('--ops-port=') ? `--ops-port=${ops}` : a))
    .map((a) => (a === '--ops-address=0.0.0.0' ? '--ops-address=127.0.0.1' : a))
    .map((a) =>
      opts.claimCluster && a.startsWith('--cluster-name=') ? `--cluster-name=${opts.claimCluster}` : a,
    );
  const proc = new SupervisedProcess({
    name: `${cluster}/cluster-proxy-agent`,
    command: process.execPath,
    logFile: join(root, 'agent.log'),
    env: {
      ...process.env,
      KUBERNETES_SERVICE_HOST: target.hostname,
      KUBERNETES_SERVICE_PORT: target.port,
      TETHER_CERT_CHECK_INTERVAL: '1',
    },
    args: [tetherBin, ...local],
  });
  processes.push(proc);
  return { ops, certDir };
}

/** The cluster's own `tether proxy-agent` (registration identity, as `tether agent` holds it). */
async function startRegistrationAgent(cluster: string): Promise<{ ops: number }> {
  const cert = await issueCertificate(hubCa, { ...agentSubject(cluster, 'klusterlet'), usage: 'client' });
  const ops = await freePort();
  processes.push(
    new SupervisedProcess({
      name: `${cluster}/registration-proxy-agent`,
      command: process.execPath,
      logFile: join(dir, `${cluster}-registration-agent.log`),
      args: [
        tetherBin,
        'proxy-agent',
        `--cluster-name=${cluster}`,
        '--agent-id=klusterlet',
        `--proxy-server=127.0.0.1:${server.agentPort}`,
        `--cert-file=${write(`${cluster}.crt`, cert.certPem)}`,
        `--key-file=${write(`${cluster}.key`, cert.keyPem)}`,
        `--hub-ca-file=${env.hub.caCertPath}`,
        `--kube-apiserver=${target.host}`,
        `--ops-port=${ops}`,
      ],
    }),
  );
  return { ops };
}

async function agentReady(ops: number): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined);
  await res?.text();
  return res?.status === 200;
}

/** CONNECT `<cluster>:443` on our frontend as the trusted hub service; the status and the socket. */
function connectTo(cluster: string): Promise<{ status: number; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: server.connectPort,
      ca: hubCaPem,
      cert: trusted.certPem,
      key: trusted.keyPem,
    });
    socket.once('error', reject);
    socket.once('secureConnect', () =>
      socket.write(`CONNECT ${cluster}:443 HTTP/1.1\r\nHost: ${cluster}:443\r\n\r\n`),
    );
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      if (!buf.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.off('error', reject);
      resolve({ status: Number(buf.slice(9, 12)), socket });
    };
    socket.on('data', onData);
  });
}

/** GET /version of the managed apiserver through the tunnel (TLS end to end, its CA verified). */
async function versionThroughTunnel(cluster: string): Promise<{ status: number; body: string }> {
  const { status, socket } = await connectTo(cluster);
  if (status !== 200) {
    socket.destroy();
    return { status, body: '' };
  }
  return await new Promise((resolve, reject) => {
    const tls = tlsConnect({
      socket,
      ca: readFileSync(env.cluster1.caCertPath),
      // the test reaches the apiserver by a cluster name, not a name on its certificate; the CA is checked
      checkServerIdentity: () => undefined,
    });
    tls.once('error', reject);
    let raw = '';
    tls.on('data', (d: Buffer) => {
      raw += d.toString('utf8');
    });
    tls.once('end', () => {
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      resolve({ status: Number(head.slice(9, 12)), body });
      tls.destroy();
    });
    tls.once('secureConnect', () =>
      tls.write('GET /version HTTP/1.1\r\nHost: kube\r\nConnection: close\r\n\r\n'),
    );
  });
}

/** Lines of our proxy-server's log with all of `parts`. */
function serverLog(...parts: string[]): string[] {
  return readFileSync(server.log, 'utf8')
    .split('\n')
    .filter((l) => parts.every((p) => l.includes(p)));
}

describe('cluster-proxy addon identity on the proxy-server', () => {
  it('the cluster-proxy addon identity holds a tunnel and serves a request for its cluster', async () => {
    const cluster = await acceptedCluster('addon-proxy');
    const agent = await startAddonAgent(cluster, await addonCertificate(cluster, 'cluster-proxy'));
    await pollUntil(() => agentReady(agent.ops), {
      timeoutMs: 30_000,
      description: `${cluster}'s cluster-proxy agent holds a tunnel`,
    });
    // the agent can see its tunnel up a moment before the proxy-server's log line reaches the file
    const connected = () =>
      serverLog('agent connected', `"cluster":"${cluster}"`, '"agent":"cluster-proxy:agent1"');
    await pollUntil(() => connected().length > 0, {
      timeoutMs: 10_000,
      description: `the proxy-server to log ${cluster}'s cluster-proxy agent as connected`,
    });
    expect(connected()).toHaveLength(1);
    const version = await versionThroughTunnel(cluster);
    expect(version.status).toBe(200);
    expect(JSON.parse(version.body)).toHaveProperty('gitVersion');
  });

  it("another addon's identity cannot hold a cluster-proxy tunnel", async () => {
    // both addons enabled: the refusal is the identity's, not the hub's
    const cluster = await acceptedCluster('addon-other', ['cluster-proxy', 'managed-serviceaccount']);
    const before = serverLog('rejected tunnel connection', 'not an agent certificate').length;
    // Same cluster, same signer, same CA, the cluster-proxy agent's command line: only the addon differs.
    const agent = await startAddonAgent(cluster, await addonCertificate(cluster, 'managed-serviceaccount'));
    await pollUntil(
      () => serverLog('rejected tunnel connection', 'not an agent certificate').length >= before + 2,
      {
        timeoutMs: 30_000,
        description: "the other addon's agent refused (twice: it keeps retrying)",
      },
    );
    expect(await agentReady(agent.ops)).toBe(false);
    expect(serverLog('agent connected', `"cluster":"${cluster}"`)).toEqual([]);
    const refused = await connectTo(cluster);
    refused.socket.destroy();
    expect(refused.status).toBe(503);
  });

  it('the cluster comes from the certificate, not from the agent: a cluster-proxy agent claiming another cluster serves only its own', async () => {
    const own = await acceptedCluster('addon-own');
    const claimed = await acceptedCluster('addon-claimed');
    await startAddonAgent(own, await addonCertificate(own, 'cluster-proxy'), { claimCluster: claimed });
    await pollUntil(() => serverLog('agent connected', `"cluster":"${own}"`).length > 0, {
      timeoutMs: 30_000,
      description: `the agent connected as ${own}`,
    });
    expect(serverLog('agent connected', `"cluster":"${claimed}"`)).toEqual([]);
    const refused = await connectTo(claimed);
    refused.socket.destroy();
    expect(refused.status).toBe(503);
    expect((await versionThroughTunnel(own)).status).toBe(200);
  });

  it('a rotated addon certificate (the Secret files replaced) moves the tunnel to it without a restart', async () => {
    const cluster = await acceptedCluster('addon-rotate');
    const agent = await startAddonAgent(cluster, await addonCertificate(cluster, 'cluster-proxy'));
    await pollUntil(() => agentReady(agent.ops), { timeoutMs: 30_000, description: 'first tunnel' });
    const next = await addonCertificate(cluster, 'cluster-proxy', 'agent2');
    // as the kubelet swaps a Secret volume: both files at once
    writeFileSync(join(agent.certDir, 'tls.key'), next.keyPem, { mode: 0o600 });
    writeFileSync(join(agent.certDir, 'tls.crt'), next.certPem);
    await pollUntil(
      () => serverLog('agent connected', `"cluster":"${cluster}"`, 'cluster-proxy:agent2').length > 0,
      {
        timeoutMs: 30_000,
        description: 'a tunnel with the rotated certificate',
      },
    );
    await pollUntil(
      () => serverLog('agent disconnected', `"cluster":"${cluster}"`, 'cluster-proxy:agent1').length > 0,
      {
        timeoutMs: 30_000,
        description: 'the tunnel with the old certificate drained',
      },
    );
    expect((await versionThroughTunnel(cluster)).status).toBe(200);
  });

  it('disabling the cluster-proxy addon ends its tunnel at once and keeps it out; the cluster agent keeps its own', async () => {
    const cluster = await acceptedCluster('addon-disable');
    const addonAgent = await startAddonAgent(cluster, await addonCertificate(cluster, 'cluster-proxy'));
    const own = await startRegistrationAgent(cluster);
    for (const ops of [addonAgent.ops, own.ops])
      await pollUntil(() => agentReady(ops), { timeoutMs: 30_000, description: 'both agents hold a tunnel' });
    const disabledAt = Date.now();
    await mcas.delete('cluster-proxy', cluster);
    await pollUntil(
      () => serverLog('closing the tunnels of a disabled addon', `"cluster":"${cluster}"`).length > 0,
      {
        timeoutMs: 10_000,
        intervalMs: 50,
        description: "the addon's tunnel closed",
      },
    );
    expect(Date.now() - disabledAt).toBeLessThan(5000);
    // it keeps trying and keeps being refused, with the reason
    await pollUntil(
      () =>
        serverLog('rejected tunnel connection', `"cluster":"${cluster}"`, 'not enabled on cluster').length >=
        2,
      { timeoutMs: 30_000, description: "the disabled addon's agent refused twice" },
    );
    expect(await agentReady(addonAgent.ops)).toBe(false);
    // the cluster's own agent was not touched and still serves
    expect(await agentReady(own.ops)).toBe(true);
    expect(serverLog('agent disconnected', `"cluster":"${cluster}"`, '"agent":"klusterlet"')).toEqual([]);
    expect((await versionThroughTunnel(cluster)).status).toBe(200);
  });
});
