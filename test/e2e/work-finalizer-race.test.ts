// The agent writes its hub finalizer and the AppliedManifestWork of a new work at the same time.
// A work deleted before the finalizer went on (created and deleted at once, the agent's cache not
// caught up yet) must not leave that AppliedManifestWork behind for the orphan grace period (an
// hour by default): the agent lets it go at once, and nothing of the work is applied.
// A deleted work is released at the resourceVersion the agent's own Deleting status write returned,
// not at its cache's older one (which only earned a 409 and a retry for every work whose watch event
// had not come back yet).
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  type AppliedManifestWork,
  appliedManifestWorkResource,
  type ManifestWork,
  ManifestWorkCondition,
  manifestWorkFinalizer,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { findCondition, Informer, ResourceClient } from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';
import { AgentBoundary } from '../../src/work/agent/agent-boundary.ts';
import { AppliedWorkStore } from '../../src/work/agent/applied-work.ts';
import { ManifestApplier } from '../../src/work/agent/apply.ts';
import { ManagedClients } from '../../src/work/agent/clients.ts';
import { ManagedDiscovery } from '../../src/work/agent/discovery.ts';
import { ExecutorAuthorizer } from '../../src/work/agent/executor.ts';
import { WorkFinalizer } from '../../src/work/agent/finalize.ts';
import { ManifestWorkReconciler } from '../../src/work/agent/reconciler.ts';
import {
  appliedWorks,
  configMap,
  hubHash,
  hubWorks,
  kinds,
  managed,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
} from './fixtures/work.ts';

let cluster: WorkCluster;
let ns: string;
const informers: Informer<ManifestWork | AppliedManifestWork>[] = [];

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-race');
  ns = await cluster.managedNamespace('work-race');
});
afterAll(async () => {
  for (const informer of informers) await informer.stop();
  await cluster?.cleanup();
});

it('a work deleted before the agent put its finalizer on leaves no AppliedManifestWork behind', async () => {
  const work = unique('gone');
  await cluster.createWork(work, [configMap(ns, 'race-a')]);
  const log = logger('work-agent', { cluster: cluster.name });
  const works = new ResourceClient<ManifestWork>(cluster.hubKc, manifestWorkResource);
  const workInformer = new Informer<ManifestWork>(works, { namespace: cluster.name, log });
  const appliedInformer = new Informer<AppliedManifestWork>(
    new ResourceClient<AppliedManifestWork>(managed, appliedManifestWorkResource),
    { log },
  );
  informers.push(workInformer, appliedInformer);
  for (const informer of [workInformer, appliedInformer]) {
    informer.start();
    await informer.waitForSync(30_000);
  }
  // The agent's cache still holds the work while it is deleted on the hub (no finalizer: gone at once).
  await workInformer.stop();
  await hubWorks.delete(work, cluster.name);
  expect(await cluster.getWork(work)).toBeUndefined();
  expect(workInformer.getByName(work, cluster.name)).toBeDefined();

  const applied = new AppliedWorkStore(managed, hubHash, cluster.agentId);
  const clients = new ManagedClients(managed);
  const reconciler = new ManifestWorkReconciler({
    clusterName: cluster.name,
    works,
    workInformer,
    appliedInformer,
    applied,
    applier: new ManifestApplier(
      new ManagedDiscovery(managed),
      clients,
      new ExecutorAuthorizer(managed),
      new AgentBoundary(managed),
    ),
    finalizer: new WorkFinalizer({
      works,
      clusterName: cluster.name,
      applied,
      clients,
      evictionGracePeriodMs: 60 * 60_000,
      log,
    }),
    clients,
    resyncIntervalMs: 30_000,
    log,
  });
  await expect(reconciler.reconcile(work)).rejects.toThrow(/not ?found/i);
  expect(await appliedWorks.get(`${hubHash}-${work}`)).toBeUndefined();
  expect(await onManaged(kinds.configMap).get('race-a', ns)).toBeUndefined();
});

it('a deleted work is released from a copy older than the agent’s Deleting write, without a conflict', async () => {
  const work = unique('stale');
  await hubWorks.create({
    metadata: { name: work, namespace: cluster.name, finalizers: [manifestWorkFinalizer] },
    spec: { workload: { manifests: [configMap(ns, 'stale-a')] } },
  });
  await hubWorks.delete(work, cluster.name);
  // What the agent's cache holds: deleting, with our finalizer, no Deleting condition yet.
  const cached = await cluster.getWork(work);
  expect(cached?.metadata.deletionTimestamp).toBeDefined();
  expect(findCondition(cached?.status?.conditions, ManifestWorkCondition.Deleting)).toBeUndefined();

  const log = logger('work-agent', { cluster: cluster.name });
  const works = new ResourceClient<ManifestWork>(cluster.hubKc, manifestWorkResource);
  const finalizer = new WorkFinalizer({
    works,
    clusterName: cluster.name,
    applied: new AppliedWorkStore(managed, hubHash, cluster.agentId),
    clients: new ManagedClients(managed),
    evictionGracePeriodMs: 60 * 60_000,
    log,
  });
  // The Deleting status write moves the resourceVersion past the cached copy's: removing the
  // finalizer at the cached one would be a 409.
  await expect(finalizer.finalizeWork(cached as ManifestWork)).resolves.toEqual({});
  expect(await cluster.getWork(work)).toBeUndefined();
});
