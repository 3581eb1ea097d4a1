// The helloworld add-on's agent as a process (what its pod runs), against the shared hub and
// cluster1: it reads its hub credential laid out as the registration agent's
// `helloworld-hub-kubeconfig` Secret is (kubeconfig next to tls.crt / tls.key, an addon identity
// with OCM's default subject, allowed only what the add-on's hubPermissions ask in the cluster
// namespace), and it talks to cluster1 as the ServiceAccount its rendered manifests create, with
// only the RBAC they grant. A ConfigMap created, changed and deleted in the cluster namespace on
// the hub is copied, updated and removed in the add-on namespace; the lease appears and is renewed.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { helloworldAddon } from '../../examples/helloworld-addon/helloworld.ts';
import type { AddonRenderContext } from '../../src/addon/sdk/types.ts';
import type { ManagedCluster } from '../../src/api/cluster.ts';
import {
  applyObjects,
  type KubeObject,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import type { RbacBinding, RbacRole } from '../../src/registration/hub/resources.ts';
import {
  namespaceResource,
  roleBindingResource,
  roleResource,
} from '../../src/registration/hub/resources.ts';
import { HelloworldProcess, writeServiceAccountKubeconfig } from './fixtures/addon-helloworld.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, configMapResource, uniqueName } from './fixtures/helpers.ts';
import { Cleanups } from './fixtures/registration-hub.ts';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const env = testEnv();
const hub = adminKubeConfig(env.hub);
const managed = adminKubeConfig(env.cluster1);
const cleanups = new Cleanups();
const dir = mkdtempSync(join(tmpdir(), 'tether-helloworld-'));
const cluster = uniqueName('hello-cluster');
const addonNamespace = uniqueName('hello-addon');
const addonGroup = `system:open-cluster-management:cluster:${cluster}:addon:helloworld`;

const hubConfigMaps = new ResourceClient<ConfigMap>(hub, configMapResource);
const copies = new ResourceClient<ConfigMap>(managed, configMapResource);
const leases = new ResourceClient<Lease>(managed, leaseResource);
let agent: HelloworldProcess | undefined;

/** The Secret's files as the registration agent writes them: kubeconfig naming tls.crt / tls.key beside it. */
async function writeHubCredential(path: string): Promise<void> {
  const caPem = readFileSync(env.hub.caCertPath, 'utf8');
  const ca = await loadCertificateAuthority(caPem, readFileSync(env.hub.caKeyPath, 'utf8'));
  const { certPem, keyPem } = await issueCertificate(ca, {
    commonName: `${addonGroup}:agent:agent1`,
    organizations: [addonGroup, 'system:open-cluster-management:addon:helloworld'],
    usage: 'client',
    validitySeconds: 3600,
  });
  writeFileSync(join(path, 'tls.crt'), certPem);
  writeFileSync(join(path, 'tls.key'), keyPem, { mode: 0o600 });
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'hub',
        cluster: {
          server: env.hub.apiserverUrl,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: 'user', user: { 'client-certificate': 'tls.crt', 'client-key': 'tls.key' } }],
    contexts: [
      { name: 'default-context', context: { cluster: 'hub', user: 'user', namespace: 'configuration' } },
    ],
    'current-context': 'default-context',
  };
  writeFileSync(join(path, 'kubeconfig'), stringify(kubeconfig));
}

/** The add-on's rendered RBAC applied on cluster1, and a kubeconfig of its ServiceAccount. */
async function writeManagedCredential(path: string): Promise<void> {
  const ctx: AddonRenderContext = {
    cluster: { metadata: { name: cluster } } as ManagedCluster,
    addon: {
      apiVersion: 'addon.open-cluster-management.io/v1alpha1',
      kind: 'ManagedClusterAddOn',
      metadata: { name: 'helloworld', namespace: cluster },
      spec: { installNamespace: addonNamespace },
    },
    installNamespace: addonNamespace,
    installMode: 'Default',
    variables: {},
    configs: [],
  };
  const objects = (await helloworldAddon.manifests(ctx)).filter((o) => o.kind !== 'Deployment');
  await applyObjects(managed, objects, 'tether-e2e');
  const serviceAccount = objects.find((o) => o.kind === 'ServiceAccount')?.metadata?.name ?? '';
  await writeServiceAccountKubeconfig(managed, addonNamespace, serviceAccount, path);
}

