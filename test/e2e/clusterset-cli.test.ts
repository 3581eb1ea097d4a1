// clusteradm's cluster-set and placement verbs as `tether` runs them against the real hub:
// `clusterset set` labels clusters into a set, `clusterset bind|unbind` manage the binding (Bound by
// the placement hub), `get clustersets` shows bound namespaces, ClusterSetEmpty's message and
// members, `get placements` prints clusteradm's tree from a Placement and its decisions, and
// `get clusters` gains the CLUSTERSET column.
import { execFile } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clusterSetLabel, placementLabel } from '../../src/api/index.ts';
import {
  admin,
  bindingCondition,
  Cleanups,
  createBareCluster,
  createClusterSet,
  createNamespace,
  startTestPlacementHub,
  waitFor,
} from './fixtures/placement.ts';
import { env } from './fixtures/registration-hub.ts';

const fileCleanups = new Cleanups();
const cleanups = new Cleanups();

function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/tether.js', ...args, `--kubeconfig=${env.hub.kubeconfigPath}`],
      { timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  await startTestPlacementHub(fileCleanups);
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

describe('tether clusterset', () => {
  it('set puts clusters into a set by label; bind and unbind manage the binding', async () => {
    const set = await createClusterSet(cleanups);
    const a = await createBareCluster(cleanups);
    const b = await createBareCluster(cleanups, { [clusterSetLabel]: set });
    const namespace = await createNamespace(cleanups);

    const moved = await tether(['clusterset', 'set', set, '--clusters', `${a},${b}`]);
    expect(moved).toMatchObject({ code: 0 });
    expect(moved.stdout).toBe(
      `cluster ${a} is now in clusterset ${set}\ncluster ${b} is already in clusterset ${set}\n`,
    );
    expect((await admin.clusters.get(a))?.metadata.labels?.[clusterSetLabel]).toBe(set);

    const bound = await tether(['clusterset', 'bind', set, '--namespace', namespace]);
    expect(bound).toMatchObject({ code: 0, stdout: `clusterset ${set} bound to namespace ${namespace}\n` });
    expect((await tether(['clusterset', 'bind', set, '--namespace', namespace])).stdout).toBe(
      `clusterset ${set} is already bound to namespace ${namespace}\n`,
    );
    await waitFor(
      async () => (await bindingCondition(namespace, set, 'Bound'))?.status === 'True',
      'binding Bound',
    );

    const listed = await waitFor(async () => {
      const out = (await tether(['get', 'clustersets'])).stdout;
      return out.includes('2 ManagedClusters selected') &&
        out.split('\n').some((l) => l.startsWith(`${set} `))
        ? out
        : undefined;
    }, 'get clustersets shows the set with two clusters');
    const header = listed.split('\n')[0] ?? '';
    expect(header.split(/\s{3,}/)).toEqual(['NAME', 'BOUND NAMESPACES', 'STATUS', 'MANAGED NAMESPACES']);
    const row = listed.split('\n').find((l) => l.startsWith(`${set} `)) ?? '';
    expect(row.split(/\s{3,}/)).toEqual([set, namespace, '2 ManagedClusters selected']);

    const tree = (await tether(['get', 'clustersets', '-o', 'tree'])).stdout;
    expect(tree.startsWith('<ManagedClusterSet> \n')).toBe(true);
    const clustersLine = [a, b].sort().join(' ');
    expect(tree).toContain(`<Clusters> [${clustersLine}]`);
    expect(tree).toContain(`<BoundNamespace> [${namespace}]`);

    const managed = await tether(['clusterset', 'set', set, '--namespaces', 'apps,apps']);
    expect(managed).toMatchObject({ code: 0, stdout: `clusterset ${set} manages namespace apps\n` });
    expect((await admin.clusterSets.get(set))?.spec?.managedNamespaces).toEqual([{ name: 'apps' }]);
    const withNamespaces = (await tether(['get', 'clustersets'])).stdout
      .split('\n')
      .find((l) => l.startsWith(`${set} `));
    expect(withNamespaces?.split(/\s{3,}/)).toEqual([set, namespace, '2 ManagedClusters selected', 'apps']);

    const unbound = await tether(['clusterset', 'unbind', set, '--namespace', namespace]);
    expect(unbound).toMatchObject({
      code: 0,
      stdout: `clusterset ${set} unbound from namespace ${namespace}\n`,
    });
    expect(await admin.bindings.get(set, namespace)).toBeUndefined();
  });

  it('bind and set refuse a set that does not exist', async () => {
    for (const args of [
      ['clusterset', 'bind', 'no-such-set-here', '--namespace', 'default'],
      ['clusterset', 'set', 'no-such-set-here', '--clusters', 'x'],
    ]) {
      const run = await tether(args);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toContain('no ManagedClusterSet named no-such-set-here');
    }
  });

  it('get clusters shows each cluster’s set', async () => {
    const set = await createClusterSet(cleanups);
    const cluster = await createBareCluster(cleanups, { [clusterSetLabel]: set });
    const out = (await tether(['get', 'clusters'])).stdout;
    expect(out.split('\n')[0]?.split(/\s{3,}/)).toEqual([
      'NAME',
      'ACCEPTED',
      'AVAILABLE',
      'CLUSTERSET',
      'CPU',
      'MEMORY',
      'KUBERNETES VERSION',
    ]);
    const row = out.split('\n').find((l) => l.startsWith(`${cluster} `)) ?? '';
    expect(row.split(/\s{3,}/)).toEqual([cluster, 'false', 'Unknown', set]);
  });
});

describe('tether get placements', () => {
  it('prints clusteradm’s tree of a Placement and the clusters its decisions hold', async () => {
    const namespace = await createNamespace(cleanups);
    const name = 'web';
    await admin.placements.create({ metadata: { name, namespace }, spec: { clusterSets: ['prod', 'edge'] } });
    await admin.placements.patchStatus(
      name,
      {
        status: {
          numberOfSelectedClusters: 2,
          conditions: [
            {
              type: 'PlacementMisconfigured',
              status: 'False',
              reason: 'Succeedconfigured',
              message: 'Placement configurations check pass',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            },
            {
              type: 'PlacementSatisfied',
              status: 'True',
              reason: 'AllDecisionsScheduled',
              message: 'All cluster decisions scheduled',
              lastTransitionTime: '2026-01-01T00:00:00Z',
            },
          ],
        },
      },
      namespace,
    );
    const decision = `${name}-decision-1`;
    await admin.decisions.create({
      metadata: { name: decision, namespace, labels: { [placementLabel]: name } },
    });
    await admin.decisions.patchStatus(
      decision,
      {
        status: {
          decisions: [
            { clusterName: 'c1', reason: '' },
            { clusterName: 'c2', reason: '' },
          ],
        },
      },
      namespace,
    );

    const tree = await tether(['get', 'placements', '-n', namespace]);
    expect(tree.code).toBe(0);
    expect(tree.stdout).toBe(
      [
        '<Placement> ',
        '└── <web> ',
        '    ├── <ClusterSet> [prod edge]',
        `    ├── <Namespace> ${namespace}`,
        '    ├── <PlacementDecision> [c1 c2]',
        '    └── <Status> ',
        '        ├── <Conditions> ',
        '        │   ├── <PlacementConditionMisconfigured> false',
        '        │   └── <PlacementConditionSatisfied> true',
        '        └── <NumberOfSelectedClusters> 2',
        '',
      ].join('\n'),
    );

    const table = (await tether(['get', 'placements', name, '-n', namespace, '-o', 'table'])).stdout.split(
      '\n',
    );
    expect(table[0]?.split(/\s{3,}/)).toEqual(['NAME', 'STATUS', 'REASON', 'SELECTEDCLUSTERS']);
    expect(table[1]?.split(/\s{3,}/)).toEqual(['web', 'False', 'Succeedconfigured', '[c1 c2]']);

    const missing = await tether(['get', 'placements', '-n', `${namespace}-none`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`namespace ${namespace}-none not found`);
  });
});
