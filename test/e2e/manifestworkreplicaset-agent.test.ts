// Deploy to a placement with a real work agent: a ManifestWorkReplicaSet with a Progressive strategy
// → the controller's ManifestWork in the decided cluster → the agent applies it on cluster1 and
// reports Applied / Available / Progressing for the work's generation → the set reads that as OCM
// does (PlacementRolledOut Complete, ManifestworkApplied AsExpected, summary). Deleting the set
// (Foreground) removes the ConfigMap from cluster1 and then the set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManifestWorkReplicaSetCondition } from '../../src/api/index.ts';
import { findCondition } from '../../src/kube/index.ts';
import {
  Cleanups,
  createNamespace,
  createPlacement,
  replicaSets,
  setDecisions,
  startTestController,
  uniqueName,
  waitFor,
  works,
} from './fixtures/manifestworkreplicaset.ts';
import {
  configMap,
  dropFinalizers,
  kinds,
  onManaged,
  setUpWorkCluster,
  type WorkCluster,
} from './fixtures/work.ts';

const cleanups = new Cleanups();
const configMaps = onManaged(kinds.configMap);
let cluster: WorkCluster;
let ns: string;
let managedNs: string;

beforeAll(async () => {
  cluster = await setUpWorkCluster('mwrsa');
  cleanups.add(() => cluster.cleanup());
  managedNs = await cluster.managedNamespace('mwrsa-cm');
  await cluster.startAgent();
  await startTestController(cleanups);
  ns = await createNamespace(cleanups, 'mwrsa');
});
afterAll(() => cleanups.run());

describe('ManifestWorkReplicaSet with a real work agent', () => {
  it('rolls out to the decided cluster, reads the agent status as OCM does, and removes everything on delete', async () => {
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, [cluster.name]);
    const name = uniqueName('mwrsa');
    cleanups.add(async () => {
      await replicaSets.delete(name, ns, { ignoreNotFound: true });
      await dropFinalizers(replicaSets, name, ns);
      await works.delete(name, cluster.name, { ignoreNotFound: true });
      await dropFinalizers(works, name, cluster.name);
    });
    await replicaSets.create({
      metadata: { name, namespace: ns },
      spec: {
        cascadeDeletionPolicy: 'Foreground',
        manifestWorkTemplate: { workload: { manifests: [configMap(managedNs, name, { value: 'one' })] } },
        placementRefs: [
          { name: placement, rolloutStrategy: { type: 'Progressive', progressive: { maxConcurrency: 1 } } },
        ],
      },
    });

    await waitFor(
      async () => (await configMaps.get(name, managedNs))?.metadata !== undefined,
      'the ConfigMap applied on cluster1 by the agent',
      60_000,
    );
    const status = await waitFor(
      async () => {
        const s = (await replicaSets.get(name, ns))?.status;
        const rolledOut = findCondition(s?.conditions, ManifestWorkReplicaSetCondition.PlacementRolledOut);
        const applied = findCondition(s?.conditions, ManifestWorkReplicaSetCondition.ManifestworkApplied);
        return rolledOut?.reason === 'Complete' && applied?.reason === 'AsExpected' ? s : undefined;
      },
      'PlacementRolledOut Complete and ManifestworkApplied AsExpected from the agent status',
      60_000,
    );
    expect(status.summary).toMatchObject({ total: 1, applied: 1, available: 1, degraded: 0, progressing: 0 });
    expect(findCondition(status.conditions, ManifestWorkReplicaSetCondition.PlacementVerified)?.status).toBe(
      'True',
    );

    await replicaSets.delete(name, ns);
    await waitFor(
      async () => !(await configMaps.get(name, managedNs)),
      'the ConfigMap removed from cluster1',
      60_000,
    );
    await waitFor(async () => !(await replicaSets.get(name, ns)), 'the set gone after its work', 60_000);
    expect(await works.get(name, cluster.name)).toBeUndefined();
  });
});
