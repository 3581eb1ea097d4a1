// The helloworld add-on end to end in process mode (no nodes): the registration hub and a real
// registration agent joined through squid; the add-on manager (deploy + registration controllers)
// with helloworld; a real work agent applying its ManifestWork to cluster1. The registration agent
// also runs the add-ons' lease health (OCM's 30 s look-again interval, so allow for it). Enabling helloworld on the cluster puts its namespace, ServiceAccount
// and RBAC on cluster1 and `helloworld-hub-kubeconfig` next to them; the agent, run as its pod would
// run it (that Secret's files, that ServiceAccount), renews its lease → the add-on turns Available
// with OCM's reason, and copies a hub ConfigMap to cluster1. Disabling it removes the agent's
// objects and its hub credential, but not the install namespace other add-ons share.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helloworld } from '../../examples/helloworld-addon/helloworld.ts';
import { AddonManager } from '../../src/addon/sdk/manager.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import { clusterManagementAddOnResource } from '../../src/api/index.ts';
import { findCondition, type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';
import { joinedClusterWithWorkAgent } from './fixtures/addon-flow.ts';
import { HelloworldProcess, writeServiceAccountKubeconfig } from './fixtures/addon-helloworld.ts';
import { adminKubeConfig, configMapResource, uniqueName } from './fixtures/helpers.ts';
import { env, hubKc, type JoinedCluster } from './fixtures/joined-cluster.ts';
import { Cleanups, waitFor } from './fixtures/registration-hub.ts';

interface Secret extends KubeObject {
  data?: Record<string, string>;
}
const core = (plural: string, kind: string) => ({ group: '', version: 'v1', plural, kind, namespaced: true });
const managed = adminKubeConfig(env.cluster1);
const log = logger('helloworld-flow-e2e');
const cleanups = new Cleanups();
const dir = mkdtempSync(join(tmpdir(), 'tether-helloworld-flow-'));
const installNamespace = uniqueName('hello-flow');

const addons = new ResourceClient<ManagedClusterAddOn>(hubKc, managedClusterAddOnResource);
const onManaged = <T extends KubeObject>(plural: string, kind: string) =>
  new ResourceClient<T>(managed, core(plural, kind));
const secrets = onManaged<Secret>('secrets', 'Secret');
const serviceAccounts = onManaged('serviceaccounts', 'ServiceAccount');
const copies = onManaged<KubeObject & { data?: Record<string, string> }>('configmaps', 'ConfigMap');
const namespaces = new ResourceClient(managed, { ...core('namespaces', 'Namespace'), namespaced: false });
const roles = new ResourceClient(managed, {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'roles',
  kind: 'Role',
  namespaced: true,
});

let joined: JoinedCluster;
let agent: HelloworldProcess | undefined;

/** waitFor, quoting the agent's output (once it runs) when it times out. */
async function eventually<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  try {
    return await waitFor(check, what, 90_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nagent output:\n${agent?.output ?? '(not started)'}`);
  }
}

beforeAll(async () => {
  cleanups.add(async () => rmSync(dir, { recursive: true, force: true }));
  cleanups.add(() => namespaces.delete(installNamespace, undefined, { ignoreNotFound: true }));
  joined = await joinedClusterWithWorkAgent('hwflow', managed, cleanups);
  const manager = new AddonManager({
    hubKubeConfig: hubKc,
    leaderElection: false,
    log,
  }).add(helloworld({ image: 'registry.example/tether:flow-e2e' }));
  await manager.start();
  cleanups.add(() => manager.stop());
  cleanups.add(() =>
    new ResourceClient(hubKc, clusterManagementAddOnResource).delete('helloworld', undefined, {
      ignoreNotFound: true,
    }),
  );
  // disable while the manager and the work agent still run (finalizer, applied objects)
  cleanups.add(async () => {
    await addons.delete('helloworld', joined.name, { ignoreNotFound: true });
    await eventually(async () => !(await addons.get('helloworld', joined.name)), 'the add-on deleted');
  });
}, 180_000);
afterAll(() => cleanups.run(), 120_000);

describe('helloworld on a joined cluster', () => {
  it('enabled: its agent objects and hub credential reach the cluster; the agent turns it Available and copies ConfigMaps', async () => {
    await addons.create({
      metadata: { name: 'helloworld', namespace: joined.name },
      spec: { installNamespace },
    });
    await eventually(
      () => serviceAccounts.get('helloworld-agent', installNamespace),
      'the ServiceAccount applied',
    );
    const secret = await eventually(async () => {
      const found = await secrets.get('helloworld-hub-kubeconfig', installNamespace);
      return found?.data?.kubeconfig ? found : undefined;
    }, 'helloworld-hub-kubeconfig written by the registration agent');

    // the Secret's keys as files, as the kubelet mounts it at /managed/hub-kubeconfig
    const mount = mkdtempSync(join(dir, 'hub-kubeconfig-'));
    for (const [key, value] of Object.entries(secret.data ?? {})) {
      writeFileSync(join(mount, key), Buffer.from(value, 'base64'));
    }
    const managedKubeconfig = join(dir, 'managed.kubeconfig');
    await writeServiceAccountKubeconfig(managed, installNamespace, 'helloworld-agent', managedKubeconfig);
    const started = new HelloworldProcess([
      'agent',
      `--hub-kubeconfig=${join(mount, 'kubeconfig')}`,
      `--cluster-name=${joined.name}`,
      `--managed-kubeconfig=${managedKubeconfig}`,
      `--addon-namespace=${installNamespace}`,
    ]);
    agent = started;
    cleanups.add(() => started.stop());

    const available = await eventually(async () => {
      const mca = await addons.get('helloworld', joined.name);
      const condition = findCondition(mca?.status?.conditions, 'Available');
      return condition?.status === 'True' ? condition : undefined;
    }, 'helloworld Available');
    expect(available.reason).toBe('ManagedClusterAddOnLeaseUpdated');

    const name = uniqueName('hello-flow');
    await new ResourceClient(hubKc, configMapResource).create({
      metadata: { name, namespace: joined.name },
      data: { greeting: 'hello from the hub' },
    } as KubeObject);
    const copy = await eventually(() => copies.get(name, installNamespace), `ConfigMap ${name} copied`);
    expect(copy.data).toEqual({ greeting: 'hello from the hub' });
  });

  it('disabled: the agent objects and its hub credential go, the shared install namespace stays', async () => {
    await addons.delete('helloworld', joined.name);
    await eventually(
      async () =>
        !(await serviceAccounts.get('helloworld-agent', installNamespace)) &&
        !(await roles.get('helloworld-agent', installNamespace)) &&
        !(await secrets.get('helloworld-hub-kubeconfig', installNamespace)),
      'the agent objects and the hub credential removed',
    );
    await eventually(
      async () => !(await addons.get('helloworld', joined.name)),
      'the add-on and its work gone',
    );
    // The install namespace is shared with other add-ons (deletion-orphan): it stays.
    const namespace = await namespaces.get(installNamespace);
    expect(namespace?.metadata?.name).toBe(installNamespace);
    expect(namespace?.metadata?.deletionTimestamp).toBeUndefined();
    expect(await agent?.stop()).toBe(0);
  });
});
