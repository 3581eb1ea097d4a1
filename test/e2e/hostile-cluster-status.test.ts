// Issue 23, a hostile managed-cluster admin holding its agent's hub credential: it writes status of
// its own ManagedCluster, ManifestWork and ManagedClusterAddOn with tens of thousands of entries or
// a 2 MiB string. The hub apiserver refuses each write with 422 naming the field (the CRD limits
// of src/api/peer-limits.ts), nothing oversized is stored for hub watchers to hold, and the
// registration hub keeps serving other clusters meanwhile: it accepts a newcomer and its lease
// watchdog still judges another cluster. The attacker is a client with the cluster's agent
// certificate minted from the hub CA, as the hub would have signed it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ManagedClusterAddOn,
  type ManifestWork,
  managedClusterAddOnResource,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { ApiError } from '../../src/errors.ts';
import { type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { whileAttacking } from './fixtures/hostile-cluster.ts';
import {
  admin,
  agentKubeconfig,
  Cleanups,
  clientsFor,
  createCluster,
  hub,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const scope = uniqueName('hostile-status');
const cleanups = new Cleanups();
let attacker: string;
let agent: ReturnType<typeof clientsFor>;

beforeAll(async () => {
  await startScopedHub(cleanups, scope, { leaseGraceFactor: 1 });
  attacker = await createCluster(cleanups, scope);
  agent = clientsFor(await agentKubeconfig(attacker));
  await waitFor(
    () => agent.clusters.get(attacker).then(Boolean, () => false),
    `the hub to grant ${attacker}'s agent its ManagedCluster`,
  );
});
afterAll(() => cleanups.run());

/** The write's refusal: 422 Invalid naming `field` (a 2 MiB value is not echoed back whole). */
async function refusedAsInvalid(write: Promise<unknown>, field: string): Promise<ApiError> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ApiError))
    throw new Error(`the write was not refused by the apiserver: ${String(err)}`);
  expect({ status: err.status, reason: err.reason }).toEqual({ status: 422, reason: 'Invalid' });
  expect(err.message).toContain(field);
  expect(err.message.length).toBeLessThan(64 * 1024);
  return err;
}

const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const conditions = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    type: `attack${i}.example.com`,
    status: 'True',
    reason: 'Attack',
    message: '',
    lastTransitionTime: now,
  }));
const twoMiB = 'x'.repeat(2 * 1024 * 1024);

/** Whether the stored object is still small: nothing oversized reached etcd or any hub watch. */
const storedSize = (obj: KubeObject | undefined) => JSON.stringify(obj ?? {}).length;

describe('a hostile managed cluster writing huge status', () => {
  it('a managed cluster writing a huge ManagedCluster status is refused and the hub keeps serving other clusters', async () => {
    const attacks = [
      () =>
        refusedAsInvalid(
          agent.clusters.patchStatus(attacker, { status: { conditions: conditions(3_000) } }),
          'status.conditions',
        ),
      () => {
        const claims = Array.from({ length: 20_000 }, (_, i) => ({ name: `claim${i}`, value: 'x' }));
        return refusedAsInvalid(
          agent.clusters.patchStatus(attacker, { status: { clusterClaims: claims } }),
          'status.clusterClaims',
        );
      },
      () =>
        refusedAsInvalid(
          agent.clusters.patchStatus(attacker, { status: { version: { kubernetes: twoMiB } } }),
          'status.version.kubernetes',
        ),
      () => {
        const capacity = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`r${i}`, '1']));
        return refusedAsInvalid(
          agent.clusters.patchStatus(attacker, { status: { capacity } }),
          'status.capacity',
        );
      },
    ];
    const served = await whileAttacking(cleanups, scope, attacks);
    expect(served.acceptedMs).toBeLessThan(15_000);
    expect(storedSize(await admin.clusters.get(attacker))).toBeLessThan(64 * 1024);
  });

  it('a managed cluster writing a huge ManifestWork status is refused and the hub keeps serving other clusters', async () => {
    const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
    const name = uniqueName('work');
    cleanups.add(() => works.delete(name, attacker, { ignoreNotFound: true }));
    await works.create({ metadata: { name, namespace: attacker }, spec: { workload: { manifests: [] } } });
    const agentWorks = new ResourceClient<ManifestWork>(agent.clusters.kubeconfig, manifestWorkResource);
    const manifests = Array.from({ length: 10_000 }, (_, i) => ({
      resourceMeta: { ordinal: i },
      conditions: [],
    }));
    const attacks = [
      () =>
        refusedAsInvalid(
          agentWorks.patchStatus(name, { status: { resourceStatus: { manifests } } }, attacker),
          'status.resourceStatus.manifests',
        ),
      () =>
        refusedAsInvalid(
          agentWorks.patchStatus(name, { status: { conditions: conditions(3_000) } }, attacker),
          'status.conditions',
        ),
    ];
    const served = await whileAttacking(cleanups, scope, attacks);
    expect(served.acceptedMs).toBeLessThan(15_000);
    expect(storedSize(await works.get(name, attacker))).toBeLessThan(64 * 1024);
  });

  it('a managed cluster writing a huge ManagedClusterAddOn status is refused and the hub keeps serving other clusters', async () => {
    const addons = new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource);
    const name = uniqueName('addon');
    cleanups.add(() => addons.delete(name, attacker, { ignoreNotFound: true }));
    await addons.create({ metadata: { name, namespace: attacker }, spec: {} });
    const agentAddons = new ResourceClient<ManagedClusterAddOn>(
      agent.clusters.kubeconfig,
      managedClusterAddOnResource,
    );
    const relatedObjects = Array.from({ length: 10_000 }, (_, i) => ({
      group: '',
      resource: 'configmaps',
      name: `o${i}`,
    }));
    const attacks = [
      () =>
        refusedAsInvalid(
          agentAddons.patchStatus(name, { status: { relatedObjects } }, attacker),
          'status.relatedObjects',
        ),
      () =>
        refusedAsInvalid(
          agentAddons.patchStatus(name, { status: { conditions: conditions(3_000) } }, attacker),
          'status.conditions',
        ),
      () =>
        refusedAsInvalid(
          agentAddons.patchStatus(name, { status: { namespace: twoMiB } }, attacker),
          'status.namespace',
        ),
    ];
    const served = await whileAttacking(cleanups, scope, attacks);
    expect(served.acceptedMs).toBeLessThan(15_000);
    expect(storedSize(await addons.get(name, attacker))).toBeLessThan(64 * 1024);
  });
});
