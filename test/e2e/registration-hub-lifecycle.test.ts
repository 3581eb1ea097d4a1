// The registration hub over a cluster's life on the real hub control plane: a lease that stops
// being renewed turns Available Unknown with the unreachable taint (and the agent's True takes the
// taints away), deleting a cluster waits for its ManifestWorks before removing namespace and RBAC,
// and of two hub replicas only the elected one reconciles. The agent side is played by the test.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterTaint,
  type ManifestWork,
  managedClusterLeaseName,
  manifestWorkFinalizer,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { type Condition, formatMicroTime, ResourceClient, setCondition } from '../../src/kube/index.ts';
import {
  clusterRbacName,
  hubLeaderLeaseName,
  hubLeaderLeaseNamespace,
  ManagedClusterDeleting,
} from '../../src/registration/hub/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  Cleanups,
  capturingLogger,
  conditionOf,
  createCluster,
  hub,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const scope = uniqueName('hub');
const cleanups = new Cleanups();
const fileCleanups = new Cleanups();
const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
await startScopedHub(fileCleanups, scope);
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

const taintKeys = (cluster: ManagedCluster | undefined) => (cluster?.spec.taints ?? []).map((t) => t.key);

/** What the registration agent does: renew the lease, report availability. */
const agent = {
  renew: (cluster: string) =>
    admin.leases.patchMerge(
      managedClusterLeaseName,
      { spec: { renewTime: formatMicroTime(new Date()) } },
      cluster,
    ),
  /** A read-modify-write at the version read, retried when the hub wrote in between (as the agent does). */
  report: (cluster: string, status: Condition['status']) =>
    waitFor(async () => {
      const current = await admin.clusters.get(cluster);
      const conditions = setCondition(current?.status?.conditions, {
        type: ManagedClusterCondition.Available,
        status,
        reason: 'ManagedClusterAvailable',
        message: 'reported by the test as the agent',
      });
      const resourceVersion = current?.metadata.resourceVersion;
      return admin.clusters.patchStatus(cluster, { metadata: { resourceVersion }, status: { conditions } });
    }, `agent to report Available ${status}`),
};

describe('lease watchdog and taints', () => {
  it('a lease left alone for 5 × leaseDurationSeconds turns Available Unknown and taints the cluster unreachable', async () => {
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: true, leaseDurationSeconds: 2 });
    // Before the agent reports anything, the cluster is unreachable.
    await waitFor(
      async () => taintKeys(await admin.clusters.get(name)).includes(ManagedClusterTaint.Unreachable),
      'unreachable taint',
    );
    await waitFor(() => admin.leases.get(managedClusterLeaseName, name), 'the hub to create the lease');

    // When the last renewal was sent: the deadline counts from its renewTime, stamped after this.
    let renewedAt = 0;
    await waitFor(async () => {
      renewedAt = Date.now();
      await agent.renew(name);
      await agent.report(name, 'True');
      return true;
    }, 'agent to report Available');
    await waitFor(
      async () => taintKeys(await admin.clusters.get(name)).length === 0,
      'taints removed once Available',
    );

    const unknown = await waitFor(
      async () => {
        const available = await conditionOf(name, ManagedClusterCondition.Available);
        return available?.status === 'Unknown' && available;
      },
      'Available Unknown after the lease stopped',
      20_000,
    );
    expect(unknown.reason).toBe('ManagedClusterLeaseUpdateStopped');
    // Not before the deadline (condition times have whole seconds).
    expect(Date.parse(unknown.lastTransitionTime)).toBeGreaterThanOrEqual(renewedAt + 10_000 - 1000);
    expect(Date.parse(unknown.lastTransitionTime)).toBeLessThanOrEqual(renewedAt + 10_000 + 2000);
    await waitFor(
      async () => taintKeys(await admin.clusters.get(name)).includes(ManagedClusterTaint.Unreachable),
      'unreachable taint',
    );
    const taint = (await admin.clusters.get(name))?.spec.taints?.[0];
    expect(taint).toMatchObject({ key: ManagedClusterTaint.Unreachable, effect: 'NoSelect' });

    // The agent comes back: renewed lease, Available True → no taints, and the hub leaves it True.
    await agent.renew(name);
    await agent.report(name, 'True');
    await waitFor(async () => taintKeys(await admin.clusters.get(name)).length === 0, 'taints removed again');
    expect((await conditionOf(name, ManagedClusterCondition.Available))?.status).toBe('True');

    await agent.report(name, 'False');
    await waitFor(
      async () => taintKeys(await admin.clusters.get(name)).join() === ManagedClusterTaint.Unavailable,
      'unavailable taint',
    );
  });
});

