// tether's own agents as addons, end to end in process mode (no nodes): a joined registration agent
// (addon registration on), a real work agent, and the AddonManager with the managed-serviceaccount
// and cluster-proxy addons. Enabling them on the cluster delivers their objects to cluster1 and
// their hub credentials next to them; each Deployment's container, run here as its pod would run it
// (its args, its mounted Secrets and ConfigMaps as files, its ServiceAccount), does its job: the
// ManagedServiceAccount agent projects a token, the proxy-agent holds the cluster's tunnel on the
// shared proxy-server and serves a request. Disabling them removes their objects and credentials,
// and the tunnel with them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterProxyAddon } from '../../src/addon/builtin/cluster-proxy.ts';
import { managedServiceAccountAddon } from '../../src/addon/builtin/managed-serviceaccount.ts';
import { AddonManager } from '../../src/addon/sdk/manager.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import { type ManagedServiceAccount, managedServiceAccountResource } from '../../src/api/authentication.ts';
import { clusterManagementAddOnResource } from '../../src/api/index.ts';
import { findCondition, type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { logger } from '../../src/log.ts';
import { startServiceAccountHub } from '../../src/serviceaccount/index.ts';
import { containerAsProcess } from './fixtures/addon-builtin.ts';
import { joinedClusterWithWorkAgent } from './fixtures/addon-flow.ts';
import { writeServiceAccountKubeconfig } from './fixtures/addon-helloworld.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { env, hubKc, type JoinedCluster } from './fixtures/joined-cluster.ts';
import { Cleanups, waitFor } from './fixtures/registration-hub.ts';

const managed = adminKubeConfig(env.cluster1);
const log = logger('builtin-flow-e2e');
const cleanups = new Cleanups();
const dir = mkdtempSync(join(tmpdir(), 'tether-builtin-flow-'));
const installNamespace = uniqueName('builtin-flow');
const cli = tetherBin;
const apiserver = new URL(env.cluster1.apiserverUrl);
const addons = new ResourceClient<ManagedClusterAddOn>(hubKc, managedClusterAddOnResource);
const msas = new ResourceClient<ManagedServiceAccount>(hubKc, managedServiceAccountResource);
const onCluster1 = (group: string, plural: string, kind: string, namespaced = true) =>
  new ResourceClient<KubeObject>(managed, { group, version: 'v1', plural, kind, namespaced });
const secrets = onCluster1('', 'secrets', 'Secret');
const deployments = onCluster1('apps', 'deployments', 'Deployment');
const namespaces = onCluster1('', 'namespaces', 'Namespace', false);
const processes: SupervisedProcess[] = [];
let joined: JoinedCluster;

const eventually = <T>(check: () => Promise<T | undefined | false>, what: string) =>
  waitFor(check, what, 90_000);

beforeAll(async () => {
  cleanups.add(async () => rmSync(dir, { recursive: true, force: true }));
  cleanups.add(() => namespaces.delete(installNamespace, undefined, { ignoreNotFound: true }));
  joined = await joinedClusterWithWorkAgent('builtin', managed, cleanups);
  const image = 'registry.example/tether:builtin-e2e';
  // The hub's ManagedServiceAccount controllers grant the addon identity its token Secrets by name.
  const serviceAccountHub = await startServiceAccountHub({ hubKubeConfig: hubKc, log });
  cleanups.add(() => serviceAccountHub.stop());
  const manager = new AddonManager({ hubKubeConfig: hubKc, leaderElection: false, log })
    .add(managedServiceAccountAddon({ image }))
    .add(
      clusterProxyAddon({
        image,
        proxyServer: env.tunnel.proxyServerAddress,
        proxyServerCaPem: readFileSync(env.hub.caCertPath, 'utf8'),
      }),
    );
  await manager.start();
  cleanups.add(() => manager.stop());
  for (const name of ['managed-serviceaccount', 'cluster-proxy'])
    cleanups.add(() =>
      new ResourceClient(hubKc, clusterManagementAddOnResource).delete(name, undefined, {
        ignoreNotFound: true,
      }),
    );
  // disable while the manager and the work agent still run (finalizers, applied objects)
  cleanups.add(async () => {
    for (const name of ['managed-serviceaccount', 'cluster-proxy'])
      await addons.delete(name, joined.name, { ignoreNotFound: true });
    await eventually(
      async () => (await addons.list({ namespace: joined.name })).items.length === 0,
      'addons gone',
    );
  });
  cleanups.add(() => Promise.all(processes.splice(0).map((p) => p.stop(3000))));
}, 180_000);
afterAll(() => cleanups.run(), 120_000);

/** CONNECT `<cluster>:443` on the shared frontend as the hub service, then GET /version over TLS. */
async function versionThroughTunnel(cluster: string): Promise<number> {
  const frontend = new URL(env.tunnel.connectFrontendUrl);
  const hubCa = readFileSync(env.hub.caCertPath);
  const socket = tlsConnect({
    host: frontend.hostname,
    port: Number(frontend.port),
    ca: hubCa,
    cert: readFileSync(env.tunnel.proxyClientCertPath),
    key: readFileSync(env.tunnel.proxyClientKeyPath),
  });
  const status = await new Promise<number>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('secureConnect', () =>
      socket.write(`CONNECT ${cluster}:443 HTTP/1.1\r\nHost: ${cluster}:443\r\n\r\n`),
    );
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      resolve(Number(head.slice(9, 12)));
    };
    socket.on('data', onData);
  });
  if (status !== 200) {
    socket.destroy();
    return status;
  }
  return await new Promise<number>((resolve, reject) => {
    const tls = tlsConnect({
      socket,
      ca: readFileSync(env.cluster1.caCertPath),
      checkServerIdentity: () => undefined, // reached by a cluster name; the CA is verified
    });
    tls.once('error', reject);
    let raw = '';
    tls.on('data', (d: Buffer) => {
      raw += d.toString();
    });
    tls.once('end', () => {
      tls.destroy();
      resolve(Number(raw.slice(9, 12)));
    });
    tls.once('secureConnect', () =>
      tls.write('GET /version HTTP/1.1\r\nHost: kube\r\nConnection: close\r\n\r\n'),
    );
  });
}

