// Deny-then-delete of a cluster that has ManifestWorks, with the real registration hub and a real
// work agent on cluster1 running on the cluster's registration identity and the production RBAC:
// denying deletes the work RoleBinding, but its manifest-work-cleanup finalizer keeps it in force
// while works remain, so deleting the cluster afterwards still lets the agent release its
// finalizers on the works; then the hub drops the binding, the namespace and the cluster.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManagedClusterCondition, type ManifestWork, manifestWorkResource } from '../../src/api/index.ts';
import { findCondition, ResourceClient } from '../../src/kube/index.ts';
import { manifestWorkCleanupFinalizer, namespaceRbacName } from '../../src/registration/hub/index.ts';
import { startWorkAgent } from '../../src/work/agent/index.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  agentKubeconfig,
  Cleanups,
  conditionOf,
  createCluster,
  env,
  hub,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const scope = uniqueName('hubwork');
const fileCleanups = new Cleanups();
const cleanups = new Cleanups();
const managed = adminKubeConfig(env.cluster1);
const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
const managedConfigMaps = new ResourceClient(managed, {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
});

beforeAll(async () => {
  await startScopedHub(fileCleanups, scope);
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

describe('deny, then delete, a cluster with ManifestWorks', () => {
  it('does not hang: the agent keeps its work grant until its works are gone, then everything goes', async () => {
    const name = await createCluster(cleanups, scope);
    await waitFor(
      async () => (await conditionOf(name, ManagedClusterCondition.HubAccepted))?.status === 'True',
      `${name} accepted`,
    );
    const agent = await startWorkAgent({
      clusterName: name,
      agentId: `${name}-agent`,
      hubKubeConfig: await agentKubeconfig(name, 'work'),
      managedKubeConfig: managed,
      statusSyncIntervalMs: 1500,
    });
    cleanups.add(() => agent.stop());
    await agent.ready;

    const configMap = uniqueName('cleanup-cm');
    cleanups.add(() => managedConfigMaps.delete(configMap, 'default', { ignoreNotFound: true }));
    await works.create({
      metadata: { name: 'w1', namespace: name },
      spec: {
        workload: {
          manifests: [
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMap, namespace: 'default' } },
          ],
        },
      },
    });
    await waitFor(
      async () =>
        findCondition((await works.get('w1', name))?.status?.conditions, 'Applied')?.status === 'True',
      'the work applied by the agent',
      60_000,
    );
    expect(await managedConfigMaps.get(configMap, 'default')).toBeDefined();

    await admin.clusters.patchMerge(name, { spec: { hubAcceptsClient: false } });
    await waitFor(
      async () => (await conditionOf(name, ManagedClusterCondition.HubAccepted))?.status === 'False',
      'denied',
    );
    // Deleted, but held (and in force) by its finalizer while the work is there.
    const held = await admin.roleBindings.get(namespaceRbacName(name, 'work'), name);
    expect(held?.metadata?.deletionTimestamp).toBeDefined();
    expect(held?.metadata?.finalizers).toEqual([manifestWorkCleanupFinalizer]);
    expect(await admin.roleBindings.get(namespaceRbacName(name, 'registration'), name)).toBeUndefined();

    await admin.clusters.delete(name);
    await waitFor(
      async () =>
        !(await admin.clusters.get(name)) &&
        !(await works.get('w1', name)) &&
        !(await managedConfigMaps.get(configMap, 'default')) &&
        !(await admin.roleBindings.get(namespaceRbacName(name, 'work'), name)),
      'the cluster, its work, the applied ConfigMap and the work RoleBinding gone',
      90_000,
    );
    await waitFor(async () => !(await admin.namespaces.get(name)), 'the cluster namespace gone', 90_000);
  });
});
