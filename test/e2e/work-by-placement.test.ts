// `tether create work NAME -f … --placement ns/name [--overwrite] [-r]` as clusteradm does it, run
// as the real `tether` binary against the shared hub: works only where the Placement decided and no
// work exists yet; --overwrite deletes the work where the cluster is no longer decided; -r creates a
// ManifestWorkReplicaSet (which the controller then deploys); wrong flag combinations are refused.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tetherBin } from '../../src/localenv/process.ts';
import { testEnv } from './fixtures/env.ts';
import {
  Cleanups,
  clustersWithWork,
  configMapManifest,
  createClusterNamespaces,
  createNamespace,
  createPlacement,
  replicaSets,
  sameList,
  setDecisions,
  startTestController,
  uniqueName,
  waitFor,
  works,
} from './fixtures/manifestworkreplicaset.ts';

const env = testEnv();
const cleanups = new Cleanups();
const dir = mkdtempSync(join(tmpdir(), 'tether-work-by-placement-'));
let ns: string;
let clusters: string[];

beforeAll(async () => {
  ns = await createNamespace(cleanups, 'wbp');
  clusters = await createClusterNamespaces(cleanups, 3);
});
afterAll(async () => {
  await cleanups.run();
  rmSync(dir, { recursive: true, force: true });
});

function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [tetherBin, ...args, '--kubeconfig', env.hub.kubeconfigPath],
      { timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function manifestFile(name: string, value: string): string {
  const file = join(dir, `${name}-${value}.json`);
  writeFileSync(file, JSON.stringify(configMapManifest(name, { value })));
  return file;
}

const manifestValue = async (name: string, cluster: string) =>
  (
    (await works.get(name, cluster))?.spec.workload?.manifests?.[0] as
      | { data?: { value?: string } }
      | undefined
  )?.data?.value;

describe('tether create work --placement', () => {
  it('creates the work only where decided and missing; --overwrite deletes it where no longer decided', async () => {
    const [c1, c2, c3] = clusters as [string, string, string];
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, [c1, c2]);
    const name = uniqueName('wbp');

    const first = await tether([
      'create',
      'work',
      name,
      '-f',
      manifestFile(name, 'one'),
      '--placement',
      `${ns}/${placement}`,
    ]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(
      `manifestwork ${c1}/${name} created (1 manifests)\nmanifestwork ${c2}/${name} created (1 manifests)\n`,
    );
    expect(await clustersWithWork(name, clusters)).toEqual([c1, c2]);
    // clusteradm adds no labels to these works.
    expect((await works.get(name, c1))?.metadata.labels).toBeUndefined();

    await setDecisions(ns, placement, [c2, c3]);
    const second = await tether([
      'create',
      'work',
      name,
      '-f',
      manifestFile(name, 'two'),
      '--placement',
      `${ns}/${placement}`,
    ]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(`manifestwork ${c3}/${name} created (1 manifests)\n`);
    expect(await clustersWithWork(name, clusters)).toEqual([c1, c2, c3]);
    expect(await manifestValue(name, c2)).toBe('one'); // existing works are never updated
    expect(await manifestValue(name, c3)).toBe('two');

    const third = await tether([
      'create',
      'work',
      name,
      '-f',
      manifestFile(name, 'three'),
      '--placement',
      `${ns}/${placement}`,
      '--overwrite',
    ]);
    expect(third.code).toBe(0);
    expect(third.stdout).toBe(`manifestwork ${c1}/${name} deleted (no longer decided)\n`);
    expect(await clustersWithWork(name, clusters)).toEqual([c2, c3]);
    for (const c of clusters) cleanups.add(() => works.delete(name, c, { ignoreNotFound: true }));
  });

  it('-r creates a ManifestWorkReplicaSet that the controller deploys; --overwrite replaces it', async () => {
    await startTestController(cleanups);
    const placement = await createPlacement(cleanups, ns);
    await setDecisions(ns, placement, clusters.slice(0, 2));
    const name = uniqueName('wbpr');
    cleanups.add(async () => {
      await replicaSets.delete(name, ns, { ignoreNotFound: true });
      await replicaSets.patchMerge(name, { metadata: { finalizers: null } }, ns).catch(() => undefined);
    });

    const created = await tether([
      'create',
      'work',
      name,
      '-f',
      manifestFile(name, 'one'),
      '--placement',
      `${ns}/${placement}`,
      '-r',
    ]);
    expect(created.stderr).toBe('');
    expect(created.stdout).toBe(`manifestworkreplicaset ${ns}/${name} created (1 manifests)\n`);
    const mwrs = await replicaSets.get(name, ns);
    expect(mwrs?.spec.placementRefs.map((r) => r.name)).toEqual([placement]);
    expect(mwrs?.spec.manifestWorkTemplate?.workload?.manifests).toEqual([
      configMapManifest(name, { value: 'one' }),
    ]);
    await waitFor(
      async () => sameList(await clustersWithWork(name, clusters), clusters.slice(0, 2)),
      'the controller deployed the set to the decided clusters',
    );

    const again = await tether([
      'create',
      'work',
      name,
      '-f',
      manifestFile(name, 'two'),
      '--placement',
      `${ns}/${placement}`,
      '--replicaset',
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already exists; pass --overwrite');

    const replaced = await tether([
      'create',
      'work',
      name,
      '-f',
      manifestFile(name, 'two'),
      '--placement',
      `${ns}/${placement}`,
      '-r',
      '--overwrite',
    ]);
    expect(replaced.stdout).toBe(`manifestworkreplicaset ${ns}/${name} updated (1 manifests)\n`);
    await waitFor(
      async () => (await manifestValue(name, clusters[0] ?? '')) === 'two',
      'the works carry the replaced template',
    );
  });

  it('refuses --clusters with --placement, neither, --replicaset without --placement, and a missing Placement', async () => {
    const file = manifestFile('refused', 'x');
    const cases: Array<[string[], string]> = [
      [['--clusters', 'a', '--placement', `${ns}/p`], 'either --clusters or --placement'],
      [[], 'either --clusters or --placement'],
      [['--clusters', 'a', '-r'], '--replicaset needs --placement'],
      [['--placement', `${ns}/no-such-placement`], `Placement ${ns}/no-such-placement not found`],
      [['--placement', 'no-slash'], 'must be <namespace>/<name>'],
    ];
    for (const [flags, message] of cases) {
      const r = await tether(['create', 'work', 'refused', '-f', file, ...flags]);
      expect(r.code, flags.join(' ')).toBe(1);
      expect(r.stderr).toContain(message);
    }
  });
});
