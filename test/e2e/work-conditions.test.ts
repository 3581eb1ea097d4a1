// ManifestWork conditions as OCM sets them, on real control planes: condition rules (CEL with
// messageExpression; OCM's well-known Complete of a Pod) on each manifest and aggregated on the
// work; a complete manifest no longer updated nor recreated; ttlSecondsAfterFinished deleting a
// complete work (hub garbage collector); Progressing; Deleting and ResourceDeleted events (on the
// managed cluster, as OCM's agent records them) while a work is removed; feedbackScrapeType Watch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentNamespace,
  type Manifest,
  type ManifestConfigOption,
  type ManifestWork,
} from '../../src/api/index.ts';
import { findCondition, type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { startWorkGarbageCollector, type WorkGarbageCollector } from '../../src/work/hub/index.ts';
import {
  conditionStatus,
  configMap,
  dropFinalizers,
  hubAdmin,
  hubWorks,
  isSettled,
  kinds,
  managed,
  manifestCondition,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from './fixtures/work.ts';

const configMaps = onManaged(kinds.configMap);
const pods = new ResourceClient<KubeObject & { status?: { phase?: string } }>(managed, {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
});
// The agent's events, where OCM's work agent records them: on the managed cluster, in its namespace.
const agentEvents = new ResourceClient<KubeObject & { reason?: string; message?: string }>(managed, {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
});
const hubEvents = new ResourceClient<KubeObject & { reason?: string }>(hubAdmin, {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
});
const hubEventsAbout = async (work: string) =>
  (await hubEvents.list({ namespace: cluster.name })).items
    .filter((e) => (e as { involvedObject?: { name?: string } }).involvedObject?.name === work)
    .map((e) => e.reason);
let cluster: WorkCluster;
let ns: string;
let collector: WorkGarbageCollector | undefined;

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-cond');
  ns = await cluster.managedNamespace('work-cond');
  await cluster.startAgent();
});
afterAll(async () => {
  await collector?.stop();
  await dropFinalizers(configMaps, 'deleting-held', ns);
  await cluster?.cleanup();
});

const settled = (w: ManifestWork) => isSettled(w) && w;
const cm = (name: string): ManifestConfigOption['resourceIdentifier'] => ({
  resource: 'configmaps',
  name,
  namespace: ns,
});

function pod(name: string, labels: Record<string, string> = {}): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.invalid/none:1' }] },
  };
}

describe('condition rules', () => {
  it('CEL: a rule sets its condition (message from messageExpression) on the manifest and the work', async () => {
    const work = unique('cel');
    const configs: ManifestConfigOption[] = [
      {
        resourceIdentifier: cm('cel-target'),
        conditionRules: [
          {
            condition: 'Ready',
            type: 'CEL',
            celExpressions: ["object.data.state == 'ready'", 'size(object.data) >= 1'],
            messageExpression: "result ? 'ready' : 'state is ' + object.data.state",
          },
        ],
      },
    ];
    await cluster.createWork(work, [configMap(ns, 'cel-target', { state: 'starting' })], {
      manifestConfigs: configs,
    });
    const first = await cluster.waitForWork(work, 'Ready evaluated', (w) =>
      manifestCondition(w, 0, 'Ready') ? w : undefined,
    );
    expect(manifestCondition(first, 0, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ConditionRuleEvaluated',
      message: 'state is starting',
    });
    expect(findCondition(first.status?.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ConditionRulesAggregated',
    });

    await cluster.updateWork(work, [configMap(ns, 'cel-target', { state: 'ready' })], {
      manifestConfigs: configs,
    });
    const ready = await cluster.waitForWork(work, 'Ready True', (w) =>
      conditionStatus(w, 'Ready') === 'True' ? w : undefined,
    );
    expect(manifestCondition(ready, 0, 'Ready')).toMatchObject({ status: 'True', message: 'ready' });
    expect(findCondition(ready.status?.conditions, 'Progressing')).toMatchObject({
      status: 'False',
      reason: 'Completed',
    });
  });

  it('WellKnownConditions: a finished Pod is Complete; the complete work is neither updated nor recreated', async () => {
    const work = unique('pod-complete');
    const configs: ManifestConfigOption[] = [
      {
        resourceIdentifier: { resource: 'pods', name: 'once', namespace: ns },
        conditionRules: [{ condition: 'Complete', type: 'WellKnownConditions' }],
      },
    ];
    await cluster.createWork(work, [pod('once')], { manifestConfigs: configs });
    const running = await cluster.waitForWork(work, 'Complete evaluated', (w) =>
      manifestCondition(w, 0, 'Complete') ? w : undefined,
    );
    expect(manifestCondition(running, 0, 'Complete')?.status).toBe('False');
    expect(findCondition(running.status?.conditions, 'Complete')).toMatchObject({
      status: 'False',
      reason: 'ManifestsNotComplete',
    });

    // No kubelet here: the Pod's phase is set as a kubelet would.
    await pods.patchStatus('once', { status: { phase: 'Succeeded' } }, ns);
    await cluster.waitForWork(work, 'Complete', (w) =>
      findCondition(w.status?.conditions, 'Complete')?.reason === 'ManifestsComplete' ? w : undefined,
    );

    await cluster.updateWork(work, [pod('once', { changed: 'yes' })], { manifestConfigs: configs });
    await cluster.waitForWork(work, 'the new generation seen', (w) =>
      findCondition(w.status?.conditions, 'Applied')?.observedGeneration === 2 ? w : undefined,
    );
    expect((await pods.get('once', ns))?.metadata?.labels?.changed).toBeUndefined();

    await pods.delete('once', ns, { gracePeriodSeconds: 0 });
    await cluster.waitForWork(work, 'the Pod reported gone', (w) =>
      manifestCondition(w, 0, 'Available')?.status === 'False' ? w : undefined,
    );
    expect(await pods.get('once', ns)).toBeUndefined();
    expect(conditionStatus(await cluster.getWork(work), 'Complete')).toBe('True');
  });

  it('ttlSecondsAfterFinished: the hub deletes a complete work, and its resources go with it', async () => {
    collector = startWorkGarbageCollector({ hubKubeConfig: hubAdmin });
    await collector.ready;
    const work = unique('ttl');
    await cluster.createWork(work, [configMap(ns, 'ttl-cm')], {
      deleteOption: { propagationPolicy: 'Foreground', ttlSecondsAfterFinished: 1 },
      manifestConfigs: [
        {
          resourceIdentifier: cm('ttl-cm'),
          conditionRules: [{ condition: 'Complete', type: 'CEL', celExpressions: ['true'] }],
        },
      ],
    });
    await waitFor('the complete work and its ConfigMap to be gone', async () => {
      const [w, c] = await Promise.all([cluster.getWork(work), configMaps.get('ttl-cm', ns)]);
      return !w && !c;
    });
  });
});