describe('deleting a ManagedCluster', () => {
  it('waits for its ManifestWorks to go, then removes namespace and RBAC and lets the cluster go', async () => {
    const name = await createCluster(cleanups, scope);
    await waitFor(
      async () => (await conditionOf(name, ManagedClusterCondition.HubAccepted))?.status === 'True',
      'accepted',
    );
    const work = uniqueName('work');
    // The finalizer a work agent puts on every ManifestWork it applied.
    await works.create({
      metadata: { name: work, namespace: name, finalizers: [manifestWorkFinalizer] },
      spec: { workload: { manifests: [] } },
    });
    cleanups.add(() =>
      works.patchMerge(work, { metadata: { finalizers: null } }, name).catch(() => undefined),
    );

    await admin.clusters.delete(name);
    const deleting = await waitFor(async () => {
      const condition = await conditionOf(name, ManagedClusterDeleting.type);
      return condition?.reason === ManagedClusterDeleting.ResourceRemaining && condition;
    }, 'Deleting condition naming what remains');
    expect(deleting.status).toBe('False');
    expect(deleting.message).toContain(`manifestworks ${work}`);
    await waitFor(
      async () => (await works.get(work, name))?.metadata?.deletionTimestamp,
      'the hub to delete the work',
    );
    expect((await admin.namespaces.get(name))?.metadata?.deletionTimestamp).toBeUndefined();
    expect(await admin.clusterRoles.get(clusterRbacName(name))).toBeDefined();
    expect(await admin.clusters.get(name)).toBeDefined();

    // The work agent finished cleaning the managed cluster.
    await works.patchMerge(work, { metadata: { finalizers: null } }, name);
    await waitFor(async () => !(await admin.clusters.get(name)), 'the ManagedCluster to be gone');
    expect(await admin.clusterRoles.get(clusterRbacName(name))).toBeUndefined();
    expect(await admin.clusterRoleBindings.get(clusterRbacName(name))).toBeUndefined();
    const namespace = await admin.namespaces.get(name);
    expect(namespace === undefined || namespace.metadata?.deletionTimestamp !== undefined).toBe(true);
  });
});

describe('two hub replicas', () => {
  it('only the elected one reconciles, and the other takes over when it stops', async () => {
    const electionScope = uniqueName('hub');
    const lease = uniqueName(hubLeaderLeaseName);
    const replicas: {
      log: ReturnType<typeof capturingLogger>;
      hub: Awaited<ReturnType<typeof startScopedHub>>;
    }[] = [];
    const replicaCleanups = new Cleanups();
    cleanups.add(() => replicaCleanups.run());
    cleanups.add(() => admin.leases.delete(lease, hubLeaderLeaseNamespace, { ignoreNotFound: true }));
    for (const identity of ['replica-a', 'replica-b']) {
      const log = capturingLogger();
      const leaderElection = {
        name: lease,
        identity,
        leaseDurationSeconds: 5,
        renewDeadlineMs: 2000,
        retryPeriodMs: 300,
      };
      replicas.push({
        log,
        hub: await startScopedHub(replicaCleanups, electionScope, { leaderElection, log: log.log }),
      });
    }
    const started = (r: (typeof replicas)[number]) =>
      r.log.lines.filter((l) => l.includes('"msg":"controller started"')).length;
    const leader = await waitFor(() => {
      const leaders = replicas.filter((r) => r.hub.isLeader());
      return leaders.length === 1 && leaders[0];
    }, 'exactly one leader');
    const follower = replicas.find((r) => r !== leader)!;
    // OCM's registration controller's lease place (overridable: this test names its own lease).
    expect([hubLeaderLeaseNamespace, hubLeaderLeaseName]).toEqual([
      'open-cluster-management-hub',
      'registration-controller-lock',
    ]);
    expect((await admin.leases.get(lease, hubLeaderLeaseNamespace))?.spec?.holderIdentity).toBe(
      leader.hub.identity,
    );

    // Clusters are created after this file's own hub, but under the replicas' scope only.
    const first = await createCluster(cleanups, electionScope);
    await waitFor(
      async () => (await conditionOf(first, ManagedClusterCondition.HubAccepted))?.status === 'True',
      'accepted by the leader',
    );
    expect(started(leader)).toBeGreaterThan(0);
    expect(started(follower)).toBe(0);
    expect(follower.hub.isLeader()).toBe(false);

    await leader.hub.stop();
    await waitFor(() => follower.hub.isLeader(), 'the follower to take over', 10_000);
    const second = await createCluster(cleanups, electionScope);
    await waitFor(
      async () => (await conditionOf(second, ManagedClusterCondition.HubAccepted))?.status === 'True',
      'accepted by the new leader',
    );
    expect(started(follower)).toBeGreaterThan(0);
  });
});
