// ManifestWork fidelity with OCM, on real control planes: the hub's CRD accepts what OCM's accepts
// (ignoreFields by jsonPointers / jqPathExpressions, feedbackScrapeType, condition rules) and
// rejects what OCM's rejects (executor names that are not DNS subdomains, CEL rules without a
// condition); status reads as OCM writes it (statusFeedback `{}`); ReadOnly objects stay out of the
// AppliedManifestWork; deletion is Foreground, so a work is released only once the dependents of
// what it applied are gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManifestWork } from '../../src/api/index.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import {
  appliedWorks,
  configMap,
  dropFinalizers,
  hubHash,
  hubWorks,
  isSettled,
  kinds,
  manifestStatus,
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
  cluster = await setUpWorkCluster('work-fidelity');
  ns = await cluster.managedNamespace('work-fidelity');
  await cluster.startAgent();
});
afterAll(async () => {
  await dropFinalizers(configMaps, 'fg-child', ns);
  await cluster?.cleanup();
});

const settled = (w: ManifestWork) => isSettled(w) && w;
const appliedName = (work: string) => `${hubHash}-${work}`;

/** Create a work on the hub as an admin would (kubectl apply), outside the fixture's helpers. */
function rawWork(name: string, spec: Record<string, unknown>): ManifestWork {
  return {
    apiVersion: 'work.open-cluster-management.io/v1',
    kind: 'ManifestWork',
    metadata: { name, namespace: cluster.name },
    spec: { workload: { manifests: [configMap(ns, `${name}-cm`)] }, ...spec },
  } as ManifestWork;
}

describe('the hub ManifestWork CRD matches OCM', () => {
  it('accepts ignoreFields by jsonPointers and jqPathExpressions (no jsonPaths) and keeps feedbackScrapeType', async () => {
    const name = unique('ssa-ignore');
    const manifestConfigs = [
      {
        resourceIdentifier: { resource: 'configmaps', name: `${name}-cm`, namespace: ns },
        feedbackScrapeType: 'Watch',
        updateStrategy: {
          type: 'ServerSideApply',
          serverSideApply: {
            ignoreFields: [
              { condition: 'OnSpokeChange', jsonPointers: ['/data/replicas'] },
              { condition: 'OnSpokePresent', jqPathExpressions: ['.data.other'] },
            ],
          },
        },
        conditionRules: [{ condition: 'Complete', type: 'WellKnownConditions' }],
      },
    ];
    const created = await hubWorks.create(rawWork(name, { manifestConfigs }));
    const config = created.spec.manifestConfigs?.[0];
    expect(config?.feedbackScrapeType).toBe('Watch');
    expect(config?.updateStrategy?.serverSideApply?.ignoreFields).toEqual(
      manifestConfigs[0]?.updateStrategy.serverSideApply.ignoreFields,
    );
    expect(config?.conditionRules).toEqual([{ condition: 'Complete', type: 'WellKnownConditions' }]);
    // Defaults as OCM's CRD sets them.
    expect(config?.updateStrategy?.serverSideApply?.fieldManager).toBe('work-agent');
    await hubWorks.delete(name, cluster.name);
  });

  it('rejects executor names that are not DNS subdomains, and CEL rules without a condition', async () => {
    const badExecutor = rawWork(unique('bad-exec'), {
      executor: {
        subject: { type: 'ServiceAccount', serviceAccount: { namespace: 'default', name: 'Not_A_Name' } },
      },
    });
    await expect(hubWorks.create(badExecutor)).rejects.toThrow(/serviceAccount\.name/);
    const badRule = rawWork(unique('bad-rule'), {
      manifestConfigs: [
        {
          resourceIdentifier: { resource: 'configmaps', name: 'x', namespace: ns },
          conditionRules: [{ condition: '', type: 'CEL', celExpressions: ['true'] }],
        },
      ],
    });
    await expect(hubWorks.create(badRule)).rejects.toThrow(/Condition is required for CEL rules/);
  });
});

