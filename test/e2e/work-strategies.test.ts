// Update strategies and status feedback of the work agent on real control planes: Update
// (create, replace on a new spec hash, drift left alone otherwise), CreateOnly, ServerSideApply
// (field manager, conflicts reported in the manifest's Applied condition, force), ReadOnly; and
// feedback values — WellKnownStatus of a Deployment (nothing runs pods here: 0 ready) and JSONPaths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManifestConfigOption, ManifestWork } from '../../src/api/index.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import { testEnv } from './fixtures/env.ts';
import { kubectl } from './fixtures/helpers.ts';
import {
  configMap,
  isSettled,
  kinds,
  manifestCondition,
  manifestStatus,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from './fixtures/work.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };

const env = testEnv();
const configMaps = onManaged<ConfigMap>(kinds.configMap);
let cluster: WorkCluster;
let ns: string;

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-strategy');
  ns = await cluster.managedNamespace('work-strategy');
  await cluster.startAgent();
});
afterAll(async () => {
  await cluster?.cleanup();
});

const settled = (w: ManifestWork) => isSettled(w) && w;

function strategy(name: string, type: string, extra: Record<string, unknown> = {}): ManifestConfigOption {
  return {
    resourceIdentifier: { resource: 'configmaps', name, namespace: ns },
    updateStrategy: { type, ...extra } as ManifestConfigOption['updateStrategy'],
  };
}

async function dataOf(name: string): Promise<Record<string, string> | undefined> {
  return (await configMaps.get(name, ns))?.data;
}

