// The placement controller on a real hub: set + binding + Placement choose the right clusters, and
// the decisions follow label, score and taint changes — a toleration running out drops a cluster
// at that instant — while passes over unchanged inputs write nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { clusterSetLabel, placementLabel } from '../../src/api/placement.ts';
import { findCondition } from '../../src/kube/index.ts';
import {
  type PlacementController,
  startPlacementController,
} from '../../src/placement/hub/placement-controller.ts';
import {
  admin,
  Cleanups,
  createBoundSet,
  createClusters,
  createNamespace,
  createPlacement,
  decisionsOf,
  hub,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

function startController(namespace: string, resyncPeriodMs?: number): PlacementController {
  const controller = startPlacementController({ hubKubeConfig: hub, namespace, resyncPeriodMs });
  cleanups.add(() => controller.stop());
  return controller;
}

describe('placement scheduling', () => {
  it('a Placement chooses from the sets bound to its namespace by its predicate and re-decides on a label change', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const unbound = await createBoundSet(cleanups, await createNamespace(cleanups));
    const [a, b, c] = await createClusters(cleanups, set, 3, { labels: { env: 'prod' } });
    const [dev] = await createClusters(cleanups, set, 1, { labels: { env: 'dev' } });
    await createClusters(cleanups, unbound, 2, { labels: { env: 'prod' } });
    startController(ns);
    const placement = await createPlacement(ns, {
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: 'prod' } } } }],
    });

    await waitForDecisions(ns, placement, [a, b, c] as string[]);
    const status = await waitFor(async () => {
      const p = await admin.placements.get(placement, ns);
      return p?.status?.numberOfSelectedClusters === 3 ? p.status : undefined;
    }, 'status.numberOfSelectedClusters 3');
    expect(findCondition(status.conditions, 'PlacementSatisfied')).toMatchObject({
      status: 'True',
      reason: 'AllDecisionsScheduled',
    });
    expect(findCondition(status.conditions, 'PlacementMisconfigured')).toMatchObject({
      status: 'False',
      reason: 'Succeedconfigured',
    });

    // dev turns prod, a leaves the set: both show up in the decision
    await admin.clusters.patchMerge(dev as string, { metadata: { labels: { env: 'prod' } } });
    await admin.clusters.patchMerge(a as string, { metadata: { labels: { [clusterSetLabel]: unbound } } });
    await waitForDecisions(ns, placement, [b, c, dev] as string[]);
    const reasons = await waitFor(async () => {
      const seen = new Set((await admin.events.list({ namespace: ns })).items.map((e) => e.reason));
      return seen.has('DecisionUpdate') && seen.has('ScoreUpdate') ? seen : undefined;
    }, 'DecisionUpdate and ScoreUpdate events');
    expect(reasons.has('DecisionCreate')).toBe(true);

    // the binding goes: nothing is eligible any more
    await admin.bindings.delete(set, ns);
    await waitForDecisions(ns, placement, []);
    await waitFor(async () => {
      const p = await admin.placements.get(placement, ns);
      return (
        findCondition(p?.status?.conditions, 'PlacementSatisfied')?.reason === 'NoManagedClusterSetBindings'
      );
    }, 'PlacementSatisfied NoManagedClusterSetBindings');
  });

  it('Exact mode with an AddOn score picks the highest scores and follows a score change', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const clusters = (await createClusters(cleanups, set, 3)) as [string, string, string];
    const setScore = async (cluster: string, value: number) => {
      const existing = await admin.scores.get('load', cluster);
      if (!existing) await admin.scores.create({ metadata: { name: 'load', namespace: cluster } });
      await admin.scores.patchStatus('load', { status: { scores: [{ name: 'free', value }] } }, cluster);
    };
    for (const cluster of clusters) {
      await admin.namespaces.create({ metadata: { name: cluster } });
      cleanups.add(() => admin.namespaces.delete(cluster, undefined, { ignoreNotFound: true }));
    }
    await setScore(clusters[0], 10);
    await setScore(clusters[1], 90);
    await setScore(clusters[2], 50);
    startController(ns);
    const placement = await createPlacement(ns, {
      numberOfClusters: 1,
      prioritizerPolicy: {
        mode: 'Exact',
        configurations: [
          { scoreCoordinate: { type: 'AddOn', addOn: { resourceName: 'load', scoreName: 'free' } } },
        ],
      },
    });
    await waitForDecisions(ns, placement, [clusters[1]]);
    await setScore(clusters[0], 100);
    await waitForDecisions(ns, placement, [clusters[0]]);
  });

  it('a tainted cluster is avoided unless tolerated, and dropped when its tolerationSeconds run out', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const [healthy] = await createClusters(cleanups, set, 1);
    const [gpu] = await createClusters(cleanups, set, 1, {
      taints: [{ key: 'gpu', value: 'true', effect: 'NoSelect', timeAdded: new Date().toISOString() }],
    });
    // whole seconds, as the registration hub writes it
    const unreachableAdded = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const [unreachable] = await createClusters(cleanups, set, 1, {
      taints: [
        {
          key: 'cluster.open-cluster-management.io/unreachable',
          effect: 'NoSelect',
          timeAdded: unreachableAdded,
        },
      ],
    });
    startController(ns); // resync at its production period: only requeues and events drive it here
    const plain = await createPlacement(ns, {}, 'plain');
    await waitForDecisions(ns, plain, [healthy as string]);
    const tolerant = await createPlacement(
      ns,
      {
        tolerations: [
          { key: 'gpu', operator: 'Equal', value: 'true' },
          { key: 'cluster.open-cluster-management.io/unreachable', operator: 'Exists', tolerationSeconds: 4 },
        ],
      },
      'tolerant',
    );
    await waitForDecisions(ns, tolerant, [healthy, gpu, unreachable] as string[]);
    // No event changes anything from here: only a pass the controller requeued for the toleration's
    // expiry can drop the cluster, and not before that instant. (Counting passes around the wait
    // raced with that very pass on a loaded machine: it can finish before the count is read.)
    const expiresAt = Date.parse(unreachableAdded) + 4_000;
    await waitForDecisions(ns, tolerant, [healthy, gpu] as string[]);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
  });

  it('passes over unchanged inputs write no decision, status or event', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const clusters = await createClusters(cleanups, set, 3);
    const controller = startController(ns, 500);
    const placement = await createPlacement(ns, { numberOfClusters: 2 });
    await waitForDecisions(ns, placement, clusters.slice(0, 2));
    await waitFor(async () => {
      const p = await admin.placements.get(placement, ns);
      return p?.status?.numberOfSelectedClusters === 2 && controller.isIdle();
    }, 'placement status written and the controller idle');
    const versions = async () => ({
      placement: (await admin.placements.get(placement, ns))?.metadata.resourceVersion,
      decisions: (await decisionsOf(ns, placement)).map((d) => d.metadata.resourceVersion),
      events: (await admin.events.list({ namespace: ns })).items.length,
    });
    const before = await versions();
    const passes = controller.passes;
    // an unrelated label on a member cluster, and the 500 ms resyncs, make the controller look again
    await admin.clusters.patchMerge(clusters[2] as string, { metadata: { labels: { touched: 'yes' } } });
    await waitFor(
      () => controller.passes >= passes + 4 && controller.isIdle(),
      'four more scheduling passes',
    );
    expect(await versions()).toEqual(before);
    const decisions = await decisionsOf(ns, placement);
    expect(decisions.map((d) => d.metadata.labels?.[placementLabel])).toEqual([placement]);
  });
});
