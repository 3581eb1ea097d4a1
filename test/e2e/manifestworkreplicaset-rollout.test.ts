// ManifestWorkReplicaSet rollouts on a real hub: ProgressivePerGroup goes decision group by group;
// a template change rolls out progressively (a cluster gets it only after the previous one is
// Available again); a placementRef dropped from the spec takes its works along; with
// cascadeDeletionPolicy Foreground the set stays until its works are really gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManifestWorkReplicaSet, manifestWorkReplicaSetFinalizer } from '../../src/api/index.ts';
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
  ns = await createNamespace(cleanups, 'mwrsr');
  clusters = await createClusterNamespaces(cleanups, 3);
});
afterAll(() => cleanups.run());

async function createReplicaSet(
  spec: Partial<ManifestWorkReplicaSet['spec']> & Pick<ManifestWorkReplicaSet['spec'], 'placementRefs'>,
) {
  const name = uniqueName('mwrs');
  cleanups.add(async () => {
    await replicaSets.delete(name, ns, { ignoreNotFound: true });
    await replicaSets.patchMerge(name, { metadata: { finalizers: null } }, ns).catch(() => undefined);
  });
  await replicaSets.create({
    metadata: { name, namespace: ns },
    spec: {
      cascadeDeletionPolicy: 'Background',
      manifestWorkTemplate: { workload: { manifests: [configMapManifest(name, { value: 'one' })] } },
      ...spec,
    },
  });
  return name;
}

const valueIn = async (name: string, cluster: string) =>
  (
    (await works.get(name, cluster))?.spec.workload?.manifests?.[0] as
      | { data?: { value?: string } }
      | undefined
  )?.data?.value;

describe('ManifestWorkReplicaSet rollout', () => {
  it('ProgressivePerGroup rolls out one decision group after the other', async () => {
    const [c1, c2, c3] = clusters as [string, string, string];
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, [c1], 0, 'canary');
    await setDecisions(ns, placement, [c2, c3], 1, 'prod');
    const name = await createReplicaSet({
      placementRefs: [{ name: placement, rolloutStrategy: { type: 'ProgressivePerGroup' } }],
    });

    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), [c1]),
      'the canary group first',
    );
    await waitFor(
      async () =>
        (await replicaSets.get(name, ns))?.status?.placementSummary?.[0]?.availableDecisionGroups ===
        '2 (1 / 3 clusters applied)',
      'placementSummary counts both groups',
    );
    await reportWork(c1, name, { available: true });
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), clusters),
      'then the prod group',
    );
  });

  it('a template change reaches the next cluster only after the previous is Available with it', async () => {
    const [c1, c2] = clusters as [string, string];
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, [c1, c2]);
    const name = await createReplicaSet({
      placementRefs: [
        { name: placement, rolloutStrategy: { type: 'Progressive', progressive: { maxConcurrency: 1 } } },
      ],
    });
    await waitFor(async () => (await works.get(name, c1)) !== undefined, 'the first work');
    await reportWork(c1, name, { available: true });
    await waitFor(async () => (await works.get(name, c2)) !== undefined, 'the second work');
    await reportWork(c2, name, { available: true });

    await replicaSets.patchMerge(
      name,
      {
        spec: {
          manifestWorkTemplate: { workload: { manifests: [configMapManifest(name, { value: 'two' })] } },
        },
      },
      ns,
    );
    await waitFor(async () => (await valueIn(name, c1)) === 'two', 'the first cluster gets the new template');
    // The first cluster's agent has not reported the new generation yet: the second one waits.
    await waitFor(
      async () =>
        (await replicaSets.get(name, ns))?.status?.conditions?.some(
          (c) => c.type === 'PlacementRolledOut' && c.reason === 'Progressing',
        ),
      'PlacementRolledOut Progressing during the update',
    );
    expect(await valueIn(name, c2)).toBe('one');
    await reportWork(c1, name, { available: true });
    await waitFor(
      async () => (await valueIn(name, c2)) === 'two',
      'the second cluster after the first is Available again',
    );
  });

  it('dropping a placementRef deletes its works', async () => {
    const [c1, c2] = clusters as [string, string];
    const a = await createPlacement(cleanups, ns);
    const b = await createPlacement(cleanups, ns);
    await setDecisions(ns, a, [c1]);
    await setDecisions(ns, b, [c2]);
    const name = await createReplicaSet({ placementRefs: [{ name: a }, { name: b }] });
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), [c1, c2]),
      'works of both placements',
    );
    await replicaSets.patchMerge(name, { spec: { placementRefs: [{ name: a }] } }, ns);
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), [c1]),
      'only the remaining placement keeps its work',
    );
  });

  it('a cluster two placementRefs decide gets one work, from the first ref, and it stays put', async () => {
    const [c1, c2] = clusters as [string, string];
    const a = await createPlacement(cleanups, ns);
    const b = await createPlacement(cleanups, ns);
    await setDecisions(ns, a, [c1]);
    await setDecisions(ns, b, [c1, c2]);
    const name = await createReplicaSet({ placementRefs: [{ name: a }, { name: b }] });
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), [c1, c2]),
      'one work per cluster',
    );
    await waitFor(
      async () => (await replicaSets.get(name, ns))?.status?.summary?.total === 2,
      'summary.total 2',
    );
    const placementOf = async (cluster: string) =>
      (await works.get(name, cluster))?.metadata.labels?.['work.open-cluster-management.io/placementname'];
    expect(await placementOf(c1)).toBe(a);
    expect(await placementOf(c2)).toBe(b);
    const version = (await works.get(name, c1))?.metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 1000));
    expect((await works.get(name, c1))?.metadata.resourceVersion).toBe(version);
  });

  it('Foreground deletion keeps the set until its works are gone', async () => {
    const [c1] = clusters as [string];
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, [c1]);
    const name = await createReplicaSet({
      placementRefs: [{ name: placement }],
      cascadeDeletionPolicy: 'Foreground',
    });
    await waitFor(async () => (await works.get(name, c1)) !== undefined, 'the work');
    // As an agent would: a finalizer holds the work until what it applied is removed.
    const agentFinalizer = 'e2e.tether.dev/agent-cleanup';
    await works.patchMerge(name, { metadata: { finalizers: [agentFinalizer] } }, c1);
    cleanups.add(() => works.patchMerge(name, { metadata: { finalizers: null } }, c1).catch(() => undefined));

    await replicaSets.delete(name, ns);
    await waitFor(
      async () => (await works.get(name, c1))?.metadata.deletionTimestamp !== undefined,
      'the work is being deleted',
    );
    const held = await replicaSets.get(name, ns);
    expect(held?.metadata.deletionTimestamp).toBeDefined();
    expect(held?.metadata.finalizers).toContain(manifestWorkReplicaSetFinalizer);

    await works.patchMerge(name, { metadata: { finalizers: null } }, c1);
    await waitFor(async () => !(await replicaSets.get(name, ns)), 'the set is gone once its work is');
  });
});
