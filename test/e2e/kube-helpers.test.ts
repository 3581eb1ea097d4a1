// The src/kube helpers against a real hub apiserver: ResourceClient on a CRD and a core kind,
// Informer, runController, LeaderElector and setCondition, each proving what the controllers built
// on them rely on. Every test makes its own objects (unique names and labels) and removes them,
// with every informer, controller and elector it started, in afterEach.
import { describe, expect, it } from 'vitest';
import { type ManagedCluster, managedClusterResource } from '../../src/api/index.ts';
import { ApplyConflictError, ConflictError } from '../../src/errors.ts';
import {
  formatTime,
  Informer,
  isApplyConflict,
  isConflict,
  type KubeObject,
  LeaderElector,
  type Lease,
  leaseResource,
  loadKubeconfig,
  objectKey,
  ResourceClient,
  type ResourceDescriptor,
  runController,
  setCondition,
  splitKey,
} from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const coreKind = (plural: string, kind: string, namespaced: boolean): ResourceDescriptor => {
  return { group: '', version: 'v1', plural, kind, namespaced };
};
const configMapResource = coreKind('configmaps', 'ConfigMap', true);

const env = testEnv();
const hub = loadKubeconfig(env.hub.kubeconfigPath);
const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
const configMaps = new ResourceClient<ConfigMap>(hub, configMapResource);
const leases = new ResourceClient<Lease>(hub, leaseResource);
const { namespace, cleanup } = scratchNamespace(hub, 'kube-helpers');
const setLabel = 'e2e.tether.dev/set';

type Named<T extends KubeObject> = T & { metadata: { name: string } };
async function createCluster(labels: Record<string, string> = {}): Promise<Named<ManagedCluster>> {
  const name = uniqueName('kube-e2e');
  cleanup(() => clusters.delete(name, undefined, { ignoreNotFound: true }));
  const created = await clusters.create({ metadata: { name, labels }, spec: { hubAcceptsClient: false } });
  return { ...created, metadata: { ...created.metadata, name } };
}

async function createConfigMap(set: string): Promise<ConfigMap> {
  const name = uniqueName('cm');
  cleanup(() => configMaps.delete(name, namespace, { ignoreNotFound: true }));
  return configMaps.create({ metadata: { name, namespace, labels: { [setLabel]: set } }, data: { k: 'v1' } });
}

