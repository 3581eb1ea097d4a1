// The work agent across its own lifetime and beside other clusters, on real control planes: an
// agent that was down while its work changed catches up when it returns; an AppliedManifestWork
// whose ManifestWork vanished while the agent was away is evicted after the grace period; the
// restricted identity of cluster A gets 403 on cluster B's namespace; and the hub helpers the CLI
// uses create, overwrite, list and delete works.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManifestWork, manifestWorkResource } from '../../src/api/index.ts';
import { isForbidden, ResourceClient } from '../../src/kube/index.ts';
import {
  createManifestWork,
  deleteManifestWork,
  listManifestWorks,
  loadManifests,
} from '../../src/work/hub/index.ts';
import {
  appliedWorks,
  configMap,
  dropFinalizers,
  hubAdmin,
  hubHash,
  hubWorks,
  isSettled,
  kinds,
  manifestWorkFinalizer,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from './fixtures/work.ts';

type ConfigMap = { data?: Record<string, string> };
const configMaps = onManaged<ConfigMap & { metadata?: { uid?: string } }>(kinds.configMap);
let a: WorkCluster;
let b: WorkCluster;
let ns: string;

beforeAll(async () => {
  [a, b] = await Promise.all([setUpWorkCluster('work-life-a'), setUpWorkCluster('work-life-b')]);
  ns = await a.managedNamespace('work-life');
});
afterAll(async () => {
  await b?.cleanup();
  await a?.cleanup();
});

const settled = (w: ManifestWork) => isSettled(w) && w;

describe('an agent that was away', () => {
  it('catches up with every change made to its work while it was down', async () => {
    const agent = await a.startAgent();
    const work = unique('away');
    await a.createWork(work, [configMap(ns, 'away-keep', { v: '1' }), configMap(ns, 'away-drop')]);
    await a.waitForWork(work, 'settled', settled);
    await agent.stop();

    await a.updateWork(work, [configMap(ns, 'away-keep', { v: '2' }), configMap(ns, 'away-new')]);
    expect((await configMaps.get('away-keep', ns))?.data).toEqual({ v: '1' });

    await a.startAgent();
    await a.waitForWork(work, 'generation 2 settled', settled);
    expect((await configMaps.get('away-keep', ns))?.data).toEqual({ v: '2' });
    expect(await configMaps.get('away-new', ns)).toBeDefined();
    await waitFor(
      'the dropped ConfigMap to be deleted',
      async () => !(await configMaps.get('away-drop', ns)),
    );
  });

  it('evicts an AppliedManifestWork whose ManifestWork vanished, after the grace period', async () => {
    const agent = await a.startAgent();
    const work = unique('vanished');
    await a.createWork(work, [configMap(ns, 'vanished-cm')]);
    await a.waitForWork(work, 'settled', settled);
    await agent.stop();
    // Gone from the hub without the agent's clean-up (finalizer removed behind its back).
    await dropFinalizers(hubWorks, work, a.name);
    await hubWorks.delete(work, a.name, { ignoreNotFound: true });
    await waitFor('the work to be gone from the hub', async () => !(await a.getWork(work)));

    const gracePeriodMs = 2000;
    await a.startAgent({ appliedManifestWorkEvictionGracePeriodMs: gracePeriodMs });
    const marked = await waitFor('the eviction to start', async () => {
      const applied = await appliedWorks.get(`${hubHash}-${work}`);
      return applied?.status?.evictionStartTime ? applied : undefined;
    });
    expect(await configMaps.get('vanished-cm', ns)).toBeDefined();
    await waitFor('the AppliedManifestWork and its ConfigMap to be gone', async () => {
      const applied = await appliedWorks.get(`${hubHash}-${work}`);
      return !applied && !(await configMaps.get('vanished-cm', ns));
    });
    expect(Date.now() - Date.parse(marked.status?.evictionStartTime ?? '')).toBeGreaterThanOrEqual(
      gracePeriodMs - 1000,
    );
  });
});

describe('one cluster cannot see another', () => {
  it("cluster A's identity gets 403 on cluster B's works, and its agent leaves them alone", async () => {
    const asA = new ResourceClient<ManifestWork>(a.hubKc, manifestWorkResource);
    await expect(asA.list({ namespace: a.name })).resolves.toBeDefined();
    const workInB = unique('for-b');
    await b.createWork(workInB, [configMap(ns, 'for-b')]);

    // Each attempt runs only when awaited, so no rejection is ever left unhandled.
    const denied: Array<() => Promise<unknown>> = [
      () => asA.list({ namespace: b.name }),
      () => asA.get(workInB, b.name),
      () => asA.create({ metadata: { name: unique('sneaky'), namespace: b.name }, spec: {} }),
      () => asA.list(),
    ];
    for (const attempt of denied) {
      const err = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isForbidden(err)).toBe(true);
    }

    // A's agent runs and applies its own work; B's work gets neither finalizer nor resources.
    await a.startAgent();
    const mine = unique('for-a');
    await a.createWork(mine, [configMap(ns, 'for-a')]);
    await a.waitForWork(mine, 'settled', settled);
    const untouched = await hubWorks.get(workInB, b.name);
    expect(untouched?.metadata.finalizers ?? []).not.toContain(manifestWorkFinalizer);
    expect(await configMaps.get('for-b', ns)).toBeUndefined();
  });
});

