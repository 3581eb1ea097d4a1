// What the work agent removes, on real control planes: a deleted ManifestWork takes its resources,
// then its AppliedManifestWork, then the hub finalizer (Foreground, the default); Orphan and
// SelectivelyOrphan keep resources (without our ownerReference); a resource held by a finalizer
// keeps both objects until it is really gone; a resource two works share is only disowned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManifestWork } from '../../src/api/index.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import {
  appliedWorks,
  configMap,
  hubHash,
  hubWorks,
  isSettled,
  kinds,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from './fixtures/work.ts';

const configMaps = onManaged(kinds.configMap);
let cluster: WorkCluster;
let ns: string;

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-delete');
  ns = await cluster.managedNamespace('work-delete');
  await cluster.startAgent();
});
afterAll(async () => {
  await cluster?.cleanup();
});

const settled = (w: ManifestWork) => isSettled(w) && w;
const appliedName = (work: string) => `${hubHash}-${work}`;
const ownerUids = (obj: KubeObject | undefined) => (obj?.metadata?.ownerReferences ?? []).map((o) => o.uid);

async function deleteAndWaitGone(work: string): Promise<void> {
  await hubWorks.delete(work, cluster.name);
  await waitFor(`work ${work} and its AppliedManifestWork to be gone`, async () => {
    const [w, a] = await Promise.all([cluster.getWork(work), appliedWorks.get(appliedName(work))]);
    return !w && !a;
  });
}

describe('deleting a ManifestWork', () => {
  it('Foreground (default): resources, then the AppliedManifestWork, then the hub finalizer go', async () => {
    const work = unique('foreground');
    await cluster.createWork(work, [configMap(ns, 'fg-a'), configMap(ns, 'fg-b')]);
    await cluster.waitForWork(work, 'settled', settled);
    expect(await appliedWorks.get(appliedName(work))).toBeDefined();

    await deleteAndWaitGone(work);
    expect(await configMaps.get('fg-a', ns)).toBeUndefined();
    expect(await configMaps.get('fg-b', ns)).toBeUndefined();
  });

  it('Orphan: resources are never owned by the AppliedManifestWork and stay after the work is deleted', async () => {
    const work = unique('orphan');
    await cluster.createWork(work, [configMap(ns, 'orphan-a')], {
      deleteOption: { propagationPolicy: 'Orphan' },
    });
    await cluster.waitForWork(work, 'settled', settled);
    expect(ownerUids(await configMaps.get('orphan-a', ns))).toEqual([]);

    await deleteAndWaitGone(work);
    const kept = await configMaps.get('orphan-a', ns);
    expect(kept).toBeDefined();
    expect(kept?.metadata?.ownerReferences).toBeUndefined();
  });

  it('switching a work to Orphan drops our ownerReference from resources already applied', async () => {
    const work = unique('to-orphan');
    await cluster.createWork(work, [configMap(ns, 'to-orphan')]);
    await cluster.waitForWork(work, 'settled', settled);
    expect(ownerUids(await configMaps.get('to-orphan', ns))).toHaveLength(1);
    await cluster.updateWork(work, [configMap(ns, 'to-orphan')], {
      deleteOption: { propagationPolicy: 'Orphan' },
    });
    await waitFor(
      'the ownerReference to go',
      async () => ownerUids(await configMaps.get('to-orphan', ns)).length === 0,
    );
    await deleteAndWaitGone(work);
    expect(await configMaps.get('to-orphan', ns)).toBeDefined();
  });

  it('SelectivelyOrphan: only resources matching an orphaning rule stay', async () => {
    const work = unique('selective');
    await cluster.createWork(work, [configMap(ns, 'sel-keep'), configMap(ns, 'sel-drop')], {
      deleteOption: {
        propagationPolicy: 'SelectivelyOrphan',
        selectivelyOrphans: {
          orphaningRules: [{ group: '', resource: 'configmaps', namespace: ns, name: 'sel-keep' }],
        },
      },
    });
    await cluster.waitForWork(work, 'settled', settled);
    expect(ownerUids(await configMaps.get('sel-keep', ns))).toEqual([]);
    expect(ownerUids(await configMaps.get('sel-drop', ns))).toHaveLength(1);

    await deleteAndWaitGone(work);
    expect(await configMaps.get('sel-keep', ns)).toBeDefined();
    expect(await configMaps.get('sel-drop', ns)).toBeUndefined();
  });

  it('a resource held by a finalizer keeps the work and its AppliedManifestWork until it is gone', async () => {
    const work = unique('stuck');
    const held = {
      ...configMap(ns, 'held'),
      metadata: { name: 'held', namespace: ns, finalizers: ['e2e.tether.dev/hold'] },
    };
    await cluster.createWork(work, [held, configMap(ns, 'not-held')]);
    await cluster.waitForWork(work, 'settled', settled);

    await hubWorks.delete(work, cluster.name);
    await waitFor('the held ConfigMap to be terminating and the other gone', async () => {
      const h = await configMaps.get('held', ns);
      return Boolean(h?.metadata?.deletionTimestamp) && !(await configMaps.get('not-held', ns));
    });
    // The agent marks the AppliedManifestWork deleted and trims its record in two writes after
    // the ConfigMap went: wait for both rather than read once.
    const applied = await waitFor(
      'the AppliedManifestWork to be deleting and record only the held one',
      async () => {
        const a = await appliedWorks.get(appliedName(work));
        return a?.metadata.deletionTimestamp && a.status?.appliedResources?.length === 1 ? a : undefined;
      },
    );
    expect(applied.status?.appliedResources?.map((r) => r.name)).toEqual(['held']);
    const stillThere = await cluster.getWork(work);
    expect(stillThere?.metadata.deletionTimestamp).toBeTruthy();
    expect(stillThere?.metadata.finalizers).toContain(
      'cluster.open-cluster-management.io/manifest-work-cleanup',
    );

    await configMaps.patchMerge('held', { metadata: { finalizers: null } }, ns);
    await waitFor('work and AppliedManifestWork to be gone', async () => {
      const [w, a] = await Promise.all([cluster.getWork(work), appliedWorks.get(appliedName(work))]);
      return !w && !a;
    });
  });
});

