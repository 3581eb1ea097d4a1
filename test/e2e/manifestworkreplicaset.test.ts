// ManifestWorkReplicaSet on a real hub: PlacementDecisions → one ManifestWork per decided cluster
// with OCM's name, labels and the template; a cluster leaving the decision loses its work; status
// summary and conditions as OCM writes them; Progressive waits for Available before the next
// cluster; deleting the set deletes its works (finalizer); a missing Placement is reported.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ManifestWorkReplicaSet,
  ManifestWorkReplicaSetCondition,
  manifestWorkReplicaSetFinalizer,
  manifestWorkReplicaSetLabel,
  manifestWorkReplicaSetPlacementLabel,
} from '../../src/api/index.ts';
import { findCondition } from '../../src/kube/index.ts';
import {
  Cleanups,
  clustersWithWork,
  configMapManifest,
  createClusterNamespaces,
  createNamespace,
  createPlacement,
  replicaSets,
  reportWork,
  sameList,
  setDecisions,
  startTestController,
  uniqueName,
  waitFor,
  works,
} from './fixtures/manifestworkreplicaset.ts';

const cleanups = new Cleanups();
let ns: string;
let clusters: string[];

beforeAll(async () => {
  await startTestController(cleanups);
  ns = await createNamespace(cleanups, 'mwrs');
  clusters = await createClusterNamespaces(cleanups, 3);
});
afterAll(() => cleanups.run());

async function createReplicaSet(
  spec: Partial<ManifestWorkReplicaSet['spec']> & {
    placementRefs: ManifestWorkReplicaSet['spec']['placementRefs'];
  },
) {
  const name = uniqueName('mwrs');
  cleanups.add(async () => {
    await replicaSets.delete(name, ns, { ignoreNotFound: true });
    // Should the controller be gone already, nothing else would release it.
    await replicaSets.patchMerge(name, { metadata: { finalizers: null } }, ns).catch(() => undefined);
  });
  await replicaSets.create({
    metadata: { name, namespace: ns, labels: { app: 'demo' } },
    spec: {
      cascadeDeletionPolicy: 'Background',
      manifestWorkTemplate: { workload: { manifests: [configMapManifest(name)] } },
      ...spec,
    },
  });
  return name;
}

const condition = async (name: string, type: string) =>
  findCondition((await replicaSets.get(name, ns))?.status?.conditions, type);

describe('ManifestWorkReplicaSet', () => {
  it('creates one work per decided cluster and deletes the work of a cluster that leaves the decision', async () => {
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, clusters);
    const name = await createReplicaSet({ placementRefs: [{ name: placement }] });

    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), clusters),
      'a work in every decided cluster',
    );
    const work = await works.get(name, clusters[0] ?? '');
    expect(work?.metadata.labels).toMatchObject({
      app: 'demo',
      [manifestWorkReplicaSetLabel]: `${ns}.${name}`,
      [manifestWorkReplicaSetPlacementLabel]: placement,
    });
    expect(work?.spec.workload?.manifests).toEqual([configMapManifest(name)]);
    expect((await replicaSets.get(name, ns))?.metadata.finalizers).toContain(manifestWorkReplicaSetFinalizer);
    const verified = await waitFor(async () => {
      const c = await condition(name, ManifestWorkReplicaSetCondition.PlacementVerified);
      return c?.reason === 'AsExpected' ? c : undefined;
    }, 'PlacementVerified AsExpected');
    expect(verified.status).toBe('True');
    const status = (await replicaSets.get(name, ns))?.status;
    expect(status?.summary).toMatchObject({ total: 3, applied: 0, available: 0 });
    expect(status?.placementSummary).toEqual([
      { name: placement, availableDecisionGroups: '1 (3 / 3 clusters applied)', summary: { total: 3 } },
    ]);
    // Nothing is Available yet: the rollout is not complete and the works are not as expected.
    expect((await condition(name, ManifestWorkReplicaSetCondition.PlacementRolledOut))?.reason).toBe(
      'Progressing',
    );
    expect((await condition(name, ManifestWorkReplicaSetCondition.ManifestworkApplied))?.reason).toBe(
      'NotAsExpected',
    );

    const [leaving, ...staying] = clusters;
    await setDecisions(ns, placement, staying);
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), staying),
      'the leaving cluster lost its work',
    );
    expect(leaving && (await works.get(name, leaving))).toBeUndefined();
    await waitFor(
      async () => (await replicaSets.get(name, ns))?.status?.summary?.total === 2,
      'summary.total 2',
    );

    for (const c of staying) await reportWork(c, name, { available: true });
    await waitFor(
      async () =>
        (await condition(name, ManifestWorkReplicaSetCondition.ManifestworkApplied))?.reason === 'AsExpected',
      'ManifestworkApplied AsExpected once every work is Available',
    );
    expect((await condition(name, ManifestWorkReplicaSetCondition.PlacementRolledOut))?.status).toBe('True');
    expect((await replicaSets.get(name, ns))?.status?.summary).toMatchObject({
      total: 2,
      applied: 2,
      available: 2,
    });

    // Steady: a set with nothing to do writes nothing.
    const before = (await replicaSets.get(name, ns))?.metadata.resourceVersion;
    const workVersion = (await works.get(name, staying[0] ?? ''))?.metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await replicaSets.get(name, ns))?.metadata.resourceVersion).toBe(before);
    expect((await works.get(name, staying[0] ?? ''))?.metadata.resourceVersion).toBe(workVersion);
  });

  it('Progressive with maxConcurrency 1 waits for each cluster to turn Available', async () => {
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, clusters);
    const name = await createReplicaSet({
      placementRefs: [
        { name: placement, rolloutStrategy: { type: 'Progressive', progressive: { maxConcurrency: 1 } } },
      ],
    });
    const [first, second, third] = clusters as [string, string, string];

    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), [first]),
      'the first cluster only',
    );
    // Applied but not Available: the rollout holds.
    await reportWork(first, name, { available: false });
    await waitFor(
      async () => (await replicaSets.get(name, ns))?.status?.summary?.applied === 1,
      'the first work counted as applied',
    );
    expect(await clustersWithWork(name, clusters)).toEqual([first]);

    await reportWork(first, name, { available: true });
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), [first, second]),
      'the second cluster after the first is Available',
    );
    await reportWork(second, name, { available: true });
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), clusters),
      'the third cluster',
    );
    expect((await condition(name, ManifestWorkReplicaSetCondition.PlacementRolledOut))?.reason).toBe(
      'Progressing',
    );
    await reportWork(third, name, { available: true });
    await waitFor(
      async () =>
        (await condition(name, ManifestWorkReplicaSetCondition.PlacementRolledOut))?.reason === 'Complete',
      'PlacementRolledOut Complete',
    );
  });

  it('deleting the set deletes its works, and a missing Placement is reported', async () => {
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, clusters.slice(0, 2));
    const name = await createReplicaSet({ placementRefs: [{ name: placement }] });
    await waitFor(async () => (await clustersWithWork(name, clusters)).length === 2, 'two works');
    await replicaSets.delete(name, ns);
    await waitFor(async () => !(await replicaSets.get(name, ns)), 'the set is gone (finalizer released)');
    expect(await clustersWithWork(name, clusters)).toEqual([]);

    const orphan = await createReplicaSet({ placementRefs: [{ name: 'no-such-placement' }] });
    const c = await waitFor(async () => {
      const found = await condition(orphan, ManifestWorkReplicaSetCondition.PlacementVerified);
      return found?.reason === 'PlacementDecisionNotFound' ? found : undefined;
    }, 'PlacementDecisionNotFound');
    expect(c.status).toBe('False');
  });
});
