// A bootstrap-token holder against cluster sets and placement (issue 23, finding 3), with the real
// bootstrap identity (a token of ServiceAccount open-cluster-management/agent-registration-bootstrap):
// it may create its ManagedCluster, unaccepted and without labels, and nothing more — no cluster
// set, no label a Placement could select on — and a Placement never decides a cluster the hub has
// not accepted, whatever it tolerates, so nothing that follows decisions (here a
// ManifestWorkReplicaSet) reaches it.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterSetLabel, defaultClusterSetName, placementLabel } from '../../src/api/index.ts';
import { isForbidden, kubeconfigFromParts } from '../../src/kube/index.ts';
import { createBootstrapToken, ensureBootstrapIdentity } from '../../src/registration/bootstrap.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { configMapManifest, replicaSets, works } from './fixtures/manifestworkreplicaset.ts';
import {
  admin,
  Cleanups,
  createClusterSet,
  createNamespace,
  hub,
  placementClientsFor,
  startTestPlacementHub,
  waitFor,
} from './fixtures/placement.ts';
import { env } from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const unreachableTaint = 'cluster.open-cluster-management.io/unreachable';

/** Placement clients acting as the hub's bootstrap ServiceAccount (what a joining agent holds). */
async function asBootstrapTokenHolder() {
  await ensureBootstrapIdentity(hub);
  const { token } = await createBootstrapToken(hub, 600);
  return placementClientsFor(
    kubeconfigFromParts({
      name: 'bootstrap',
      server: env.hub.apiserverUrl,
      caPem: readFileSync(env.hub.caCertPath, 'utf8'),
      token,
    }),
  );
}

/** The refusal of `write`; fails the test when it was admitted. */
async function refusal(write: Promise<unknown>): Promise<Error> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error('the write was admitted');
  expect(isForbidden(err)).toBe(true);
  return err;
}

function clusterName(prefix: string): string {
  const name = uniqueName(prefix);
  cleanups.add(() => admin.clusters.delete(name, undefined, { ignoreNotFound: true }));
  return name;
}

