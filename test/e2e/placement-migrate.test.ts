// The seed's "migrate workload" scenario on the real hub: the registration hub (its lease watchdog
// and taint reconciler) runs next to the placement hub (cluster sets, scheduler, ManifestWorkReplicaSet
// controller). Two clusters are kept alive by a stand-in agent here (lease renewed, Available True,
// as the registration agent does); when one's lease stops, the hub marks it Unknown and taints it
// unreachable, the Placement's toleration runs out after tolerationSeconds, the decision moves to
// the other cluster and the ManifestWork follows: created there, deleted from the first.
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterTaint,
  managedClusterLeaseName,
} from '../../src/api/index.ts';
import { clusterSetLabel } from '../../src/api/placement.ts';
import { findCondition, formatMicroTime } from '../../src/kube/index.ts';
import { startPlacementHub } from '../../src/placement/hub/index.ts';
import { setClusterConditions } from '../../src/registration/hub/context.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { configMapManifest, replicaSets, works } from './fixtures/manifestworkreplicaset.ts';
import {
  admin,
  Cleanups,
  createBoundSet,
  createNamespace,
  createPlacement,
  decidedClusters,
  hub,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';
import { createCluster, admin as registrationAdmin, startScopedHub } from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** Each cluster's lease duration; the hub marks a cluster Unknown after one duration without renewal. */
const leaseDurationSeconds = 3;
const tolerationSeconds = 4;

/**
 * What the registration agent does for liveness, for `cluster`: renew its lease and keep Available
 * True, every half second until stopped (stopped by `cleanups` too).
 */
function standInAgent(cluster: string): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        await registrationAdmin.leases.patchMerge(
          managedClusterLeaseName,
          { spec: { renewTime: formatMicroTime(new Date()) } },
          cluster,
        );
        await setClusterConditions(registrationAdmin.clusters, cluster, [
          {
            type: ManagedClusterCondition.Available,
            status: 'True',
            reason: 'ManagedClusterAvailable',
            message: 'Managed cluster is available',
          },
        ]);
      } catch {
        // the lease may not exist yet (the hub creates it on accept): try again on the next beat
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const agent = {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
  cleanups.add(() => agent.stop());
  return agent;
}

/** A cluster the registration hub of `scope` accepts, in `set`, with a short lease. */
async function createAcceptedCluster(scope: string, set: string): Promise<string> {
  const name = await createCluster(cleanups, scope, { hubAcceptsClient: true, leaseDurationSeconds });
  await admin.clusters.patchMerge(name, { metadata: { labels: { [clusterSetLabel]: set } } });
  return name;
}

const taintOf = async (cluster: string, key: string) =>
  ((await admin.clusters.get(cluster)) as ManagedCluster | undefined)?.spec?.taints?.find(
    (t) => t.key === key,
  );

const isAvailableUntainted = async (cluster: string) => {
  const c = (await admin.clusters.get(cluster)) as ManagedCluster | undefined;
  const available = findCondition(c?.status?.conditions, ManagedClusterCondition.Available);
  return available?.status === 'True' && (c?.spec?.taints ?? []).length === 0;
};

async function startHubs(): Promise<string> {
  const scope = uniqueName('migrate');
  await startScopedHub(cleanups, scope, { leaseGraceFactor: 1 });
  const placementHub = await startPlacementHub({
    hubKubeConfig: hub,
    leaderElection: false,
    installAdmission: false,
  });
  cleanups.add(() => placementHub.stop());
  return scope;
}

describe('placement: migrate workload', () => {
  it('a cluster whose lease stops is dropped once its toleration expires, and its ManifestWork moves to the other cluster', async () => {
    const scope = await startHubs();
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const clusters = [await createAcceptedCluster(scope, set), await createAcceptedCluster(scope, set)];
    const agents = new Map(clusters.map((c) => [c, standInAgent(c)]));
    await waitFor(
      async () =>
        (await isAvailableUntainted(clusters[0] as string)) && isAvailableUntainted(clusters[1] as string),
      'both clusters Available and untainted',
    );

    const placement = await createPlacement(ns, {
      numberOfClusters: 1,
      tolerations: [{ key: ManagedClusterTaint.Unreachable, operator: 'Exists', tolerationSeconds }],
    });
    const [first] = await waitFor(async () => {
      const got = await decidedClusters(ns, placement);
      return got.length === 1 ? got : undefined;
    }, 'one cluster decided');
    const other = clusters.find((c) => c !== first) as string;
    const name = uniqueName('mwrs');
    cleanups.add(async () => {
      await replicaSets.delete(name, ns, { ignoreNotFound: true });
      await replicaSets.patchMerge(name, { metadata: { finalizers: null } }, ns).catch(() => undefined);
    });
    await replicaSets.create({
      metadata: { name, namespace: ns },
      spec: {
        cascadeDeletionPolicy: 'Background',
        placementRefs: [{ name: placement }],
        manifestWorkTemplate: { workload: { manifests: [configMapManifest(name)] } },
      },
    });
    await waitFor(() => works.get(name, first as string), `ManifestWork ${name} on ${first}`);
    expect(await works.get(name, other)).toBeUndefined();

    // the first cluster's agent goes away: no more renewals
    await agents.get(first as string)?.stop();
    const taint = await waitFor(
      () => taintOf(first as string, ManagedClusterTaint.Unreachable),
      `${first} tainted unreachable`,
      30_000,
    );
    expect(taint.effect).toBe('NoSelect');
    expect(
      findCondition(
        (await admin.clusters.get(first as string))?.status?.conditions,
        'ManagedClusterConditionAvailable',
      )?.status,
    ).toBe('Unknown');

    await waitForDecisions(ns, placement, [other]);
    const movedAt = Date.now();
    // tolerated until timeAdded + tolerationSeconds (timeAdded has whole seconds: allow one)
    expect(movedAt - Date.parse(taint.timeAdded as string)).toBeGreaterThanOrEqual(
      (tolerationSeconds - 1) * 1000,
    );
    await waitFor(() => works.get(name, other), `ManifestWork ${name} created on ${other}`);
    await waitFor(
      async () => !(await works.get(name, first as string)),
      `ManifestWork ${name} deleted from ${first}`,
    );
  });

  it('a cluster the hub taints unreachable is avoided unless the Placement tolerates it', async () => {
    const scope = await startHubs();
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const live = await createAcceptedCluster(scope, set);
    const silent = await createAcceptedCluster(scope, set);
    standInAgent(live);
    await waitFor(() => isAvailableUntainted(live), `${live} Available and untainted`);
    // no agent ever reports for `silent`: the hub keeps it unreachable
    await waitFor(() => taintOf(silent, ManagedClusterTaint.Unreachable), `${silent} tainted unreachable`);

    const plain = await createPlacement(ns, {}, 'plain');
    const tolerant = await createPlacement(
      ns,
      { tolerations: [{ key: ManagedClusterTaint.Unreachable, operator: 'Exists' }] },
      'tolerant',
    );
    await waitForDecisions(ns, tolerant, [live, silent]);
    await waitForDecisions(ns, plain, [live]);
  });
});
