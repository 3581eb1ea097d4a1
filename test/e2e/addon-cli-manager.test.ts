// `tether addon enable|disable` with the hub's add-on manager and placement scheduler running on
// the real hub: enable --placement installs the addon on exactly the clusters the Placement
// selects, a cluster enabled by hand with --clusters sits next to them, `get addon` lists all of
// them, disable --placement removes the ones the manager installed and keeps the hand-made one,
// and disable --all-clusters removes that too.
import { afterEach, describe, expect, it } from 'vitest';
import { tether } from './fixtures/addon-cli.ts';
import {
  addonClusters,
  createAddon,
  createClusterNamespaces,
  startControllers,
} from './fixtures/addon-install.ts';
import {
  admin,
  Cleanups,
  createBoundSet,
  createClusters,
  createNamespace,
  createPlacement,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

describe('tether addon with the hub add-on manager', () => {
  it('enable/disable --placement install and remove by the Placement; --clusters adds a hand-made one that stays', async () => {
    const ns = await createNamespace(cleanups, 'addon-cli');
    const set = await createBoundSet(cleanups, ns);
    const clusters = await createClusters(cleanups, set, 3, { labels: { tier: 'bronze' } });
    const [c0, c1, c2] = clusters as [string, string, string];
    for (const c of [c0, c1]) await admin.clusters.patchMerge(c, { metadata: { labels: { tier: 'gold' } } });
    await createClusterNamespaces(cleanups, clusters);
    const placement = await createPlacement(ns, {
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: 'gold' } } } }],
    });
    await startControllers(cleanups, ns);
    await waitForDecisions(ns, placement, [c0, c1]);
    const addon = await createAddon(cleanups, {});

    const enabled = await tether(['addon', 'enable', '--names', addon, '--placement', `${ns}/${placement}`]);
    expect(enabled).toMatchObject({ code: 0, stderr: '' });
    await waitFor(
      async () => (await addonClusters(addon)).join() === [c0, c1].join() || undefined,
      `the manager to install ${addon} on ${c0} and ${c1}`,
    );

    const byHand = await tether(['addon', 'enable', '--names', addon, '--clusters', c2]);
    expect(byHand.stdout).toContain(`managedclusteraddon ${c2}/${addon} created`);
    const listed = await tether(['get', 'addon', addon]);
    expect(
      listed.stdout
        .split('\n')
        .slice(1)
        .filter(Boolean)
        .map((l) => l.split(/\s{3,}/).slice(0, 2)),
    ).toEqual([c0, c1, c2].map((c) => [c, addon]));

    const disabled = await tether([
      'addon',
      'disable',
      '--names',
      addon,
      '--placement',
      `${ns}/${placement}`,
    ]);
    expect(disabled.stdout).toContain(
      `clustermanagementaddon ${addon} updated: placement ${ns}/${placement} removed`,
    );
    await waitFor(
      async () => (await addonClusters(addon)).join() === c2 || undefined,
      `the manager to remove ${addon} from ${c0} and ${c1}, keeping ${c2}`,
    );

    const all = await tether(['addon', 'disable', '--names', addon, '--all-clusters']);
    expect(all.stdout).toBe(`managedclusteraddon ${c2}/${addon} deleted\n`);
    await waitFor(
      async () => (await addonClusters(addon)).length === 0 || undefined,
      `${addon} gone everywhere`,
    );
  });
});
