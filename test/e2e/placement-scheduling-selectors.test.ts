// Claim and CEL predicates and LabelSelector cluster sets on a real hub: what the agent reports in
// a ManagedCluster's status (claims, version) and AddOnPlacementScores feed the choice, and a
// change of a claim re-decides.
import { afterEach, describe, it } from 'vitest';
import { startPlacementController } from '../../src/placement/hub/placement-controller.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  Cleanups,
  createBoundSet,
  createClusters,
  createNamespace,
  createPlacement,
  hub,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

function startController(namespace: string): void {
  const controller = startPlacementController({ hubKubeConfig: hub, namespace });
  cleanups.add(() => controller.stop());
}

async function report(cluster: string, claims: Record<string, string>, kubernetes: string): Promise<void> {
  await admin.clusters.patchStatus(cluster, {
    status: {
      clusterClaims: Object.entries(claims).map(([name, value]) => ({ name, value })),
      version: { kubernetes },
    },
  });
}

describe('placement selectors', () => {
  it('a claim selector follows the claims a cluster reports', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const [aws, gcp] = (await createClusters(cleanups, set, 2)) as [string, string];
    await report(aws, { 'platform.open-cluster-management.io': 'AWS' }, 'v1.30.2');
    await report(gcp, { 'platform.open-cluster-management.io': 'GCP' }, 'v1.28.0');
    startController(ns);
    const placement = await createPlacement(ns, {
      predicates: [
        {
          requiredClusterSelector: {
            claimSelector: {
              matchExpressions: [
                { key: 'platform.open-cluster-management.io', operator: 'In', values: ['AWS'] },
              ],
            },
          },
        },
      ],
    });
    await waitForDecisions(ns, placement, [aws]);
    await report(gcp, { 'platform.open-cluster-management.io': 'AWS' }, 'v1.28.0');
    await waitForDecisions(ns, placement, [aws, gcp]);
  });

  it('CEL expressions read the cluster, compare versions and read AddOnPlacementScores', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const [newer, older, scored] = (await createClusters(cleanups, set, 3)) as [string, string, string];
    await report(newer, {}, 'v1.30.2');
    await report(older, {}, 'v1.28.0');
    await report(scored, {}, 'v1.27.0');
    await admin.namespaces.create({ metadata: { name: scored } });
    cleanups.add(() => admin.namespaces.delete(scored, undefined, { ignoreNotFound: true }));
    await admin.scores.create({ metadata: { name: 'resources', namespace: scored } });
    await admin.scores.patchStatus('resources', { status: { scores: [{ name: 'gpu', value: 8 }] } }, scored);
    startController(ns);
    const placement = await createPlacement(ns, {
      predicates: [
        {
          requiredClusterSelector: {
            celSelector: {
              celExpressions: ['managedCluster.status.version.kubernetes.versionIsGreaterThan("v1.29.0")'],
            },
          },
        },
        {
          requiredClusterSelector: {
            celSelector: {
              celExpressions: [
                'managedCluster.scores("resources").exists(s, s.name == "gpu" && s.value > 4)',
              ],
            },
          },
        },
      ],
    });
    await waitForDecisions(ns, placement, [newer, scored]);
    // the score drops: the placement hears of it and lets the cluster go
    await admin.scores.patchStatus('resources', { status: { scores: [{ name: 'gpu', value: 1 }] } }, scored);
    await waitForDecisions(ns, placement, [newer]);
  });

  it('a LabelSelector set holds the clusters its selector matches', async () => {
    const ns = await createNamespace(cleanups);
    const team = uniqueName('team');
    const set = uniqueName('by-label');
    cleanups.add(() => admin.sets.delete(set, undefined, { ignoreNotFound: true }));
    await admin.sets.create({
      metadata: { name: set },
      spec: { clusterSelector: { selectorType: 'LabelSelector', labelSelector: { matchLabels: { team } } } },
    });
    await admin.bindings.create({ metadata: { name: set, namespace: ns }, spec: { clusterSet: set } });
    const other = await createBoundSet(cleanups, await createNamespace(cleanups));
    const mine = await createClusters(cleanups, other, 2, { labels: { team } });
    await createClusters(cleanups, other, 1);
    startController(ns);
    const placement = await createPlacement(ns, {});
    await waitForDecisions(ns, placement, mine);
  });
});
