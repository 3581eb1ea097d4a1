// The managed-serviceaccount and cluster-gateway addons on real control planes, in process mode:
// `tether serviceaccount-agent` runs as a process with the command line the addon renders, its
// addon hub credential (CSR flow, OCM's default subject) and hub RBAC bound to the addon's group,
// and on cluster1 with nothing but the ServiceAccount and RBAC the addon renders (applied here as
// the work agent would). The cluster-gateway hub controller and the ManagedServiceAccount hub
// controllers (they grant the addon identity its token Secrets by name) run in this process.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClusterGatewayAddonHub,
  startClusterGatewayAddonHub,
} from '../../src/addon/builtin/cluster-gateway-hub.ts';
import { clusterProxyAddon } from '../../src/addon/builtin/cluster-proxy.ts';
import {
  managedServiceAccountAddon,
  managedServiceAccountHubPermissions,
} from '../../src/addon/builtin/managed-serviceaccount.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import {
  applyObjects,
  findCondition,
  kubeconfigFromParts,
  kubeconfigToYaml,
  ResourceClient,
} from '../../src/kube/index.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import { roleBindingResource, roleResource } from '../../src/registration/hub/resources.ts';
import { startServiceAccountHub } from '../../src/serviceaccount/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { one, type PodTemplate, renderContext } from '../addon/builtin-fixtures.ts';
import { addonCertificate, addonSubject, writeHubKubeconfigDir } from './fixtures/addon-builtin.ts';
import { testEnv } from './fixtures/env.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { Cleanups } from './fixtures/registration-hub.ts';
import { hubAdmin, managedAdmin, managedServiceAccounts, msas, waitGone } from './fixtures/serviceaccount.ts';

const env = testEnv();
const cleanups = new Cleanups();
const dir = mkdtempSync(join(tmpdir(), 'tether-addon-msa-'));
const cli = tetherBin;
const hubNamespaces = new ResourceClient(hubAdmin, {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
});
const hubRoles = new ResourceClient(hubAdmin, roleResource);
const hubRoleBindings = new ResourceClient(hubAdmin, roleBindingResource);
const addons = new ResourceClient<ManagedClusterAddOn>(hubAdmin, managedClusterAddOnResource);
let cluster = '';
let installNamespace = '';
let agent: SupervisedProcess;
let gatewayHub: ClusterGatewayAddonHub;

/** What the addon manager grants the identity: the addon's rules, in the cluster namespace, to its group. */
async function grantAddonHubPermissions(name: string): Promise<void> {
  const rbacName = 'open-cluster-management:managed-serviceaccount:agent';
  await hubRoles.create({
    metadata: { name: rbacName, namespace: name },
    rules: managedServiceAccountHubPermissions(),
  } as never);
  await hubRoleBindings.create({
    metadata: { name: rbacName, namespace: name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: rbacName },
    subjects: [
      {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Group',
        name: addonSubject(name, 'managed-serviceaccount').organizations[0],
      },
    ],
  } as never);
}

