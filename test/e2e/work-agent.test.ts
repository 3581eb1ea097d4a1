// The work agent on real control planes (hub + cluster1), running with the restricted identity a
// registered cluster has on the hub: the seed ManifestWork (ServiceAccount + nginx Deployment)
// lands on cluster1 with its AppliedManifestWork, ownerReferences and per-manifest status;
// updates change resources and the record of what was applied; a dropped manifest's resource is
// deleted; bad manifests fail alone; cluster-scoped kinds and a CRD with its CR converge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManifestWork } from '../../src/api/index.ts';
import { type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { testEnv } from './fixtures/env.ts';
import { kubectl } from './fixtures/helpers.ts';
import {
  appliedWorks,
  conditionStatus,
  configMap,
  hubHash,
  isSettled,
  kinds,
  managed,
  manifestCondition,
  manifestStatus,
  manifestWorkFinalizer,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from './fixtures/work.ts';

const env = testEnv();
let cluster: WorkCluster;

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-agent');
  await cluster.startAgent();
});
afterAll(async () => {
  await cluster?.cleanup();
});

function nginx(namespace: string, replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { namespace, name: 'nginx-deployment', labels: { app: 'nginx' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'nginx' } },
      template: {
        metadata: { labels: { app: 'nginx' } },
        spec: {
          serviceAccountName: 'my-sa',
          containers: [{ name: 'nginx', image: 'nginx:1.14.2', ports: [{ containerPort: 80 }] }],
        },
      },
    },
  };
}

const sa = (namespace: string) => ({
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: { namespace, name: 'my-sa' },
});

const settled = (w: ManifestWork) => isSettled(w) && w;

describe('the seed ManifestWork (ServiceAccount + nginx Deployment)', () => {
  let ns: string;
  let workName: string;

  beforeAll(async () => {
    ns = await cluster.managedNamespace('work-seed');
    workName = unique('my-first-work');
  });

  it('lands on cluster1 with status, an AppliedManifestWork and ownerReferences', async () => {
    await cluster.createWork(workName, [sa(ns), nginx(ns, 3)]);
    const work = await cluster.waitForWork(workName, 'Applied and Available', settled);

    expect(work.metadata.finalizers).toContain(manifestWorkFinalizer);
    expect(work.status?.conditions?.find((c) => c.type === 'Applied')).toMatchObject({
      reason: 'AppliedManifestWorkComplete',
      observedGeneration: work.metadata.generation,
    });
    expect(manifestStatus(work, 1)?.resourceMeta).toEqual({
      ordinal: 1,
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      resource: 'deployments',
      name: 'nginx-deployment',
      namespace: ns,
    });
    expect(manifestStatus(work, 0)?.resourceMeta).toMatchObject({
      kind: 'ServiceAccount',
      resource: 'serviceaccounts',
    });
    for (const ordinal of [0, 1]) {
      expect(manifestCondition(work, ordinal, 'Applied')).toMatchObject({
        status: 'True',
        reason: 'AppliedManifestComplete',
      });
      expect(manifestCondition(work, ordinal, 'Available')).toMatchObject({
        status: 'True',
        reason: 'ResourceAvailable',
      });
    }

    // The real kubectl on cluster1 sees what the work asked for (pods stay Pending: no kubelet).
    const deployments = await kubectl(env.cluster1.kubeconfigPath, [
      'get',
      'deployments',
      '-n',
      ns,
      '-o',
      'name',
    ]);
    expect(deployments.trim()).toBe('deployment.apps/nginx-deployment');
    const sas = await kubectl(env.cluster1.kubeconfigPath, ['get', 'sa', 'my-sa', '-n', ns, '-o', 'name']);
    expect(sas.trim()).toBe('serviceaccount/my-sa');

    const appliedName = `${hubHash}-${workName}`;
    expect(hubHash).toMatch(/^[0-9a-f]{64}$/);
    const applied = await appliedWorks.get(appliedName);
    expect(applied?.spec).toEqual({ hubHash, manifestWorkName: workName, agentID: cluster.agentId });
    expect(applied?.metadata.finalizers).toContain(
      'cluster.open-cluster-management.io/applied-manifest-work-cleanup',
    );
    const deployment = await onManaged(kinds.deployment).get('nginx-deployment', ns);
    expect(applied?.status?.appliedResources).toEqual(
      expect.arrayContaining([
        {
          group: 'apps',
          version: 'v1',
          resource: 'deployments',
          namespace: ns,
          name: 'nginx-deployment',
          uid: deployment?.metadata?.uid,
        },
        expect.objectContaining({ version: 'v1', resource: 'serviceaccounts', namespace: ns, name: 'my-sa' }),
      ]),
    );
    expect(deployment?.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'work.open-cluster-management.io/v1',
        kind: 'AppliedManifestWork',
        name: appliedName,
        uid: applied?.metadata.uid,
      },
    ]);
  });

  it('an update changes the resource and the AppliedManifestWork', async () => {
    await cluster.updateWork(workName, [sa(ns), nginx(ns, 2), configMap(ns, 'extra', { k: 'v' })]);
    await cluster.waitForWork(workName, 'the new generation applied', settled);
    const deployment = (await onManaged(kinds.deployment).get('nginx-deployment', ns)) as KubeObject & {
      spec: { replicas: number };
    };
    expect(deployment.spec.replicas).toBe(2);
    const applied = await appliedWorks.get(`${hubHash}-${workName}`);
    expect(applied?.status?.appliedResources?.map((r) => r.resource).sort()).toEqual([
      'configmaps',
      'deployments',
      'serviceaccounts',
    ]);
  });

  it('a manifest removed from the work has its resource deleted and dropped from the record', async () => {
    await cluster.updateWork(workName, [nginx(ns, 2), configMap(ns, 'extra', { k: 'v' })]);
    await waitFor(
      'my-sa to be deleted',
      async () => !(await onManaged(kinds.serviceAccount).get('my-sa', ns)),
    );
    const work = await cluster.waitForWork(workName, 'two manifests reported', (w) =>
      isSettled(w) && w.status?.resourceStatus?.manifests?.length === 2 ? w : undefined,
    );
    expect(manifestStatus(work, 0)?.resourceMeta.kind).toBe('Deployment');
    const applied = await waitFor('the record to drop my-sa', async () => {
      const a = await appliedWorks.get(`${hubHash}-${workName}`);
      return a?.status?.appliedResources?.length === 2 ? a : undefined;
    });
    expect(applied.status?.appliedResources?.some((r) => r.resource === 'serviceaccounts')).toBe(false);
  });
});