describe('a bootstrap-token holder and cluster sets', () => {
  it('a bootstrap-token holder cannot create a cluster labelled into a cluster set (non-default and default)', async () => {
    const bootstrap = await asBootstrapTokenHolder();
    const prod = await createClusterSet(cleanups);
    for (const set of [prod, defaultClusterSetName]) {
      const name = clusterName('bs-set');
      const err = await refusal(
        bootstrap.clusters.create({
          metadata: { name, labels: { [clusterSetLabel]: set } },
          spec: { hubAcceptsClient: false },
        }),
      );
      // Two policies refuse it (labels, and the set join when the placement hub installed it);
      // the apiserver evaluates them in no fixed order.
      expect(err.message).toMatch(/may not set labels|managedclustersets\/join/);
      expect(await admin.clusters.get(name)).toBeUndefined();
    }
    // What a joining agent does still goes through: its cluster, unaccepted and unlabelled.
    const joining = clusterName('bs-join');
    await bootstrap.clusters.create({ metadata: { name: joining }, spec: { hubAcceptsClient: false } });
  });

  it('a bootstrap-token holder cannot label its cluster', async () => {
    const bootstrap = await asBootstrapTokenHolder();
    const name = clusterName('bs-label');
    const labelSets: Record<string, string>[] = [
      { env: 'prod' },
      { 'feature.open-cluster-management.io/addon-x': 'available' },
    ];
    for (const labels of labelSets) {
      const err = await refusal(
        bootstrap.clusters.create({ metadata: { name, labels }, spec: { hubAcceptsClient: false } }),
      );
      expect(err.message).toMatch(/may not set labels on ManagedCluster/);
      expect(await admin.clusters.get(name)).toBeUndefined();
    }
    // Annotations are the agent's only under agent.open-cluster-management.io/ (OCM's agent filter).
    const err = await refusal(
      bootstrap.clusters.create({
        metadata: { name, annotations: { 'example.com/owner': 'me' } },
        spec: { hubAcceptsClient: false },
      }),
    );
    expect(err.message).toMatch(/may set only agent\.open-cluster-management\.io/);
    await bootstrap.clusters.create({
      metadata: { name, annotations: { 'agent.open-cluster-management.io/klusterlet-config': 'x' } },
      spec: { hubAcceptsClient: false },
    });
    // Once it exists, it cannot label it either (no update: RBAC, and the policy besides).
    await refusal(bootstrap.clusters.patchMerge(name, { metadata: { labels: { env: 'prod' } } }));
    expect((await admin.clusters.get(name))?.metadata.labels?.['env']).toBeUndefined();
  });

  it('a Placement that tolerates the unreachable taint never decides a cluster the hub has not accepted', async () => {
    const bootstrap = await asBootstrapTokenHolder();
    await startTestPlacementHub(cleanups, { placementControllers: true, clusterProfiles: false });
    const set = await createClusterSet(cleanups);
    const ns = await createNamespace(cleanups, 'bs-place');
    await admin.bindings.create({ metadata: { name: set, namespace: ns }, spec: { clusterSet: set } });

    // An accepted cluster, and one created with a bootstrap token: the hub puts the latter into
    // `default` with its own rights; a hub user who may join both sets moves it into `set`, and the
    // registration hub taints it unreachable (no agent reports). Both have their namespaces (the
    // unaccepted one's left from an earlier life, say), so a work for it could be created.
    const accepted = clusterName('bs-ok');
    await admin.clusters.create({
      metadata: { name: accepted, labels: { [clusterSetLabel]: set } },
      spec: { hubAcceptsClient: true },
    });
    const pending = clusterName('bs-pending');
    await bootstrap.clusters.create({ metadata: { name: pending }, spec: { hubAcceptsClient: false } });
    await waitFor(
      async () =>
        (await admin.clusters.get(pending))?.metadata.labels?.[clusterSetLabel] === defaultClusterSetName,
      'the hub to put the bootstrap-created cluster into the default set',
    );
    await admin.clusters.patchMerge(pending, {
      metadata: { labels: { [clusterSetLabel]: set } },
      spec: { taints: [{ key: unreachableTaint, effect: 'NoSelect', timeAdded: new Date().toISOString() }] },
    });
    for (const name of [accepted, pending]) {
      cleanups.add(() => admin.namespaces.delete(name, undefined, { ignoreNotFound: true }));
      await admin.namespaces.create({ metadata: { name } });
    }

    const placement = 'tolerant';
    await admin.placements.create({
      metadata: { name: placement, namespace: ns },
      spec: { tolerations: [{ key: unreachableTaint, operator: 'Exists' }] },
    });
    const mwrs = uniqueName('bs-mwrs');
    cleanups.add(async () => {
      await replicaSets.delete(mwrs, ns, { ignoreNotFound: true });
      await replicaSets.patchMerge(mwrs, { metadata: { finalizers: null } }, ns).catch(() => undefined);
    });
    await replicaSets.create({
      metadata: { name: mwrs, namespace: ns },
      spec: {
        cascadeDeletionPolicy: 'Background',
        placementRefs: [{ name: placement }],
        manifestWorkTemplate: { workload: { manifests: [configMapManifest(mwrs)] } },
      },
    });

    const decided = async () =>
      (await admin.decisions.list({ namespace: ns, labelSelector: `${placementLabel}=${placement}` })).items
        .flatMap((d) => (d.status?.decisions ?? []).map((c) => c.clusterName))
        .sort();
    // One pass saw both clusters: the accepted one is decided and gets its work, the other neither.
    await waitFor(
      async () => (await works.get(mwrs, accepted)) !== undefined,
      'the work for the accepted cluster',
    );
    expect(await decided()).toEqual([accepted]);
    expect(await works.get(mwrs, pending)).toBeUndefined();

    // A hub admin accepts it: now it is decided, and its work follows.
    await admin.clusters.patchMerge(pending, { spec: { hubAcceptsClient: true } });
    await waitFor(
      async () => (await works.get(mwrs, pending)) !== undefined,
      'the work for the accepted cluster',
    );
    expect(await decided()).toEqual([accepted, pending].sort());

    // It loses acceptance: it leaves the decisions, and its work goes.
    await admin.clusters.patchMerge(pending, { spec: { hubAcceptsClient: false } });
    await waitFor(
      async () => (await works.get(mwrs, pending)) === undefined,
      'the work of the unaccepted cluster to go',
    );
    expect(await decided()).toEqual([accepted]);
  });
});
