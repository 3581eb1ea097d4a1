// The placement hub's cluster-set controllers on the real hub control plane, as an OCM user meets
// them: the kept `default` and `global` sets, a cluster without a set label joining `default`,
// ClusterSetEmpty following membership (label and selector sets), a binding Bound only while its
// set exists, and the binding admission OCM's webhook enforces (name = spec.clusterSet, and
// `create` on managedclustersets/bind).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterSetCondition,
  clusterSetLabel,
  defaultClusterSetName,
  globalClusterSetName,
  type ManagedCluster,
  managedClusterResource,
  managedClusterSetBindingResource,
} from '../../src/api/index.ts';
import { applyObjects, ResourceClient } from '../../src/kube/index.ts';
import {
  bindingNameMessage,
  installPlacementAdmission,
  placementAdmissionObjects,
} from '../../src/placement/hub/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  bindingCondition,
  Cleanups,
  createBareCluster,
  createClusterSet,
  createNamespace,
  hub,
  setCondition,
  startTestPlacementHub,
  waitFor,
} from './fixtures/placement.ts';
import { kubeconfigAs, admin as rbacAdmin } from './fixtures/registration-hub.ts';

const fileCleanups = new Cleanups();
const cleanups = new Cleanups();

beforeAll(async () => {
  await startTestPlacementHub(fileCleanups, { resyncPeriodMs: 60_000 });
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

describe('the kept sets', () => {
  it('default (ExclusiveClusterSetLabel) and global (LabelSelector {}) exist', async () => {
    const sets = await waitFor(async () => {
      const d = await admin.clusterSets.get(defaultClusterSetName);
      const g = await admin.clusterSets.get(globalClusterSetName);
      return d && g ? { d, g } : undefined;
    }, 'default and global sets');
    expect(sets.d.spec?.clusterSelector).toEqual({ selectorType: 'ExclusiveClusterSetLabel' });
    expect(sets.g.spec?.clusterSelector).toEqual({ selectorType: 'LabelSelector', labelSelector: {} });
  });

  it('a deleted default set comes back, and an edited global selector is rolled back', async () => {
    await waitFor(() => admin.clusterSets.get(defaultClusterSetName), 'default set');
    const before = await admin.clusterSets.get(defaultClusterSetName);
    await admin.clusterSets.delete(defaultClusterSetName);
    await waitFor(
      async () => {
        const now = await admin.clusterSets.get(defaultClusterSetName);
        return now && now.metadata.uid !== before?.metadata.uid;
      },
      'default set recreated',
      30_000,
    );

    await admin.clusterSets.patchMerge(globalClusterSetName, {
      spec: { clusterSelector: { labelSelector: { matchLabels: { only: 'these' } } } },
    });
    await waitFor(
      async () => {
        const g = await admin.clusterSets.get(globalClusterSetName);
        return JSON.stringify(g?.spec?.clusterSelector?.labelSelector) === '{}';
      },
      'global selector rolled back',
      30_000,
    );
  });
});

describe('membership', () => {
  it('a cluster without a set label joins default; a labelled one keeps its set', async () => {
    const loose = await createBareCluster(cleanups);
    const placed = await createBareCluster(cleanups, { [clusterSetLabel]: 'elsewhere' });
    await waitFor(
      async () =>
        (await admin.clusters.get(loose))?.metadata.labels?.[clusterSetLabel] === defaultClusterSetName,
      'default set label on the unlabelled cluster',
    );
    expect((await admin.clusters.get(placed))?.metadata.labels?.[clusterSetLabel]).toBe('elsewhere');
    await waitFor(
      async () => (await setCondition(globalClusterSetName, ClusterSetCondition.Empty))?.status === 'False',
      'global set not empty',
    );
  });

  it('ClusterSetEmpty follows the clusters a label set and a selector set hold', async () => {
    const set = await createClusterSet(cleanups);
    const selectorSet = await createClusterSet(cleanups, {
      clusterSelector: { selectorType: 'LabelSelector', labelSelector: { matchLabels: { tier: set } } },
    });
    for (const name of [set, selectorSet]) {
      const empty = await waitFor(() => setCondition(name, ClusterSetCondition.Empty), `${name} condition`);
      expect(empty).toMatchObject({
        status: 'True',
        reason: 'NoClusterMatched',
        message: 'No ManagedCluster selected',
      });
    }

    const cluster = await createBareCluster(cleanups, { [clusterSetLabel]: set, tier: set });
    for (const name of [set, selectorSet]) {
      const selected = await waitFor(async () => {
        const c = await setCondition(name, ClusterSetCondition.Empty);
        return c?.status === 'False' ? c : undefined;
      }, `${name} has the cluster`);
      expect(selected).toMatchObject({ reason: 'ClustersSelected', message: '1 ManagedClusters selected' });
    }

    // Moving the cluster out empties both sets again.
    await admin.clusters.patchMerge(cluster, {
      metadata: { labels: { [clusterSetLabel]: 'other', tier: null } },
    });
    for (const name of [set, selectorSet]) {
      await waitFor(
        async () => (await setCondition(name, ClusterSetCondition.Empty))?.reason === 'NoClusterMatched',
        `${name} empty again`,
      );
    }
  });
});

describe('bindings', () => {
  it('a binding is Bound only while its set exists', async () => {
    const namespace = await createNamespace(cleanups);
    const setName = uniqueName('bound');
    await admin.bindings.create({ metadata: { name: setName, namespace }, spec: { clusterSet: setName } });
    const missing = await waitFor(() => bindingCondition(namespace, setName, 'Bound'), 'Bound condition');
    expect(missing).toMatchObject({ status: 'False', reason: 'ClusterSetNotFound' });

    cleanups.add(() => admin.clusterSets.delete(setName, undefined, { ignoreNotFound: true }));
    await admin.clusterSets.create({ metadata: { name: setName } });
    const bound = await waitFor(async () => {
      const c = await bindingCondition(namespace, setName, 'Bound');
      return c?.status === 'True' ? c : undefined;
    }, 'binding bound');
    expect(bound.reason).toBe('ClusterSetBound');

    await admin.clusterSets.delete(setName);
    await waitFor(
      async () => (await bindingCondition(namespace, setName, 'Bound'))?.status === 'False',
      'binding unbound after the set went',
    );
  });
});

describe('binding admission', () => {
  beforeAll(async () => {
    fileCleanups.add(async () => {
      for (const obj of placementAdmissionObjects().reverse()) {
        const [group, version] = (obj.apiVersion ?? '').split('/');
        await new ResourceClient(hub, {
          group: group ?? '',
          version: version ?? '',
          plural:
            obj.kind === 'ValidatingAdmissionPolicy'
              ? 'validatingadmissionpolicies'
              : 'validatingadmissionpolicybindings',
          kind: obj.kind ?? '',
          namespaced: false,
        }).delete(obj.metadata?.name ?? '', undefined, { ignoreNotFound: true });
      }
    });
    await installPlacementAdmission(hub);
  });

  it("refuses a binding whose name is not its set's", async () => {
    const namespace = await createNamespace(cleanups);
    await expect(
      admin.bindings.create({ metadata: { name: 'one', namespace }, spec: { clusterSet: 'another' } }),
    ).rejects.toThrow(bindingNameMessage);
  });

  it('lets only users who may join both sets move a cluster between them', async () => {
    const user = uniqueName('joiner');
    const role = uniqueName('tether-e2e-joiner');
    const [from, to] = [uniqueName('from'), uniqueName('to')];
    cleanups.add(() => rbacAdmin.clusterRoles.delete(role, undefined, { ignoreNotFound: true }));
    cleanups.add(() => rbacAdmin.clusterRoleBindings.delete(role, undefined, { ignoreNotFound: true }));
    const grant = (joinable: string[]) =>
      applyObjects(
        hub,
        [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name: role },
            rules: [
              {
                apiGroups: ['cluster.open-cluster-management.io'],
                resources: ['managedclusters'],
                verbs: ['create', 'get', 'patch'],
              },
              ...(joinable.length > 0
                ? [
                    {
                      apiGroups: ['cluster.open-cluster-management.io'],
                      resources: ['managedclustersets/join'],
                      resourceNames: joinable,
                      verbs: ['create'],
                    },
                  ]
                : []),
            ],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: role },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
          },
        ] as never,
        'tether-e2e',
      );
    await grant([to]);
    const asUser = new ResourceClient<ManagedCluster>(
      await kubeconfigAs({ commonName: user }),
      managedClusterResource,
    );
    const cluster = await createBareCluster(cleanups, { [clusterSetLabel]: from });
    const move = () =>
      asUser.patchMerge(cluster, { metadata: { labels: { [clusterSetLabel]: to } } }, undefined, {
        dryRun: true,
      });
    // May join `to` but not `from`: refused.
    await waitFor(async () => {
      try {
        await move();
        return false;
      } catch (err) {
        return String((err as Error).message).includes('managedclustersets/join');
      }
    }, 'move refused without join on the old set');
    // A new cluster without a set needs nothing; one created into `to` needs join on `to` only.
    await asUser.create({ metadata: { name: uniqueName('free') }, spec: {} }, { dryRun: true });
    await asUser.create(
      { metadata: { name: uniqueName('into'), labels: { [clusterSetLabel]: to } }, spec: {} },
      { dryRun: true },
    );

    await grant([to, from]);
    await waitFor(async () => {
      try {
        await move();
        return true;
      } catch {
        return false;
      }
    }, 'move allowed with join on both sets');
  });

  it('lets only users who may bind the set create a binding', async () => {
    const namespace = await createNamespace(cleanups);
    const user = uniqueName('binder');
    const setName = uniqueName('team');
    const role = uniqueName('tether-e2e-binder');
    cleanups.add(() => rbacAdmin.clusterRoles.delete(role, undefined, { ignoreNotFound: true }));
    cleanups.add(() => rbacAdmin.clusterRoleBindings.delete(role, undefined, { ignoreNotFound: true }));
    const rules = [
      {
        apiGroups: [managedClusterSetBindingResource.group],
        resources: ['managedclustersetbindings'],
        verbs: ['create'],
      },
    ];
    const grant = async (extra: object[]) =>
      applyObjects(
        hub,
        [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name: role },
            rules: [...rules, ...extra],
          },
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: role },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
          },
        ] as never,
        'tether-e2e',
      );
    await grant([]);
    const asUser = new ResourceClient(
      await kubeconfigAs({ commonName: user }),
      managedClusterSetBindingResource,
    );
    const binding = { metadata: { name: setName, namespace }, spec: { clusterSet: setName } };
    // RBAC lets the user create bindings; the policy refuses without bind on the set.
    await waitFor(async () => {
      try {
        await asUser.create(binding as never, { dryRun: true });
        return false;
      } catch (err) {
        return String((err as Error).message).includes('managedclustersets/bind');
      }
    }, 'binding refused without bind');

    await grant([
      {
        apiGroups: ['cluster.open-cluster-management.io'],
        resources: ['managedclustersets/bind'],
        resourceNames: [setName],
        verbs: ['create'],
      },
    ]);
    await waitFor(async () => {
      try {
        await asUser.create(binding as never, { dryRun: true });
        return true;
      } catch {
        return false;
      }
    }, 'binding allowed with bind on the set');
  });
});
