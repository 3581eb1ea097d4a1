// The hub's add-on manager installs add-ons the way a ClusterManagementAddOn's install strategy
// says, on a real hub with a real placement scheduler: Manual creates nothing; Placements puts a
// ManagedClusterAddOn in exactly the clusters the Placement selects and follows the decisions
// when clusters are relabelled, but never deletes one a user made by hand.
import { afterEach, describe, expect, it } from 'vitest';
import { placementLabel } from '../../src/api/placement.ts';
import {
  addonAdmin,
  addonClusters,
  createAddon,
  placementClusters,
  startControllers,
} from './fixtures/addon-install.ts';
import {
  admin,
  Cleanups,
  createPlacement,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const lifecycle = 'addon.open-cluster-management.io/lifecycle';
const gold = {
  predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: 'gold' } } } }],
};

async function relabel(cluster: string, tier: string): Promise<void> {
  await admin.clusters.patchMerge(cluster, { metadata: { labels: { tier } } });
}

describe('add-on install strategies', () => {
  it('Manual: nothing is created, even with a Placement selecting clusters', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-install', 2, { tier: 'gold' });
    const placement = await createPlacement(ns, gold);
    await startControllers(cleanups, ns);
    await waitForDecisions(ns, placement, clusters);
    const name = await createAddon(cleanups, { installStrategy: { type: 'Manual' } });

    // The manager has seen it once it stamps the lifecycle annotation, as OCM's does.
    await waitFor(
      async () => (await addonAdmin.cmas.get(name))?.metadata.annotations?.[lifecycle] === 'addon-manager',
      'lifecycle annotation addon-manager',
    );
    expect(await addonClusters(name)).toEqual([]);
    // Turn it into Placements and back: only the Placements phase creates anything.
    await addonAdmin.cmas.patchMerge(name, {
      spec: { installStrategy: { type: 'Placements', placements: [{ name: placement, namespace: ns }] } },
    });
    await waitFor(async () => (await addonClusters(name)).length === 2 || undefined, 'two add-ons');
    await waitFor(
      async () => (await addonAdmin.cmas.get(name))?.status?.installProgressions?.length === 1 || undefined,
      'an install progression for the placement',
    );
    await addonAdmin.cmas.patchMerge(name, {
      spec: { installStrategy: { type: 'Manual', placements: null } },
    });
    await waitFor(
      async () => (await addonAdmin.cmas.get(name))?.status?.installProgressions === undefined || undefined,
      'installProgressions cleared for Manual',
    );
    // switching to Manual stops deleting: a cluster leaving the Placement keeps its add-on
    await relabel(clusters[0] as string, 'silver');
    await waitForDecisions(ns, placement, [clusters[1] as string]);
    // Wait for a pass that surely ran after the decision changed: it writes a default config reference.
    await addonAdmin.cmas.patchMerge(name, {
      spec: {
        supportedConfigs: [{ group: 'example.io', resource: 'widgets', defaultConfig: { name: 'w' } }],
      },
    });
    await waitFor(
      async () =>
        (await addonAdmin.cmas.get(name))?.status?.defaultconfigReferences?.length === 1 || undefined,
      'defaultconfigReferences written',
    );
    expect(await addonClusters(name)).toEqual([...clusters].sort());
  });

  it('Placements: add-ons in exactly the selected clusters, following relabels, a hand-made one kept', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-install', 3, { tier: 'bronze' });
    const [c0, c1, c2] = clusters as [string, string, string];
    await relabel(c0, 'gold');
    await relabel(c1, 'gold');
    const placement = await createPlacement(ns, gold);
    await startControllers(cleanups, ns);
    await waitForDecisions(ns, placement, [c0, c1]);
    const name = await createAddon(cleanups, {
      installStrategy: { type: 'Placements', placements: [{ name: placement, namespace: ns }] },
    });

    await waitFor(
      async () => (await addonClusters(name)).join() === [c0, c1].join() || undefined,
      `add-ons in ${c0}, ${c1}`,
    );
    const cma = await addonAdmin.cmas.get(name);
    const created = await addonAdmin.mcas.get(name, c0);
    expect(created?.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'ClusterManagementAddOn',
        name,
        uid: cma?.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    // the install progression of the placement, with OCM's counts
    const progression = await waitFor(async () => {
      const p = (await addonAdmin.cmas.get(name))?.status?.installProgressions?.[0];
      const condition = (p?.['conditions'] as { reason: string; message: string }[] | undefined)?.[0];
      return condition?.reason === 'Completed' ? { p, condition } : undefined;
    }, 'install progression Completed');
    expect(progression.p).toMatchObject({ name: placement, namespace: ns, configReferences: [] });
    expect(progression.condition).toMatchObject({
      status: 'False',
      message: '2/2 completed with no errors, 0 failed 0 timeout.',
    });

    // A user enables the add-on by hand on c2, outside the placement: it is adopted, not deleted.
    await addonAdmin.mcas.create({ metadata: { name, namespace: c2 }, spec: {} });
    await waitFor(
      async () => (await addonAdmin.mcas.get(name, c2))?.metadata.ownerReferences?.length === 1 || undefined,
      'hand-made add-on adopted',
    );
    expect((await addonAdmin.mcas.get(name, c2))?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'ClusterManagementAddOn',
      name,
    });
    expect((await addonAdmin.mcas.get(name, c2))?.metadata.ownerReferences?.[0]?.controller).toBeUndefined();

    // c1 leaves the placement, c2 joins it: c1's add-on goes, c2's hand-made one stays.
    await relabel(c1, 'bronze');
    await relabel(c2, 'gold');
    await waitForDecisions(ns, placement, [c0, c2]);
    await waitFor(
      async () => (await addonClusters(name)).join() === [c0, c2].join() || undefined,
      `add-ons in ${c0}, ${c2}`,
    );

    // c2 leaves again: the add-on the user made stays; c1 comes back and gets a new one.
    await relabel(c2, 'bronze');
    await relabel(c1, 'gold');
    await waitForDecisions(ns, placement, [c0, c1]);
    await waitFor(
      async () => (await addonClusters(name)).join() === [c0, c1, c2].join() || undefined,
      `add-ons in ${c0}, ${c1} and the hand-made one in ${c2}`,
    );
    const decisions = await admin.decisions.list({
      namespace: ns,
      labelSelector: `${placementLabel}=${placement}`,
    });
    expect(
      decisions.items.flatMap((d) => d.status?.decisions.map((x) => x.clusterName) ?? []).sort(),
    ).toEqual([c0, c1]);
  });
});