describe('status and records as OCM writes them', () => {
  it('a manifest without feedback rules reports statusFeedback {}', async () => {
    const work = unique('empty-feedback');
    await cluster.createWork(work, [configMap(ns, 'empty-feedback')]);
    const done = await cluster.waitForWork(work, 'settled', settled);
    expect(manifestStatus(done, 0)?.statusFeedback).toEqual({});
  });

  it('a ReadOnly object is not listed in appliedResources, and an object turned ReadOnly is disowned, not deleted', async () => {
    await configMaps.create({
      metadata: { name: 'ro-existing', namespace: ns },
      data: { a: '1' },
    } as KubeObject);
    const work = unique('read-only-record');
    const readOnly = (name: string) => ({
      resourceIdentifier: { resource: 'configmaps', name, namespace: ns },
      updateStrategy: { type: 'ReadOnly' as const },
    });
    await cluster.createWork(work, [configMap(ns, 'ro-existing'), configMap(ns, 'ro-applied')], {
      manifestConfigs: [readOnly('ro-existing')],
    });
    await cluster.waitForWork(work, 'settled', settled);
    const recorded = async () =>
      ((await appliedWorks.get(appliedName(work)))?.status?.appliedResources ?? []).map((r) => r.name);
    await waitFor('only the applied ConfigMap to be recorded', async () => {
      const names = await recorded();
      return names.length === 1 && names[0] === 'ro-applied';
    });

    // The applied one turns ReadOnly: it leaves the record, loses our ownerReference, and stays.
    await cluster.updateWork(work, [configMap(ns, 'ro-existing'), configMap(ns, 'ro-applied')], {
      manifestConfigs: [readOnly('ro-existing'), readOnly('ro-applied')],
    });
    await waitFor('nothing to be recorded', async () => (await recorded()).length === 0);
    const kept = await configMaps.get('ro-applied', ns);
    expect(kept?.metadata?.ownerReferences ?? []).toEqual([]);
    await hubWorks.delete(work, cluster.name);
    await waitFor('the work to be gone', async () => !(await cluster.getWork(work)));
    expect(await configMaps.get('ro-applied', ns)).toBeDefined();
    expect(await configMaps.get('ro-existing', ns)).toBeDefined();
  });
});

describe('Foreground deletion', () => {
  it("the work's finalizer is released only once the dependents of what it applied are gone", async () => {
    const work = unique('foreground-deps');
    await cluster.createWork(work, [configMap(ns, 'fg-parent')]);
    await cluster.waitForWork(work, 'settled', settled);
    const parent = await configMaps.get('fg-parent', ns);
    // A dependent the garbage collector must remove first (as a Deployment's ReplicaSets), held
    // for now by a finalizer of its own.
    await configMaps.create({
      metadata: {
        name: 'fg-child',
        namespace: ns,
        finalizers: ['e2e.tether.dev/hold'],
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'fg-parent',
            uid: parent?.metadata?.uid ?? '',
            blockOwnerDeletion: true,
          },
        ],
      },
    } as KubeObject);

    await hubWorks.delete(work, cluster.name);
    await waitFor('the parent to wait for its dependents (foregroundDeletion)', async () => {
      const p = await configMaps.get('fg-parent', ns);
      const c = await configMaps.get('fg-child', ns);
      return (
        Boolean(p?.metadata?.finalizers?.includes('foregroundDeletion')) &&
        Boolean(c?.metadata?.deletionTimestamp)
      );
    });
    const held = await cluster.getWork(work);
    expect(held?.metadata.deletionTimestamp).toBeTruthy();
    expect(held?.metadata.finalizers).toContain('cluster.open-cluster-management.io/manifest-work-cleanup');
    expect((await appliedWorks.get(appliedName(work)))?.status?.appliedResources?.map((r) => r.name)).toEqual(
      ['fg-parent'],
    );

    await configMaps.patchMerge('fg-child', { metadata: { finalizers: null } }, ns);
    await waitFor('the work, its AppliedManifestWork and both ConfigMaps to be gone', async () => {
      const [w, a, p, c] = await Promise.all([
        cluster.getWork(work),
        appliedWorks.get(appliedName(work)),
        configMaps.get('fg-parent', ns),
        configMaps.get('fg-child', ns),
      ]);
      return !w && !a && !p && !c;
    });
  });
});