describe('resources shared between works', () => {
  it('removing a shared resource from one work only drops that work’s ownerReference', async () => {
    const a = unique('share-a');
    const b = unique('share-b');
    await cluster.createWork(a, [configMap(ns, 'shared', { from: 'a' }), configMap(ns, 'only-a')]);
    await cluster.waitForWork(a, 'settled', settled);
    await cluster.createWork(b, [configMap(ns, 'shared', { from: 'b' })]);
    await cluster.waitForWork(b, 'settled', settled);
    const [appliedA, appliedB] = await Promise.all([
      appliedWorks.get(appliedName(a)),
      appliedWorks.get(appliedName(b)),
    ]);
    expect(ownerUids(await configMaps.get('shared', ns)).sort()).toEqual(
      [appliedA?.metadata.uid, appliedB?.metadata.uid].sort(),
    );

    await cluster.updateWork(a, [configMap(ns, 'only-a')]);
    await waitFor('work a to disown the shared ConfigMap', async () => {
      const owners = ownerUids(await configMaps.get('shared', ns));
      return owners.length === 1 && owners[0] === appliedB?.metadata.uid;
    });

    await deleteAndWaitGone(b);
    expect(await configMaps.get('shared', ns)).toBeUndefined();
    expect(await configMaps.get('only-a', ns)).toBeDefined();
  });

  it('an AppliedManifestWork deleted on the managed cluster is cleaned up and replaced', async () => {
    const work = unique('amw-deleted');
    await cluster.createWork(work, [configMap(ns, 'amw-deleted')]);
    await cluster.waitForWork(work, 'settled', settled);
    const before = await appliedWorks.get(appliedName(work));
    const cmBefore = await configMaps.get('amw-deleted', ns);

    await appliedWorks.delete(appliedName(work));
    const after = await waitFor('a new AppliedManifestWork', async () => {
      const a = await appliedWorks.get(appliedName(work));
      return a && a.metadata.uid !== before?.metadata.uid && !a.metadata.deletionTimestamp ? a : undefined;
    });
    const cmAfter = await waitFor('the ConfigMap re-applied under the new owner', async () => {
      const cm = await configMaps.get('amw-deleted', ns);
      return cm && ownerUids(cm)[0] === after.metadata.uid ? cm : undefined;
    });
    expect(cmAfter.metadata?.uid).not.toBe(cmBefore?.metadata?.uid);
  });
});