/** The agent's pod, as a process. */
function startAgent(hubKubeconfig: string, managedKubeconfig: string): HelloworldProcess {
  return new HelloworldProcess([
    'agent',
    `--hub-kubeconfig=${hubKubeconfig}`,
    `--cluster-name=${cluster}`,
    `--managed-kubeconfig=${managedKubeconfig}`,
    `--addon-namespace=${addonNamespace}`,
  ]);
}

function eventually<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  if (!agent) throw new Error('agent not started');
  return agent.eventually(check, what);
}

beforeAll(async () => {
  cleanups.add(async () => rmSync(dir, { recursive: true, force: true }));
  const hubNamespaces = new ResourceClient(hub, namespaceResource);
  const managedNamespaces = new ResourceClient(managed, namespaceResource);
  cleanups.add(() => hubNamespaces.delete(cluster, undefined, { ignoreNotFound: true }));
  cleanups.add(() => managedNamespaces.delete(addonNamespace, undefined, { ignoreNotFound: true }));
  await hubNamespaces.create({ metadata: { name: cluster } });

  // What the hub grants the add-on's identity: its hubPermissions as a Role in the cluster namespace.
  const rules = helloworldAddon.registration?.hubPermissions?.(
    { metadata: { name: cluster } } as ManagedCluster,
    { metadata: { name: 'helloworld', namespace: cluster } } as never,
  );
  const rbac = 'rbac.authorization.k8s.io' as const;
  await new ResourceClient<RbacRole>(hub, roleResource).create({
    metadata: { name: 'helloworld-agent', namespace: cluster },
    rules: rules ?? [],
  } as RbacRole);
  await new ResourceClient<RbacBinding>(hub, roleBindingResource).create({
    metadata: { name: 'helloworld-agent', namespace: cluster },
    roleRef: { apiGroup: rbac, kind: 'Role', name: 'helloworld-agent' },
    subjects: [{ apiGroup: rbac, kind: 'Group', name: addonGroup }],
  });

  const secretDir = mkdtempSync(join(dir, 'hub-kubeconfig-'));
  await writeHubCredential(secretDir);
  const managedKubeconfig = join(dir, 'managed.kubeconfig');
  await writeManagedCredential(managedKubeconfig);
  agent = startAgent(join(secretDir, 'kubeconfig'), managedKubeconfig);
  const started = agent;
  cleanups.add(() => started.stop());
});
afterAll(() => cleanups.run());

describe('helloworld agent', () => {
  it('renews its lease in the add-on namespace on the managed cluster', async () => {
    const lease = await eventually(() => leases.get('helloworld', addonNamespace), 'the helloworld lease');
    expect(lease.spec?.leaseDurationSeconds).toBe(60);
    expect(Date.now() - Date.parse(lease.spec?.renewTime ?? '')).toBeLessThan(60_000);
  });

  it('copies a ConfigMap of the cluster namespace on the hub, follows its changes and its deletion', async () => {
    const name = uniqueName('hello');
    await hubConfigMaps.create({ metadata: { name, namespace: cluster }, data: { greeting: 'hello' } });
    const copy = await eventually(() => copies.get(name, addonNamespace), `ConfigMap ${name} copied`);
    expect(copy.data).toEqual({ greeting: 'hello' });
    expect(copy.metadata?.labels).toEqual({ 'synced-from-hub': '' });

    await hubConfigMaps.patchMerge(name, { data: { greeting: 'hello again' } }, cluster);
    await eventually(
      async () => (await copies.get(name, addonNamespace))?.data?.greeting === 'hello again',
      `ConfigMap ${name} updated`,
    );

    await hubConfigMaps.delete(name, cluster);
    await eventually(async () => !(await copies.get(name, addonNamespace)), `copy of ${name} deleted`);
  });

  it("leaves the managed namespace's own kube-root-ca.crt alone", async () => {
    const own = await eventually(() => copies.get('kube-root-ca.crt', addonNamespace), 'kube-root-ca.crt');
    expect(own.metadata?.labels?.['synced-from-hub']).toBeUndefined();
    expect(own.data?.['ca.crt']).toBe(readFileSync(env.cluster1.caCertPath, 'utf8'));
  });

  it('stops on SIGTERM', async () => {
    if (!agent) throw new Error('agent not started');
    expect(await agent.stop()).toBe(0);
  });
});