describe('hub helpers for the CLI', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tether-work-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('create (and overwrite) a work from files in several clusters, list it, delete it', async () => {
    await a.startAgent();
    writeFileSync(
      join(dir, 'app.yaml'),
      `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  namespace: ${ns}\n  name: cli-sa\n---\n` +
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: ${ns}\n  name: cli-cm\ndata:\n  k: v1\n`,
    );
    const name = unique('cli-work');
    const manifests = loadManifests(dir);
    expect(manifests.map((m) => m.kind)).toEqual(['ServiceAccount', 'ConfigMap']);
    const created = await createManifestWork(hubAdmin, { name, clusters: [a.name, b.name], manifests });
    expect(created).toEqual([
      { cluster: a.name, action: 'created' },
      { cluster: b.name, action: 'created' },
    ]);
    await expect(createManifestWork(hubAdmin, { name, clusters: [a.name], manifests })).rejects.toThrow(
      /--overwrite/,
    );
    await a.waitForWork(name, 'settled', settled);

    const rows = await listManifestWorks(hubAdmin, a.name);
    expect(rows.find((r) => r.name === name)).toMatchObject({ applied: 'True', available: 'True' });
    expect(rows.find((r) => r.name === name)?.age).toMatch(/^\d+s$/);
    expect((await listManifestWorks(hubAdmin, b.name)).find((r) => r.name === name)).toMatchObject({
      applied: '',
      available: '',
    });

    writeFileSync(
      join(dir, 'app.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: ${ns}\n  name: cli-cm\ndata:\n  k: v2\n`,
    );
    const again = await createManifestWork(hubAdmin, {
      name,
      clusters: [a.name],
      manifests: loadManifests(dir),
      overwrite: true,
    });
    expect(again).toEqual([{ cluster: a.name, action: 'updated' }]);
    await waitFor(
      'the overwrite to be applied',
      async () => (await configMaps.get('cli-cm', ns))?.data?.k === 'v2',
    );
    await waitFor(
      'cli-sa to be deleted',
      async () => !(await onManaged(kinds.serviceAccount).get('cli-sa', ns)),
    );

    const deleted = await deleteManifestWork(hubAdmin, name, [a.name, b.name]);
    expect(deleted).toEqual([
      { cluster: a.name, deleted: true },
      { cluster: b.name, deleted: true },
    ]);
    await waitFor('the work to be gone and its ConfigMap removed', async () => {
      return !(await a.getWork(name)) && !(await configMaps.get('cli-cm', ns));
    });
  });
});