/** A kubeconfig file for ServiceAccount `sa` of cluster1 (a TokenRequest, one hour). */
async function serviceAccountKubeconfig(namespace: string, sa: string): Promise<string> {
  const core = managedAdmin.makeApiClient(CoreV1Api);
  const tr = await core.createNamespacedServiceAccountToken({
    name: sa,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const kc = kubeconfigFromParts({
    name: 'cluster1',
    server: env.cluster1.apiserverUrl,
    caPem: readFileSync(env.cluster1.caCertPath, 'utf8'),
    token: tr.status?.token ?? '',
  });
  const path = join(dir, 'managed.kubeconfig');
  writeFileSync(path, kubeconfigToYaml(kc), { mode: 0o600 });
  return path;
}

beforeAll(async () => {
  const serviceAccountHub = await startServiceAccountHub({ hubKubeConfig: hubAdmin });
  cleanups.add(() => serviceAccountHub.stop());
  cluster = uniqueName('msa-addon');
  await hubNamespaces.create({ metadata: { name: cluster } });
  cleanups.add(() => hubNamespaces.delete(cluster, undefined, { ignoreNotFound: true }));
  await grantAddonHubPermissions(cluster);
  const hubKubeconfig = writeHubKubeconfigDir(
    join(dir, 'hub-kubeconfig'),
    await addonCertificate(cleanups, cluster, 'managed-serviceaccount'),
    env.hub.apiserverUrl,
    readFileSync(env.hub.caCertPath, 'utf8'),
  );

  // cluster1: exactly what the addon renders, as the work agent would apply it
  installNamespace = uniqueName('msa-addon-ns');
  const objects = await managedServiceAccountAddon({ image: 'unused' }).manifests(
    renderContext('managed-serviceaccount', cluster, { installNamespace }),
  );
  // all of them, the Deployment too: a real apiserver validates every object (no node runs its pod)
  const managed = objects;
  await applyObjects(managedAdmin, managed as KubernetesObject[], 'e2e-addon-msa');
  cleanups.add(async () => {
    const core = managedAdmin.makeApiClient(CoreV1Api);
    await core.deleteNamespace({ name: installNamespace }).catch(() => {});
    for (const o of managed.filter((x) => x.kind === 'ClusterRole' || x.kind === 'ClusterRoleBinding')) {
      const kind = o.kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
      await new ResourceClient(managedAdmin, {
        group: 'rbac.authorization.k8s.io',
        version: 'v1',
        plural: kind,
        kind: o.kind ?? '',
        namespaced: false,
      }).delete(o.metadata?.name ?? '', undefined, { ignoreNotFound: true });
    }
  });
  const managedKubeconfig = await serviceAccountKubeconfig(installNamespace, 'managed-serviceaccount');

  const args = one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args ?? [];
  const ops = await freePort();
  const local = args
    .map((a) => a.replaceAll('/managed/', `${dir}/`))
    .map((a) => (a.startsWith('--ops-port=') ? `--ops-port=${ops}` : a))
    .map((a) => (a === '--ops-bind-address=0.0.0.0' ? '--ops-bind-address=127.0.0.1' : a));
  agent = new SupervisedProcess({
    name: `${cluster}/managed-serviceaccount-agent`,
    command: process.execPath,
    logFile: join(dir, 'agent.log'),
    args: [cli, ...local, `--kubeconfig=${managedKubeconfig}`],
  });
  expect(local).toContain(`--hub-kubeconfig=${hubKubeconfig}`);
  await waitReady(agent, ops, 60_000);

  gatewayHub = startClusterGatewayAddonHub({ hubKubeConfig: hubAdmin });
  cleanups.add(() => gatewayHub.stop());
});

afterAll(async () => {
  await agent?.stop(3000);
  await cleanups.run();
  rmSync(dir, { recursive: true, force: true });
});

const tokenReported = (name: string) =>
  pollUntil(
    async () => {
      const msa = await msas.get(name, cluster);
      return findCondition(msa?.status?.conditions, 'TokenReported')?.status === 'True' ? msa : undefined;
    },
    {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `ManagedServiceAccount ${cluster}/${name} reports a token`,
    },
  );

describe('managed-serviceaccount addon', () => {
  it("projects a ManagedServiceAccount's token with only its addon identity and the RBAC the addon renders", async () => {
    const name = uniqueName('app');
    await msas.create({
      metadata: { name, namespace: cluster },
      spec: { rotation: { enabled: true, validity: '1h' } },
    });
    cleanups.add(() => msas.delete(name, cluster, { ignoreNotFound: true }));
    await tokenReported(name);
    const account = await managedServiceAccounts.get(name, installNamespace);
    expect(
      account?.metadata.labels?.['authentication.open-cluster-management.io/is-managed-serviceaccount'],
    ).toBe('true');
  });
});

describe('cluster-proxy addon', () => {
  it("the objects it renders are valid for cluster1's apiserver", async () => {
    const ns = uniqueName('proxy-addon-ns');
    cleanups.add(() =>
      managedAdmin
        .makeApiClient(CoreV1Api)
        .deleteNamespace({ name: ns })
        .catch(() => {}),
    );
    const objects = await clusterProxyAddon({
      proxyServer: 'proxy.hub.example:8091',
      proxyServerCaPem: readFileSync(env.hub.caCertPath, 'utf8'),
      image: 'localhost/tether:test',
    }).manifests(
      renderContext('cluster-proxy', cluster, {
        installNamespace: ns,
        deploymentConfig: { proxyConfig: { httpsProxy: 'http://squid:3128', caBundle: 'Y2E=' } },
      }),
    );
    await applyObjects(managedAdmin, objects as KubernetesObject[], 'e2e-addon-proxy');
    const deployments = new ResourceClient(managedAdmin, {
      group: 'apps',
      version: 'v1',
      plural: 'deployments',
      kind: 'Deployment',
      namespaced: true,
    });
    expect((await deployments.get('cluster-proxy-proxy-agent', ns))?.metadata?.name).toBe(
      'cluster-proxy-proxy-agent',
    );
  });
});

describe('cluster-gateway addon (hub)', () => {
  it('enabling it creates ManagedServiceAccount tether-gateway owned by the addon, Available follows its token, disabling removes it', async () => {
    const mca = await addons.create({
      apiVersion: 'addon.open-cluster-management.io/v1alpha1',
      kind: 'ManagedClusterAddOn',
      metadata: { name: 'cluster-gateway', namespace: cluster },
      spec: {},
    });
    cleanups.add(() => addons.delete('cluster-gateway', cluster, { ignoreNotFound: true }));
    const msa = await tokenReported('tether-gateway');
    expect(msa.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'ManagedClusterAddOn',
        name: 'cluster-gateway',
        uid: mca.metadata.uid,
      }),
    ]);
    expect(await managedServiceAccounts.get('tether-gateway', installNamespace)).toBeDefined();
    const available = await pollUntil(
      async () => {
        const c = findCondition(
          (await addons.get('cluster-gateway', cluster))?.status?.conditions,
          'Available',
        );
        return c?.status === 'True' ? c : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'cluster-gateway Available' },
    );
    expect(available.reason).toBe('ManagedServiceAccountTokenReported');

    // disable: the hub's garbage collector takes the ManagedServiceAccount, the agent its ServiceAccount
    await addons.delete('cluster-gateway', cluster);
    await waitGone('ManagedServiceAccount tether-gateway', () => msas.get('tether-gateway', cluster));
    await waitGone('ServiceAccount tether-gateway on cluster1', () =>
      managedServiceAccounts.get('tether-gateway', installNamespace),
    );
  });
});