describe('manifests that cannot be applied', () => {
  it('a bad manifest beside good ones fails only its own status, with the API message', async () => {
    const ns = await cluster.managedNamespace('work-bad');
    const name = unique('bad-beside-good');
    await cluster.createWork(name, [
      configMap(ns, 'good-one', { a: '1' }),
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'Not_A_Valid_Name', namespace: ns },
        data: {},
      },
      { apiVersion: 'example.tether.dev/v1', kind: 'Gadget', metadata: { name: 'nope', namespace: ns } },
      configMap(unique('missing-ns'), 'in-missing-namespace'),
      configMap(ns, 'good-two', { b: '2' }),
    ]);
    const work = await cluster.waitForWork(name, 'all five manifests reported', (w) =>
      w.status?.resourceStatus?.manifests?.length === 5 && conditionStatus(w, 'Applied') ? w : undefined,
    );
    expect(conditionStatus(work, 'Applied')).toBe('False');
    expect(work.status?.conditions?.find((c) => c.type === 'Applied')?.reason).toBe(
      'AppliedManifestWorkFailed',
    );
    expect(conditionStatus(work, 'Available')).not.toBe('True');
    for (const good of [0, 4]) {
      expect(manifestCondition(work, good, 'Applied')?.status).toBe('True');
      expect(manifestCondition(work, good, 'Available')?.status).toBe('True');
    }
    const invalid = manifestCondition(work, 1, 'Applied');
    expect(invalid).toMatchObject({ status: 'False', reason: 'AppliedManifestFailed' });
    expect(invalid?.message).toMatch(/Failed to apply manifest: .*Not_A_Valid_Name.*invalid/i);
    const unknownKind = manifestCondition(work, 2, 'Applied');
    expect(unknownKind?.message).toContain(`doesn't have a resource type "Gadget"`);
    expect(manifestCondition(work, 2, 'Available')?.reason).toBe('IncompletedResourceMeta');
    expect(manifestCondition(work, 3, 'Applied')?.message).toMatch(/namespaces "missing-ns-[^"]+" not found/);
    expect(manifestCondition(work, 3, 'Available')?.status).toBe('False');

    expect(await onManaged(kinds.configMap).get('good-one', ns)).toBeDefined();
    expect(await onManaged(kinds.configMap).get('good-two', ns)).toBeDefined();
  });
});

describe('cluster-scoped kinds and CRDs', () => {
  it('applies a Namespace and a ClusterRole, owned by the AppliedManifestWork, and deletes them when dropped', async () => {
    const name = unique('cluster-scoped');
    const nsName = unique('work-owned-ns');
    const roleName = unique('work-e2e-reader');
    await cluster.createWork(name, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: nsName } },
      configMap(nsName, 'inside'),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: roleName },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      },
    ]);
    const work = await cluster.waitForWork(name, 'settled', settled);
    expect(manifestStatus(work, 2)?.resourceMeta).toEqual({
      ordinal: 2,
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      kind: 'ClusterRole',
      resource: 'clusterroles',
      name: roleName,
    });
    const applied = await appliedWorks.get(`${hubHash}-${name}`);
    const role = await onManaged(kinds.clusterRole).get(roleName);
    expect(role?.metadata?.ownerReferences?.[0]?.uid).toBe(applied?.metadata.uid);
    const namespace = await onManaged(kinds.namespace).get(nsName);
    expect(namespace?.metadata?.ownerReferences?.[0]?.uid).toBe(applied?.metadata.uid);

    await cluster.updateWork(name, [configMap(nsName, 'inside')]);
    await waitFor('the ClusterRole and Namespace to go', async () => {
      const gone = !(await onManaged(kinds.clusterRole).get(roleName));
      const ns = await onManaged(kinds.namespace).get(nsName);
      return gone && (!ns || Boolean(ns.metadata?.deletionTimestamp));
    });
  });

  it('a CRD and its custom resource in one work converge', async () => {
    const group = `${unique('crd')}.e2e.tether.dev`;
    const name = unique('crd-and-cr');
    const ns = await cluster.managedNamespace('work-crd');
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    const widget = {
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name: 'w1', namespace: ns },
      spec: { size: 3 },
    };
    await cluster.createWork(name, [widget, crd]);
    const work = await cluster.waitForWork(name, 'CR applied after its CRD', settled);
    expect(manifestStatus(work, 0)?.resourceMeta).toMatchObject({
      group,
      kind: 'Widget',
      resource: 'widgets',
    });
    const widgets = new ResourceClient(managed, {
      group,
      version: 'v1',
      plural: 'widgets',
      kind: 'Widget',
      namespaced: true,
    });
    expect((await widgets.get('w1', ns))?.metadata?.ownerReferences?.[0]?.kind).toBe('AppliedManifestWork');
  });
});