const rvOf = (o: KubeObject | undefined) => o?.metadata?.resourceVersion;
const versions = (objs: KubeObject[]) => Object.fromEntries(objs.map((o) => [objectKey(o), rvOf(o)]));
const activeTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('ResourceClient on ManagedCluster (a CRD)', () => {
  it('create returns the stored object, get answers undefined for a missing name, list filters by label', async () => {
    const set = uniqueName('set');
    const a = await createCluster({ [setLabel]: set });
    const b = await createCluster({ [setLabel]: set });
    await createCluster({ [setLabel]: `${set}-other` });
    expect(a).toMatchObject({ apiVersion: 'cluster.open-cluster-management.io/v1', kind: 'ManagedCluster' });
    expect(a.metadata.uid).toBeTruthy();
    expect(a.spec?.leaseDurationSeconds).toBe(60); // the CRD default, applied by the apiserver

    expect((await clusters.get(a.metadata.name))?.metadata?.uid).toBe(a.metadata.uid);
    expect(await clusters.get(uniqueName('missing'))).toBeUndefined();

    const listed = await clusters.list({ labelSelector: `${setLabel}=${set}` });
    const names = listed.items.map((c) => c.metadata?.name);
    expect(names.sort()).toEqual([a.metadata.name, b.metadata.name].sort());
    expect(listed.items.every((c) => c.kind === 'ManagedCluster')).toBe(true);
    expect(listed.resourceVersion).toMatch(/^\d+$/);
  });

  it('replace with a stale resourceVersion throws ConflictError and leaves the object as it was', async () => {
    const stale = await createCluster();
    const fresh = await clusters.replace({ ...stale, spec: { ...stale.spec, hubAcceptsClient: true } });
    expect(fresh.metadata?.resourceVersion).not.toBe(stale.metadata.resourceVersion);

    const err = await clusters
      .replace({ ...stale, spec: { ...stale.spec, leaseDurationSeconds: 5 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(isConflict(err)).toBe(true);
    expect(isApplyConflict(err)).toBe(false);
    const stored = await clusters.get(stale.metadata.name);
    expect(stored?.metadata?.resourceVersion).toBe(fresh.metadata?.resourceVersion);
    expect(stored?.spec).toMatchObject({ hubAcceptsClient: true, leaseDurationSeconds: 60 });
  });

  it('server-side apply is idempotent for one manager; a rival manager gets 409 unless it forces', async () => {
    const name = uniqueName('kube-e2e-ssa');
    cleanup(() => clusters.delete(name, undefined, { ignoreNotFound: true }));
    const desired = { metadata: { name }, spec: { hubAcceptsClient: true, leaseDurationSeconds: 30 } };
    const first = await clusters.apply(desired, { fieldManager: 'e2e-owner' });
    const again = await clusters.apply(desired, { fieldManager: 'e2e-owner' });
    expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    expect(again.spec).toEqual(first.spec);

    const rival = { metadata: { name }, spec: { leaseDurationSeconds: 90 } };
    const err = await clusters.apply(rival, { fieldManager: 'e2e-rival' }).catch((e: unknown) => e);
    // A field-ownership conflict, not a stale write: retrying it would fail the same way.
    expect(err).toBeInstanceOf(ApplyConflictError);
    expect(err).toMatchObject({ status: 409, reason: 'Conflict', code: 'TETHER_API_ERROR' });
    expect(isApplyConflict(err)).toBe(true);
    expect(isConflict(err)).toBe(false);
    expect((err as ApplyConflictError).conflicts).toEqual([
      { field: '.spec.leaseDurationSeconds', message: expect.stringContaining('"e2e-owner"') },
    ]);
    expect((err as Error).message).toContain('e2e-owner');
    expect((await clusters.get(name))?.spec?.leaseDurationSeconds).toBe(30);

    const forced = await clusters.apply(rival, { fieldManager: 'e2e-rival', force: true });
    expect(forced.spec).toMatchObject({ hubAcceptsClient: true, leaseDurationSeconds: 90 });
    const managers = (forced.metadata?.managedFields ?? []).map((f) => (f as { manager?: string }).manager);
    expect(managers).toEqual(expect.arrayContaining(['e2e-owner', 'e2e-rival']));
  });

  it('patchStatus and applyStatus go through the status subresource and change only status', async () => {
    const created = await createCluster();
    const { name } = created.metadata;
    const patched = await clusters.patchStatus(name, {
      spec: { hubAcceptsClient: true },
      status: { version: { kubernetes: 'v1.31.0' } },
    });
    expect(patched.status?.version?.kubernetes).toBe('v1.31.0');
    expect(patched.spec?.hubAcceptsClient).toBe(false);
    expect(patched.metadata?.generation).toBe(created.metadata.generation);

    const clusterClaims = [{ name: 'id.k8s.io', value: 'cluster-a' }];
    const claimed = { metadata: { name }, spec: { hubAcceptsClient: true }, status: { clusterClaims } };
    const applied = await clusters.applyStatus(claimed, { fieldManager: 'e2e-status' });
    expect(applied.status?.clusterClaims).toEqual(clusterClaims);
    expect(applied.status?.version?.kubernetes).toBe('v1.31.0');
    const stored = await clusters.get(name);
    expect(stored?.spec?.hubAcceptsClient).toBe(false);
    expect(stored?.metadata?.generation).toBe(created.metadata.generation);
  });
  it('delete answers true, then false with ignoreNotFound, and throws NotFound without it', async () => {
    const { name } = (await createCluster()).metadata;
    expect(await clusters.delete(name)).toBe(true);
    expect(await clusters.get(name)).toBeUndefined(); // no finalizers: gone at once
    expect(await clusters.delete(name, undefined, { ignoreNotFound: true })).toBe(false);
    await expect(clusters.delete(name)).rejects.toMatchObject({ status: 404, reason: 'NotFound' });
  });
});

describe('ResourceClient on ConfigMap (a core kind)', () => {
  it('list follows continue tokens: 25 ConfigMaps with pageSize 10 all come back', async () => {
    const set = uniqueName('paging');
    const created = await Promise.all(Array.from({ length: 25 }, () => createConfigMap(set)));
    const paged = new ResourceClient<ConfigMap>(hub, configMapResource, { pageSize: 10 });
    const listed = await paged.list({ namespace, labelSelector: `${setLabel}=${set}` });
    expect(listed.items).toHaveLength(25);
    expect(new Set(listed.items.map((c) => c.metadata?.name))).toEqual(
      new Set(created.map((c) => c.metadata?.name)),
    );
    expect(listed.items.every((c) => c.kind === 'ConfigMap' && c.apiVersion === 'v1')).toBe(true);
  });
});

type InformerEvent = { type: 'add' | 'update' | 'delete'; name?: string; rv?: string; oldRv?: string };

function recordEvents(informer: Informer<ConfigMap>): InformerEvent[] {
  const events: InformerEvent[] = [];
  const rec = (type: InformerEvent['type'], o: ConfigMap, old?: ConfigMap) =>
    events.push({ type, name: o.metadata?.name, rv: rvOf(o), oldRv: rvOf(old) });
  informer.addHandlers({
    add: (o) => rec('add', o),
    update: (old, o) => rec('update', o, old),
    delete: (o) => rec('delete', o),
  });
  return events;
}

async function startInformer(set: string): Promise<Informer<ConfigMap>> {
  const informer = new Informer(configMaps, { namespace, labelSelector: `${setLabel}=${set}` });
  cleanup(() => informer.stop());
  informer.start();
  await informer.waitForSync(10_000);
  return informer;
}

describe('Informer', () => {
  it('a synced cache matches a list, then add, update and delete events follow later changes', async () => {
    const set = uniqueName('inf');
    for (let i = 0; i < 3; i++) await createConfigMap(set);
    const informer = await startInformer(set);
    const listed = await configMaps.list({ namespace, labelSelector: `${setLabel}=${set}` });
    expect(versions(informer.list())).toEqual(versions(listed.items));
    expect(informer.list()).toHaveLength(3);

    const events = recordEvents(informer);
    const waitFor = (what: string, match: (e: InformerEvent) => boolean) =>
      pollUntil(() => events.find(match), { timeoutMs: 10_000, intervalMs: 50, description: what });
    const created = await createConfigMap(set);
    const name = created.metadata?.name ?? '';
    await waitFor(`add of ${name}`, (e) => e.type === 'add' && e.name === name);
    expect(informer.getByName(name, namespace)?.data).toEqual({ k: 'v1' });
    const updated = await configMaps.patchMerge(name, { data: { k: 'v2' } }, namespace);
    const update = await waitFor(`update of ${name}`, (e) => e.type === 'update' && e.name === name);
    expect(update).toMatchObject({ rv: rvOf(updated), oldRv: rvOf(created) });
    expect(informer.getByName(name, namespace)?.data).toEqual({ k: 'v2' });
    await configMaps.delete(name, namespace);
    await waitFor(`delete of ${name}`, (e) => e.type === 'delete' && e.name === name);
    expect(informer.getByName(name, namespace)).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['add', 'update', 'delete']);
  });

  it('after stop() resolves the informer emits nothing more and holds no timers', async () => {
    const set = uniqueName('inf-stop');
    const timersBefore = activeTimers();
    const informer = await startInformer(set);
    const events = recordEvents(informer);
    let stopped = false;
    void informer.stop().then(() => {
      stopped = true;
    });
    await pollUntil(() => stopped, { timeoutMs: 5000, intervalMs: 20, description: 'stop() to resolve' });
    expect(informer.isStopped).toBe(true);
    // Its watch silence timer and resync interval are ref'd: left behind, they would keep Node alive.
    await pollUntil(() => activeTimers() <= timersBefore, {
      timeoutMs: 3000,
      description: `active timers back to ${timersBefore}`,
    });

    // A change a running informer (the witness) sees must not reach the stopped one.
    const witness = await startInformer(set);
    const seen = recordEvents(witness);
    const name = (await createConfigMap(set)).metadata?.name;
    const witnessed = () => seen.some((e) => e.type === 'add' && e.name === name);
    await pollUntil(witnessed, {
      timeoutMs: 10_000,
      intervalMs: 50,
      description: `the witness to see ${name}`,
    });
    expect(events).toEqual([]);
    expect(informer.list()).toEqual([]);
  });
});

describe('runController', () => {
  it('reconciles every object, never one key twice at once, and retries a reconcile that threw', async () => {
    const set = uniqueName('ctl');
    const objects = await Promise.all(Array.from({ length: 5 }, () => createConfigMap(set)));
    const keys = objects.map((o) => objectKey(o));
    const flakyKey = keys[0] ?? '';
    const countAnnotation = 'e2e.tether.dev/reconciled';
    const informer = new Informer(configMaps, { namespace, labelSelector: `${setLabel}=${set}` });
    const runs = new Map<string, number>();
    const inFlight = new Map<string, number>();
    const stats = { maxPerKey: 0, running: 0, maxRunning: 0 };
    const controller = runController({
      name: 'kube-helpers-e2e',
      informers: [informer as Informer<KubeObject>],
      workers: 3,
      reconcile: async (key) => {
        inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
        runs.set(key, (runs.get(key) ?? 0) + 1);
        stats.maxPerKey = Math.max(stats.maxPerKey, inFlight.get(key) ?? 0);
        stats.maxRunning = Math.max(stats.maxRunning, ++stats.running);
        try {
          if (key === flakyKey && runs.get(key) === 1) throw new Error('injected failure');
          const { namespace: ns, name } = splitKey(key);
          const count = Number(informer.getByName(name, ns)?.metadata?.annotations?.[countAnnotation] ?? 0);
          if (count >= 3) return;
          const annotations = { [countAnnotation]: String(count + 1) };
          const patched = await configMaps.patchMerge(name, { metadata: { annotations } }, ns);
          // Wait for our own write to come back through the watch: it re-adds this key while it runs.
          const cached = () => rvOf(informer.getByName(name, ns)) === rvOf(patched);
          await pollUntil(cached, { timeoutMs: 10_000, intervalMs: 20, description: `${key} in the cache` });
        } finally {
          inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
          stats.running--;
        }
      },
    });
    cleanup(() => controller.stop());
    expect(await controller.ready).toBe(true);
    await pollUntil(
      async () => {
        const { items } = await configMaps.list({ namespace, labelSelector: `${setLabel}=${set}` });
        const done = items.every((o) => o.metadata?.annotations?.[countAnnotation] === '3');
        return done && controller.queue.isIdle();
      },
      { timeoutMs: 30_000, description: 'every ConfigMap reconciled to count 3 and the queue idle' },
    );
    expect(stats.maxPerKey).toBe(1);
    expect(stats.maxRunning).toBeGreaterThan(1); // the workers did run different keys side by side
    // Three writes, each re-adding the key, and a last run that finds nothing to do (+1 for the throw).
    for (const key of keys) expect(runs.get(key)).toBeGreaterThanOrEqual(key === flakyKey ? 5 : 4);
  });
});

describe('LeaderElector', () => {
  it('of two electors on one Lease exactly one leads, and the other takes over quickly when it stops', async () => {
    const leaseName = uniqueName('lease');
    cleanup(() => leases.delete(leaseName, namespace, { ignoreNotFound: true }));
    const started: string[] = [];
    const stoppedLeading: string[] = [];
    const electors = ['candidate-a', 'candidate-b'].map((identity) => {
      const elector = new LeaderElector({
        kubeconfig: hub,
        namespace,
        name: leaseName,
        identity,
        // Far longer than the takeover deadline below: only the release on stop() can make it.
        leaseDurationSeconds: 15,
        renewDeadlineMs: 2000,
        retryPeriodMs: 300,
        onStartedLeading: () => void started.push(identity),
        onStoppedLeading: () => void stoppedLeading.push(identity),
      });
      cleanup(() => elector.stop());
      return { identity, elector };
    });
    for (const { elector } of electors) elector.start();

    const { leader, follower } = await pollUntil(
      () => {
        const leaders = electors.filter((e) => e.elector.isLeader());
        const follower = electors.find((e) => !e.elector.isLeader());
        const leader = leaders.length === 1 ? leaders[0] : undefined;
        return leader && follower?.elector.leader === leader.identity && { leader, follower };
      },
      { timeoutMs: 10_000, intervalMs: 50, description: 'one leader, seen by the other elector' },
    );
    expect(started).toEqual([leader.identity]);
    expect((await leases.get(leaseName, namespace))?.spec?.holderIdentity).toBe(leader.identity);

    await leader.elector.stop();
    expect(stoppedLeading).toEqual([leader.identity]);
    const takeover = { timeoutMs: 5000, intervalMs: 50, description: `${follower.identity} to take over` };
    await pollUntil(() => follower.elector.isLeader(), takeover);
    expect(leader.elector.isLeader()).toBe(false);
    expect(started).toEqual([leader.identity, follower.identity]);
    const lease = await leases.get(leaseName, namespace);
    expect(lease?.spec).toMatchObject({ holderIdentity: follower.identity, leaseTransitions: 1 });
  });
});

describe('setCondition on ManagedCluster status', () => {
  for (const via of ['patchStatus', 'applyStatus'] as const) {
    it(`written with ${via}: the same status keeps lastTransitionTime, a new status moves it`, async () => {
      const { name } = (await createCluster()).metadata;
      const write = async (conditions: ReturnType<typeof setCondition>) => {
        const status = { conditions };
        const out =
          via === 'patchStatus'
            ? await clusters.patchStatus(name, { status })
            : await clusters.applyStatus({ metadata: { name }, status }, { fieldManager: 'e2e-conditions' });
        return out.status?.conditions;
      };
      const joined = {
        type: 'ManagedClusterJoined',
        reason: 'ManagedClusterJoined',
        status: 'True' as const,
      };
      const [t0, t1, t2] = [120, 60, 0].map((ago) => new Date(Date.now() - ago * 1000)) as [Date, Date, Date];
      const first = await write(setCondition([], { ...joined, message: 'on' }, undefined, t0));
      expect(first?.[0]?.lastTransitionTime).toBe(formatTime(t0));
      // Same status later: reason and message follow the write, the transition time stays at t0.
      const second = await write(setCondition(first, { ...joined, message: 'still on' }, undefined, t1));
      expect(second?.[0]).toMatchObject({ message: 'still on', lastTransitionTime: formatTime(t0) });
      const changed = setCondition(second, { ...joined, status: 'False', message: 'left' }, undefined, t2);
      const third = await write(changed);
      expect(third?.[0]).toMatchObject({ status: 'False', lastTransitionTime: formatTime(t2) });
      expect(third).toHaveLength(1);
      expect((await clusters.get(name))?.status?.conditions).toEqual(third);
    });
  }
});