describe('deletion and watched feedback', () => {
  it('events for created and deleted resources; a work being deleted carries Deleting', async () => {
    const work = unique('deleting');
    const held = {
      ...configMap(ns, 'deleting-held'),
      metadata: { name: 'deleting-held', namespace: ns, finalizers: ['e2e.tether.dev/hold'] },
    };
    await cluster.createWork(work, [held, configMap(ns, 'deleting-free')]);
    await cluster.waitForWork(work, 'settled', settled);
    // About the agent itself (its namespace, as library-go's recorder outside a pod), not the work:
    // this test's objects are told apart by their namespace in the message.
    const eventsOf = async (reason: string) =>
      (await agentEvents.list({ namespace: agentNamespace })).items.filter(
        (e) =>
          e.reason === reason &&
          (e as { involvedObject?: { kind?: string; name?: string } }).involvedObject?.name ===
            agentNamespace &&
          (e.message ?? '').includes(ns),
      );
    // What OCM's agent (library-go's resource apply) reports when it creates an object.
    const created = await waitFor('ConfigMapCreated events', async () => {
      const list = await eventsOf('ConfigMapCreated');
      return list.length >= 2 && list;
    });
    expect(created.map((e) => e.message)).toContain(
      `Created ConfigMap/deleting-free -n ${ns} because it was missing`,
    );
    // Nothing on the hub: an event there would be one more hub request per work.
    const onHub = await hubEventsAbout(work);
    expect(onHub).toEqual([]);
    await hubWorks.delete(work, cluster.name);
    const deleting = await cluster.waitForWork(work, 'Deleting', (w) =>
      conditionStatus(w, 'Deleting') === 'True' ? w : undefined,
    );
    expect(findCondition(deleting.status?.conditions, 'Deleting')?.reason).toBe('ManifestWorkDeleting');
    const events = await waitFor('ResourceDeleted events', async () => {
      const mine = await eventsOf('ResourceDeleted');
      return mine.length >= 2 && mine;
    });
    expect(events.map((e) => e.message).join('\n')).toContain(
      `/v1, Resource=configmaps with key ${ns}/deleting-free because manifestwork ${work} is being deleted.`,
    );
    await configMaps.patchMerge('deleting-held', { metadata: { finalizers: null } }, ns);
    await waitFor('the work to be gone', async () => !(await cluster.getWork(work)));
  });

  it('feedbackScrapeType Watch: feedback follows a change on the managed cluster without waiting for the status sync', async () => {
    // A status sync far beyond the test's deadline: only the watch can bring the new value.
    await cluster.startAgent({ statusSyncIntervalMs: 600_000 });
    const work = unique('watch');
    await cluster.createWork(work, [configMap(ns, 'watched', { state: 'one' })], {
      manifestConfigs: [
        {
          resourceIdentifier: cm('watched'),
          feedbackScrapeType: 'Watch',
          feedbackRules: [{ type: 'JSONPaths', jsonPaths: [{ name: 'state', path: '.data.state' }] }],
        },
      ],
    });
    const feedback = (w: ManifestWork) =>
      w.status?.resourceStatus?.manifests?.[0]?.statusFeedback?.values?.[0]?.fieldValue.string;
    const first = await cluster.waitForWork(work, 'feedback one', (w) => feedback(w) === 'one' && w);
    expect(conditionStatus(first, 'Degraded')).toBeUndefined();
    // Update keeps an object whose manifest did not change: the edit stays, and is reported.
    await configMaps.patchMerge('watched', { data: { state: 'two' } }, ns);
    await cluster.waitForWork(work, 'feedback two', (w) => feedback(w) === 'two' && w);
  });
});
