// Lease health on real control planes: the registration agent's add-on lease controller, running
// with the cluster's own hub identity (the RBAC the registration hub grants on acceptance), sets a
// ManagedClusterAddOn's Available from Lease `<addon>` in its install namespace on cluster1, with
// OCM's reasons: renewed by the SDK's lease updater → True; renewals stopped → False; no lease →
// Unknown. Leases here last 1 s (grace 5 s) and add-ons are looked at every second, as OCM's own
// integration tests crank them up.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AddonLeaseUpdater } from '../../src/addon/sdk/agent.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import { ManagedClusterCondition } from '../../src/api/index.ts';
import { ConflictError } from '../../src/errors.ts';
import {
  findCondition,
  formatMicroTime,
  type KubeObject,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';
import {
  type AddonLeaseHealth,
  startAddonLeaseHealth,
} from '../../src/registration/agent/addon/lease-health.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import {
  agentKubeconfig,
  Cleanups,
  conditionOf,
  createCluster,
  hub,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const env = testEnv();
const managed = adminKubeConfig(env.cluster1);
const scope = uniqueName('addon-lease');
const fileCleanups = new Cleanups();
const cleanups = new Cleanups();
const log = logger('addon-lease-health-e2e');

const hubAddons = new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource);
const hubLeases = new ResourceClient<Lease>(hub, leaseResource);
const managedLeases = new ResourceClient<Lease>(managed, leaseResource);
const managedNamespaces = new ResourceClient(managed, {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
});

let cluster = '';
let installNamespace = '';
let health: AddonLeaseHealth | undefined;

beforeAll(async () => {
  await startScopedHub(fileCleanups, scope);
  cluster = await createCluster(fileCleanups, scope);
  await waitFor(
    async () => (await conditionOf(cluster, ManagedClusterCondition.HubAccepted))?.status === 'True',
    `${cluster} accepted`,
  );
  const agentHub = await agentKubeconfig(cluster);
  // The authorizer sees the cluster's new RBAC a moment after the hub writes it.
  const asAgent = new ResourceClient<ManagedClusterAddOn>(agentHub, managedClusterAddOnResource);
  await waitFor(() => asAgent.list({ namespace: cluster }), `${cluster}'s identity to list its add-ons`);

  installNamespace = uniqueName('addon-lease-ns');
  await managedNamespaces.create({ metadata: { name: installNamespace } });
  fileCleanups.add(() => managedNamespaces.delete(installNamespace, undefined, { ignoreNotFound: true }));

  health = startAddonLeaseHealth({
    hubKubeConfig: agentHub,
    managedKubeConfig: managed,
    clusterName: cluster,
    log,
    leaseDurationSeconds: 1,
    syncIntervalMs: 1_000,
  });
  fileCleanups.add(() => health?.stop() ?? Promise.resolve());
  expect(await health.ready).toBe(true);
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

/** A ManagedClusterAddOn in the test cluster's namespace, deleted after the test. */
async function createAddon(spec: ManagedClusterAddOn['spec'] = { installNamespace }): Promise<string> {
  const name = uniqueName('addon');
  cleanups.add(() => hubAddons.delete(name, cluster, { ignoreNotFound: true }));
  await hubAddons.create({ metadata: { name, namespace: cluster }, spec });
  return name;
}

function waitForAvailable(name: string, status: string, reason: string, timeoutMs = 20_000) {
  return waitFor(
    async () => {
      const available = findCondition((await hubAddons.get(name, cluster))?.status?.conditions, 'Available');
      return available?.status === status && available.reason === reason ? available : undefined;
    },
    `add-on ${name} Available ${status} (${reason})`,
    timeoutMs,
  );
}

describe('add-on Lease health', () => {
  it('an add-on whose agent renews its lease turns Available, and unavailable once renewals stop', async () => {
    const name = await createAddon();
    const updater = new AddonLeaseUpdater({
      managedKubeConfig: managed,
      addonName: name,
      namespace: installNamespace,
      leaseDurationSeconds: 1,
      log,
    });
    cleanups.add(() => updater.stop());
    updater.start();

    const available = await waitForAvailable(name, 'True', 'ManagedClusterAddOnLeaseUpdated');
    expect(available.message).toBe(`${name} add-on is available.`);
    expect(await managedLeases.get(name, installNamespace)).toMatchObject({
      spec: { leaseDurationSeconds: 1 },
    });

    await updater.stop();
    const stoppedAt = Date.now();
    const stopped = await waitForAvailable(name, 'False', 'ManagedClusterAddOnLeaseUpdateStopped');
    expect(stopped.message).toBe(`${name} add-on is not available.`);
    // not before the grace period (5 lease durations) has passed since the last renewal
    expect(Date.now() - stoppedAt).toBeGreaterThan(3_000);
  });

  it('an add-on without a lease on either cluster is Unknown (LeaseNotFound)', async () => {
    const name = await createAddon();
    const unknown = await waitForAvailable(name, 'Unknown', 'ManagedClusterAddOnLeaseNotFound');
    expect(unknown.message).toContain(`The status of ${name} add-on is unknown`);
    // and, as OCM's agent does, an event about it in the cluster namespace
    const events = new ResourceClient<
      KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }
    >(hub, { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true });
    const event = await waitFor(
      async () =>
        (await events.list({ namespace: cluster })).items.find(
          (e) => e.reason === 'ManagedClusterAddOnStatusUpdated' && e.regarding?.name === name,
        ),
      `an event about ${name}`,
    );
    expect(event.note).toContain('available condition to "Unknown"');
  });

  it("a lease renewed in the cluster's hub namespace counts when the managed cluster has none (OCM's fallback)", async () => {
    const name = await createAddon({ installNamespace });
    await waitForAvailable(name, 'Unknown', 'ManagedClusterAddOnLeaseNotFound');
    cleanups.add(() => hubLeases.delete(name, cluster, { ignoreNotFound: true }));
    await hubLeases.create({
      metadata: { name, namespace: cluster },
      spec: { leaseDurationSeconds: 1, renewTime: formatMicroTime(new Date()) },
    });
    await waitForAvailable(name, 'True', 'ManagedClusterAddOnLeaseUpdated');
  });

  it('leaves Customized-mode add-ons alone (the hub probes them)', async () => {
    const name = await createAddon();
    // Customized mode and no conditions (the controller may have written one before this, and may
    // write one between our read and our write: then the write is refused, and we read again)
    await waitFor(async () => {
      const current = await hubAddons.get(name, cluster);
      if (!current) throw new Error(`add-on ${name} is gone`);
      try {
        await hubAddons.replaceStatus({ ...current, status: { healthCheck: { mode: 'Customized' } } });
        return true;
      } catch (err) {
        if (err instanceof ConflictError) return false;
        throw err;
      }
    }, `${name}'s status set to Customized mode`);
    // The controller sees its add-ons in order, one at a time, and re-reads before a write: once a
    // Lease-mode add-on created after the change has its condition, no write to the first can follow.
    const witness = await createAddon();
    await waitForAvailable(witness, 'Unknown', 'ManagedClusterAddOnLeaseNotFound');
    expect(
      findCondition((await hubAddons.get(name, cluster))?.status?.conditions, 'Available'),
    ).toBeUndefined();
  });
});