describe('update strategies', () => {
  it('Update: replaces the object when the manifest changes, not when someone else edits it', async () => {
    const work = unique('update');
    const manifests = (v: string) => [configMap(ns, 'upd', { k: v }), configMap(ns, 'upd-probe')];
    await cluster.createWork(work, manifests('v1'));
    await cluster.waitForWork(work, 'settled', settled);
    const created = await configMaps.get('upd', ns);
    expect(created?.metadata?.annotations?.['open-cluster-management.io/object-hash']).toMatch(
      /^[0-9a-f]{64}$/,
    );

    await configMaps.patchMerge('upd', { data: { k: 'edited-on-cluster', other: 'x' } }, ns);
    // The probe coming back proves a resync pass (every 1.5 s here) ran over every manifest; it
    // re-creates what is missing and leaves the edit alone while the manifest's hash is unchanged.
    const probeUid = (await configMaps.get('upd-probe', ns))?.metadata?.uid;
    await configMaps.delete('upd-probe', ns);
    await waitFor('the probe to be re-created', async () => {
      const probe = await configMaps.get('upd-probe', ns);
      return probe !== undefined && probe.metadata?.uid !== probeUid;
    });
    expect((await dataOf('upd'))?.k).toBe('edited-on-cluster');

    await cluster.updateWork(work, manifests('v2'));
    await cluster.waitForWork(work, 'generation 2 settled', settled);
    expect(await dataOf('upd')).toEqual({ k: 'v2' });
  });

  it('CreateOnly: creates the object and never changes it afterwards', async () => {
    const work = unique('create-only');
    const configs = [strategy('create-only', 'CreateOnly')];
    await cluster.createWork(work, [configMap(ns, 'create-only', { k: 'first' })], {
      manifestConfigs: configs,
    });
    await cluster.waitForWork(work, 'settled', settled);
    await cluster.updateWork(work, [configMap(ns, 'create-only', { k: 'second' })], {
      manifestConfigs: configs,
    });
    await cluster.waitForWork(work, 'generation 2 settled', settled);
    expect(await dataOf('create-only')).toEqual({ k: 'first' });
    const cm = await configMaps.get('create-only', ns);
    expect(cm?.metadata?.ownerReferences?.[0]?.kind).toBe('AppliedManifestWork');
  });

  it('ServerSideApply: applies as work-agent, reports a conflict instead of forcing, and forces when asked', async () => {
    const work = unique('ssa');
    const ssa = [strategy('ssa', 'ServerSideApply')];
    await cluster.createWork(work, [configMap(ns, 'ssa', { mine: 'a', shared: 'agent' })], {
      manifestConfigs: ssa,
    });
    await cluster.waitForWork(work, 'settled', settled);
    const applied = await configMaps.get('ssa', ns);
    const managers = (
      (applied?.metadata?.managedFields ?? []) as { manager: string; operation: string }[]
    ).map((f) => `${f.manager}/${f.operation}`);
    expect(managers).toContain('work-agent/Apply');

    // Another manager takes `shared` over; the next spec wants it back without force.
    await kubectl(
      env.cluster1.kubeconfigPath,
      ['apply', '--server-side', '--force-conflicts', '--field-manager=someone-else', '-f', '-'],
      {
        input: JSON.stringify(configMap(ns, 'ssa', { shared: 'theirs' })),
      },
    );
    await cluster.updateWork(work, [configMap(ns, 'ssa', { mine: 'a', shared: 'agent-again' })], {
      manifestConfigs: ssa,
    });
    const conflicted = await cluster.waitForWork(work, 'the conflict reported', (w) => {
      const c = manifestCondition(w, 0, 'Applied');
      return c?.status === 'False' && c.observedGeneration === w.metadata.generation ? w : undefined;
    });
    const applyCondition = manifestCondition(conflicted, 0, 'Applied');
    expect(applyCondition?.reason).toBe('AppliedManifestFailed');
    expect(applyCondition?.message).toMatch(/conflict/i);
    expect(applyCondition?.message).toContain('someone-else');
    expect(manifestCondition(conflicted, 0, 'Available')?.status).toBe('True');
    expect((await dataOf('ssa'))?.shared).toBe('theirs');

    const forced = [strategy('ssa', 'ServerSideApply', { serverSideApply: { force: true } })];
    await cluster.updateWork(work, [configMap(ns, 'ssa', { mine: 'a', shared: 'agent-again' })], {
      manifestConfigs: forced,
    });
    await cluster.waitForWork(work, 'settled after force', settled);
    expect((await dataOf('ssa'))?.shared).toBe('agent-again');
  });

  it('ServerSideApply with a custom field manager', async () => {
    const work = unique('ssa-manager');
    const configs = [
      strategy('ssa-manager', 'ServerSideApply', { serverSideApply: { fieldManager: 'work-agent-e2e' } }),
    ];
    await cluster.createWork(work, [configMap(ns, 'ssa-manager', { k: 'v' })], { manifestConfigs: configs });
    await cluster.waitForWork(work, 'settled', settled);
    const cm = await configMaps.get('ssa-manager', ns);
    const managers = ((cm?.metadata?.managedFields ?? []) as { manager: string }[]).map((f) => f.manager);
    expect(managers).toContain('work-agent-e2e');
  });

  it('ReadOnly: reads an existing object back (feedback) without touching or owning it', async () => {
    await configMaps.create({ metadata: { name: 'read-only', namespace: ns }, data: { color: 'blue' } });
    const work = unique('read-only');
    const configs: ManifestConfigOption[] = [
      {
        ...strategy('read-only', 'ReadOnly'),
        feedbackRules: [{ type: 'JSONPaths', jsonPaths: [{ name: 'color', path: '.data.color' }] }],
      },
    ];
    await cluster.createWork(work, [configMap(ns, 'read-only', { color: 'red' })], {
      manifestConfigs: configs,
    });
    const done = await cluster.waitForWork(work, 'feedback read', (w) =>
      manifestStatus(w, 0)?.statusFeedback?.values?.length ? w : undefined,
    );
    expect(manifestStatus(done, 0)?.statusFeedback?.values).toEqual([
      { name: 'color', fieldValue: { type: 'String', string: 'blue' } },
    ]);
    expect(manifestCondition(done, 0, 'Applied')?.status).toBe('True');
    const cm = await configMaps.get('read-only', ns);
    expect(cm?.data).toEqual({ color: 'blue' });
    expect(cm?.metadata?.ownerReferences).toBeUndefined();
    await cluster.updateWork(work, [configMap(ns, 'read-only')], { manifestConfigs: configs });
    await waitFor(
      'the work to be replaced',
      async () => (await cluster.getWork(work))?.metadata.generation === 2,
    );
  });
});