describe("tether's agents as addons on a joined cluster", () => {
  it('enabled: the delivered agents run from their own hub credentials: a token is projected, the tunnel serves the cluster', async () => {
    for (const name of ['managed-serviceaccount', 'cluster-proxy'])
      await addons.create({ metadata: { name, namespace: joined.name }, spec: { installNamespace } });

    // managed-serviceaccount: the Deployment's container with the Secret the registration agent wrote
    const msaArgs = await eventually(
      () =>
        containerAsProcess(managed, installNamespace, 'managed-serviceaccount-addon-agent', join(dir, 'msa')),
      'managed-serviceaccount delivered with its hub credential',
    );
    const managedKubeconfig = join(dir, 'msa.kubeconfig');
    await writeServiceAccountKubeconfig(
      managed,
      installNamespace,
      'managed-serviceaccount',
      managedKubeconfig,
    );
    const msaOps = await freePort();
    processes.push(
      new SupervisedProcess({
        name: 'builtin-flow/serviceaccount-agent',
        command: process.execPath,
        logFile: join(dir, 'msa-agent.log'),
        args: [
          cli,
          ...msaArgs.map((a) => (a.startsWith('--ops-port=') ? `--ops-port=${msaOps}` : a)),
          '--ops-bind-address=127.0.0.1',
          `--kubeconfig=${managedKubeconfig}`,
        ],
      }),
    );

    // cluster-proxy: the proxy-agent with cluster-proxy-hub-kubeconfig and the proxy-server CA
    const proxyArgs = await eventually(
      () => containerAsProcess(managed, installNamespace, 'cluster-proxy-proxy-agent', join(dir, 'proxy')),
      'cluster-proxy delivered with its hub credential',
    );
    const proxyOps = await freePort();
    processes.push(
      new SupervisedProcess({
        name: 'builtin-flow/proxy-agent',
        command: process.execPath,
        logFile: join(dir, 'proxy-agent.log'),
        env: {
          ...process.env,
          KUBERNETES_SERVICE_HOST: apiserver.hostname,
          KUBERNETES_SERVICE_PORT: apiserver.port,
        },
        args: [
          tetherBin,
          ...proxyArgs.map((a) => (a.startsWith('--ops-port=') ? `--ops-port=${proxyOps}` : a)),
          '--ops-address=127.0.0.1',
        ],
      }),
    );

    const name = uniqueName('flow-sa');
    await msas.create({ metadata: { name, namespace: joined.name }, spec: { rotation: { enabled: true } } });
    cleanups.add(() => msas.delete(name, joined.name, { ignoreNotFound: true }));
    await eventually(async () => {
      const msa = await msas.get(name, joined.name);
      return findCondition(msa?.status?.conditions, 'TokenReported')?.status === 'True';
    }, `ManagedServiceAccount ${name} reports a token`);
    expect(
      await eventually(async () => (await versionThroughTunnel(joined.name)) === 200, 'the tunnel serves'),
    ).toBe(true);
  });

  it('disabled: their objects and hub credentials go, and the tunnel with them', async () => {
    for (const name of ['managed-serviceaccount', 'cluster-proxy']) await addons.delete(name, joined.name);
    await eventually(
      async () =>
        !(await deployments.get('managed-serviceaccount-addon-agent', installNamespace)) &&
        !(await deployments.get('cluster-proxy-proxy-agent', installNamespace)) &&
        !(await secrets.get('managed-serviceaccount-hub-kubeconfig', installNamespace)) &&
        !(await secrets.get('cluster-proxy-hub-kubeconfig', installNamespace)),
      'the agents and their hub credentials removed',
    );
    expect(await versionThroughTunnel(joined.name)).toBe(503);
  });
});
