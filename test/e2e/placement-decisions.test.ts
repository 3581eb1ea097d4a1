// How a Placement's choice is published on a real hub: more than 100 clusters split into
// PlacementDecisions of at most 100, named, labelled and owned as OCM does; decision groups; the
// status groups and events; and the decisions going away with their Placement.
import { afterEach, describe, expect, it } from 'vitest';
import { decisionGroupIndexLabel, decisionGroupNameLabel, placementLabel } from '../../src/api/placement.ts';
import { startPlacementController } from '../../src/placement/hub/placement-controller.ts';
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

function startController(namespace: string): void {
  const controller = startPlacementController({ hubKubeConfig: hub, namespace });
  cleanups.add(() => controller.stop());
}

describe('placement decisions', () => {
  it('120 selected clusters split into two PlacementDecisions owned by the Placement', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const clusters = await createClusters(cleanups, set, 120);
    startController(ns);
    const placement = await createPlacement(ns, {});
    await waitForDecisions(ns, placement, clusters);

    const decisions = await decisionsOf(ns, placement);
    expect(decisions.map((d) => [d.metadata.name, d.status?.decisions.length])).toEqual([
      [`${placement}-decision-1`, 100],
      [`${placement}-decision-2`, 20],
    ]);
    const owner = await admin.placements.get(placement, ns);
    for (const d of decisions) {
      expect(d.metadata.labels).toMatchObject({
        [placementLabel]: placement,
        [decisionGroupIndexLabel]: '0',
        [decisionGroupNameLabel]: '',
      });
      expect(d.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'cluster.open-cluster-management.io/v1beta1',
          kind: 'Placement',
          name: placement,
          uid: owner?.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    const status = await waitFor(async () => {
      const p = await admin.placements.get(placement, ns);
      return p?.status?.numberOfSelectedClusters === 120 ? p.status : undefined;
    }, 'status.numberOfSelectedClusters 120');
    expect(status.decisionGroups).toEqual([
      {
        decisionGroupIndex: 0,
        decisionGroupName: '',
        decisions: [`${placement}-decision-1`, `${placement}-decision-2`],
        clusterCount: 120,
      },
    ]);
    const events = await waitFor(async () => {
      const list = await admin.events.list({ namespace: ns });
      const creates = list.items.filter((e) => e.reason === 'DecisionCreate');
      return creates.length === 2 ? creates : undefined;
    }, 'two DecisionCreate events');
    expect(events.every((e) => e.involvedObject?.name === placement)).toBe(true);

    // fewer clusters: the second decision object goes
    await admin.placements.patchMerge(placement, { spec: { numberOfClusters: 50 } }, ns);
    await waitFor(async () => (await decisionsOf(ns, placement)).length === 1, 'one PlacementDecision left');
    expect((await decisionsOf(ns, placement))[0]?.status?.decisions.length).toBe(50);
  });

  it('decision groups: the canary group first, the rest cut by clustersPerDecisionGroup', async () => {
    const ns = await createNamespace(cleanups);
    const set = await createBoundSet(cleanups, ns);
    const canary = await createClusters(cleanups, set, 2, { labels: { canary: 'true' } });
    const rest = await createClusters(cleanups, set, 4);
    startController(ns);
    const placement = await createPlacement(ns, {
      decisionStrategy: {
        groupStrategy: {
          clustersPerDecisionGroup: '50%',
          decisionGroups: [
            {
              groupName: 'canary',
              groupClusterSelector: { labelSelector: { matchLabels: { canary: 'true' } } },
            },
          ],
        },
      },
    });
    await waitForDecisions(ns, placement, [...canary, ...rest]);
    const decisions = await decisionsOf(ns, placement);
    expect(
      decisions.map((d) => [
        d.metadata.name,
        d.metadata.labels?.[decisionGroupIndexLabel],
        d.metadata.labels?.[decisionGroupNameLabel],
        d.status?.decisions.map((c) => c.clusterName),
      ]),
    ).toEqual([
      [`${placement}-decision-1`, '0', 'canary', canary],
      [`${placement}-decision-2`, '1', '', rest.slice(0, 3)],
      [`${placement}-decision-3`, '2', '', rest.slice(3)],
    ]);
    const status = await waitFor(
      async () => (await admin.placements.get(placement, ns))?.status?.decisionGroups,
      'status.decisionGroups',
    );
    expect(status.map((g) => [g.decisionGroupIndex, g.decisionGroupName, g.clusterCount])).toEqual([
      [0, 'canary', 2],
      [1, '', 3],
      [2, '', 1],
    ]);
  });
});