describe('status feedback', () => {
  it('WellKnownStatus of a Deployment and JSONPaths on its spec and a ServiceAccount', async () => {
    const work = unique('feedback');
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { namespace: ns, name: 'fb', labels: { app: 'fb' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'fb' } },
        template: {
          metadata: { labels: { app: 'fb' } },
          spec: { containers: [{ name: 'c', image: 'nginx:1.14.2' }] },
        },
      },
    };
    const account = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { namespace: ns, name: 'fb-sa' },
      automountServiceAccountToken: false,
    };
    const configs: ManifestConfigOption[] = [
      {
        resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'fb', namespace: ns },
        feedbackRules: [
          { type: 'WellKnownStatus' },
          {
            type: 'JSONPaths',
            jsonPaths: [
              { name: 'specReplicas', path: '.spec.replicas' },
              { name: 'appLabel', path: '.metadata.labels.app' },
              { name: 'firstContainer', path: '.spec.template.spec.containers[0].name' },
              { name: 'selector', path: '.spec.selector' },
              { name: 'missing', path: '.status.nothingHere' },
            ],
          },
        ],
      },
      {
        resourceIdentifier: { resource: 'serviceaccounts', name: 'fb-sa', namespace: ns },
        feedbackRules: [
          { type: 'JSONPaths', jsonPaths: [{ name: 'automount', path: '.automountServiceAccountToken' }] },
        ],
      },
    ];
    await cluster.createWork(work, [deployment, account], { manifestConfigs: configs });
    // This environment runs no deployment controller (nor kubelet): the status stays empty, so the
    // well-known counts are left out (as OCM does) rather than reported as 0.
    const done = await cluster.waitForWork(work, 'feedback reported', (w) =>
      manifestStatus(w, 0)?.statusFeedback?.values?.length &&
      manifestStatus(w, 1)?.statusFeedback?.values?.length
        ? w
        : undefined,
    );
    const values = Object.fromEntries(
      (manifestStatus(done, 0)?.statusFeedback?.values ?? []).map((v) => [v.name, v.fieldValue]),
    );
    expect(values).toEqual({
      specReplicas: { type: 'Integer', integer: 2 },
      appLabel: { type: 'String', string: 'fb' },
      firstContainer: { type: 'String', string: 'c' },
      selector: { type: 'JsonRaw', jsonRaw: '{"matchLabels":{"app":"fb"}}' },
    });
    expect(manifestCondition(done, 0, 'StatusFeedbackSynced')).toMatchObject({
      status: 'True',
      reason: 'StatusFeedbackSynced',
    });
    expect(manifestStatus(done, 1)?.statusFeedback?.values).toEqual([
      { name: 'automount', fieldValue: { type: 'Boolean', boolean: false } },
    ]);
  });

  it('a rule that cannot be evaluated turns StatusFeedbackSynced False', async () => {
    const work = unique('feedback-bad');
    const configs: ManifestConfigOption[] = [
      {
        resourceIdentifier: { resource: 'configmaps', name: 'fb-bad', namespace: ns },
        feedbackRules: [
          { type: 'WellKnownStatus' },
          { type: 'JSONPaths', jsonPaths: [{ name: 'broken', path: '.data[?(@.x ~ 1)]' }] },
        ],
      },
    ];
    await cluster.createWork(work, [configMap(ns, 'fb-bad', { x: '1' })], { manifestConfigs: configs });
    const done = await cluster.waitForWork(work, 'feedback condition', (w) =>
      manifestCondition(w, 0, 'StatusFeedbackSynced') ? w : undefined,
    );
    const c = manifestCondition(done, 0, 'StatusFeedbackSynced');
    expect(c).toMatchObject({ status: 'False', reason: 'StatusFeedbackSyncFailed' });
    expect(c?.message).toContain('cannot find the wellknown statuses');
    expect(c?.message).toContain('broken');
    expect(manifestCondition(done, 0, 'Applied')?.status).toBe('True');
  });
});
