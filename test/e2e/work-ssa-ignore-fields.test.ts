// Server-side apply ignoreFields on real control planes, with OCM's semantics: while the work does
// not change, edits made on the managed cluster stay (no re-apply); when it changes, OnSpokeChange
// fields are applied again and OnSpokePresent fields stay the managed cluster's (the work forces,
// so without ignoreFields every pass would take the edits back); a bad pointer
// fails the manifest with AppliedManifestSSAIgnoreFieldError.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManifestConfigOption, ManifestWork } from '../../src/api/index.ts';
import { findCondition, type KubeObject } from '../../src/kube/index.ts';
import {
  configMap,
  isSettled,
  kinds,
  manifestCondition,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
} from './fixtures/work.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const configMaps = onManaged<ConfigMap>(kinds.configMap);
let cluster: WorkCluster;
let ns: string;

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-ssa-ignore');
  ns = await cluster.managedNamespace('work-ssa-ignore');
  await cluster.startAgent();
});
afterAll(async () => {
  await cluster?.cleanup();
});

const atGeneration = (generation: number) => (w: ManifestWork) =>
  isSettled(w) && findCondition(w.status?.conditions, 'Applied')?.observedGeneration === generation && w;

describe('ServerSideApply ignoreFields', () => {
  it('keeps managed-cluster edits until the work changes; then OnSpokeChange fields are applied again, OnSpokePresent ones never', async () => {
    const work = unique('ssa-ignore');
    const configs: ManifestConfigOption[] = [
      {
        resourceIdentifier: { resource: 'configmaps', name: 'ignored', namespace: ns },
        updateStrategy: {
          type: 'ServerSideApply',
          serverSideApply: {
            // force: without ignoreFields every pass would take the edited fields back
            force: true,
            ignoreFields: [
              { condition: 'OnSpokePresent', jsonPointers: ['/data/present'] },
              { condition: 'OnSpokeChange', jsonPaths: ['.data.change'] },
            ],
          },
        },
      },
    ];
    const manifest = (change: string) => configMap(ns, 'ignored', { present: 'hub', change, other: 'hub' });
    await cluster.createWork(work, [manifest('hub')], { manifestConfigs: configs });
    await cluster.waitForWork(work, 'settled', atGeneration(1));
    expect((await configMaps.get('ignored', ns))?.data).toEqual({
      present: 'hub',
      change: 'hub',
      other: 'hub',
    });

    await configMaps.patchMerge('ignored', { data: { present: 'spoke', change: 'spoke' } }, ns, {
      fieldManager: 'e2e-editor',
    });
    // Another manifest changes the work (a full pass) but not this manifest: nothing is re-applied.
    await cluster.updateWork(work, [manifest('hub'), configMap(ns, 'bystander')], {
      manifestConfigs: configs,
    });
    await cluster.waitForWork(work, 'generation 2 applied', atGeneration(2));
    expect((await configMaps.get('ignored', ns))?.data).toEqual({
      present: 'spoke',
      change: 'spoke',
      other: 'hub',
    });

    // The manifest changes: applied again (forced over e2e-editor's edit), without the OnSpokePresent field.
    await cluster.updateWork(work, [manifest('hub-2'), configMap(ns, 'bystander')], {
      manifestConfigs: configs,
    });
    await cluster.waitForWork(work, 'generation 3 applied', atGeneration(3));
    expect((await configMaps.get('ignored', ns))?.data).toEqual({
      present: 'spoke',
      change: 'hub-2',
      other: 'hub',
    });
  });

  it('jqPathExpressions: what the expression selects stays the managed cluster’s when the work changes', async () => {
    const work = unique('ssa-jq');
    const configs: ManifestConfigOption[] = [
      {
        resourceIdentifier: { resource: 'configmaps', name: 'jq-ignored', namespace: ns },
        updateStrategy: {
          type: 'ServerSideApply',
          serverSideApply: {
            force: true,
            ignoreFields: [
              { condition: 'OnSpokePresent', jqPathExpressions: ['.data["local-a", "local-b"]'] },
            ],
          },
        },
      },
    ];
    const manifest = (other: string) =>
      configMap(ns, 'jq-ignored', { 'local-a': 'hub', 'local-b': 'hub', other });
    await cluster.createWork(work, [manifest('hub')], { manifestConfigs: configs });
    await cluster.waitForWork(work, 'settled', atGeneration(1));
    await configMaps.patchMerge('jq-ignored', { data: { 'local-a': 'spoke', 'local-b': 'spoke' } }, ns, {
      fieldManager: 'e2e-editor',
    });
    await cluster.updateWork(work, [manifest('hub-2')], { manifestConfigs: configs });
    await cluster.waitForWork(work, 'generation 2 applied', atGeneration(2));
    expect((await configMaps.get('jq-ignored', ns))?.data).toEqual({
      'local-a': 'spoke',
      'local-b': 'spoke',
      other: 'hub-2',
    });
  });

  it('a malformed JSON pointer fails the manifest with AppliedManifestSSAIgnoreFieldError', async () => {
    const work = unique('ssa-bad-pointer');
    await cluster.createWork(work, [configMap(ns, 'bad-pointer', { a: '1' })], {
      manifestConfigs: [
        {
          resourceIdentifier: { resource: 'configmaps', name: 'bad-pointer', namespace: ns },
          updateStrategy: {
            type: 'ServerSideApply',
            serverSideApply: { ignoreFields: [{ condition: 'OnSpokePresent', jsonPointers: ['data/a'] }] },
          },
        },
      ],
    });
    const failed = await cluster.waitForWork(work, 'Applied False', (w) =>
      manifestCondition(w, 0, 'Applied')?.status === 'False' ? w : undefined,
    );
    expect(manifestCondition(failed, 0, 'Applied')).toMatchObject({
      reason: 'AppliedManifestSSAIgnoreFieldError',
    });
    expect(manifestCondition(failed, 0, 'Applied')?.message).toContain('must start with /');
  });
});
