// What a joined registration agent keeps reporting on the hub: Available from probing the managed
// apiserver (through a relay the test can cut), lease renewals, capacity summed over nodes, and
// ClusterClaims — without fighting the hub over its own conditions. The hub is played by the test
// (test/registration/agent/fake-hub.ts); cluster1 is the managed cluster.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClusterClaim,
  clusterClaimResource,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterLeaseName,
  WellKnownClusterClaim,
} from '../../src/api/index.ts';
import { type Condition, findCondition, loadKubeconfig, ResourceClient } from '../../src/kube/index.ts';
import { type Node, nodeResource } from '../../src/registration/agent/kinds.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { type AgentFixture, agentFixture } from './fixtures/registration-agent.ts';
import { startTcpRelay } from './fixtures/tcp-relay.ts';

const env = testEnv();
let fx: AgentFixture | undefined;
const cleanups: Array<() => Promise<unknown>> = [];

async function fixture(prefix: string): Promise<AgentFixture> {
  fx = await agentFixture(env, prefix);
  return fx;
}

afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
  for (const step of cleanups.splice(0).reverse()) await step();
});

const condition = (mc: ManagedCluster | undefined, type: string): Condition | undefined =>
  findCondition(mc?.status?.conditions, type);

/** Poll the hub's ManagedCluster until `check` holds; returns it. */
function waitForCluster(f: AgentFixture, description: string, check: (mc: ManagedCluster) => boolean) {
  return pollUntil(
    async () => {
      const mc = await f.cluster();
      return mc && check(mc) ? mc : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, description },
  );
}

const availableIs = (status: string) => (mc: ManagedCluster) =>
  condition(mc, ManagedClusterCondition.Available)?.status === status;

describe('registration agent status on the hub', () => {
  it('Available turns False after sustained failure of the managed apiserver, and True once it is back', async () => {
    const f = await fixture('reg-avail');
    const relay = await startTcpRelay(env.cluster1.apiserverUrl);
    cleanups.push(() => relay.close());
    const managed = loadKubeconfig(env.cluster1.kubeconfigPath);
    managed.clusters = managed.clusters.map((c) => ({ ...c, server: relay.url }));
    await f.writeBootstrapSecret();
    const agent = await f.start({ managedKubeConfig: managed, unavailableAfterFailures: 3 });
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    const up = await waitForCluster(f, 'Available True', availableIs('True'));
    expect(up.spec.managedClusterClientConfigs?.[0]?.url).toBe(relay.url);

    relay.cut();
    const cutAt = Date.now();
    const down = await waitForCluster(f, 'Available False', availableIs('False'));
    // three failed probes about a second apart: not the first failure
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(1500);
    expect(condition(down, ManagedClusterCondition.Available)).toMatchObject({
      reason: 'ManagedClusterKubeAPIServerUnavailable',
      message: expect.stringContaining('The kube-apiserver is not ok'),
    });
    expect(condition(down, ManagedClusterCondition.Joined)?.status).toBe('True');
    expect(down.status?.version).toEqual(up.status?.version); // kept while it cannot be read

    relay.restore();
    const back = await waitForCluster(f, 'Available True again', availableIs('True'));
    expect(condition(back, ManagedClusterCondition.Available)?.reason).toBe('ManagedClusterAvailable');
  });

  it('a managed apiserver outage reaches the hub within seconds, not a status interval later', async () => {
    const f = await fixture('reg-outage');
    const relay = await startTcpRelay(env.cluster1.apiserverUrl);
    cleanups.push(() => relay.close());
    const managed = loadKubeconfig(env.cluster1.kubeconfigPath);
    managed.clusters = managed.clusters.map((c) => ({ ...c, server: relay.url }));
    await f.writeBootstrapSecret();
    // A status interval far longer than the test may wait: only the health check can be this quick.
    const agent = await f.start({
      managedKubeConfig: managed,
      statusIntervalSeconds: 120,
      healthCheckIntervalSeconds: 1,
    });
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    await waitForCluster(f, 'Available True', availableIs('True'));

    relay.cut();
    const cutAt = Date.now();
    await waitForCluster(f, 'Available False', availableIs('False'));
    const detectedMs = Date.now() - cutAt;
    expect(detectedMs).toBeLessThan(20_000);
    relay.restore();
    await waitForCluster(f, 'Available True again', availableIs('True'));
  });

  it('waits for the hub to create the lease (it may not), then renews it every leaseDurationSeconds', async () => {
    const f = await fixture('reg-lease');
    await f.writeBootstrapSecret();
    const agent = await f.start({ leaseDurationSeconds: 2 });
    await f.acceptWhenCreated({ createLease: false });
    await agent.joined(60_000);
    expect((await f.cluster())?.spec.leaseDurationSeconds).toBe(2);
    // The agent's RBAC has no lease create: it must not have made one in a lease period or two.
    await sleep(3000);
    expect(await f.hub.leases.get(managedClusterLeaseName, f.clusterName)).toBeUndefined();

    await f.hub.createLease(f.clusterName);
    const renewTime = async () =>
      new Date(
        (await f.hub.leases.get(managedClusterLeaseName, f.clusterName))?.spec?.renewTime ?? 0,
      ).getTime();
    const hourAgo = Date.now() - 3000_000;
    const first = await pollUntil(async () => ((await renewTime()) > hourAgo ? renewTime() : undefined), {
      timeoutMs: 10_000,
      description: 'the agent to renew the lease the hub created',
    });
    const second = await pollUntil(async () => ((await renewTime()) > first ? renewTime() : undefined), {
      timeoutMs: 10_000,
      description: 'a second renewal',
    });
    // every 2 s plus up to 25% jitter
    expect(second - first).toBeGreaterThanOrEqual(1900);
    expect(second - first).toBeLessThanOrEqual(4000);
  });

  it('capacity and allocatable are the sums over the nodes (unschedulable ones not allocatable); no nodes is 0', async () => {
    const f = await fixture('reg-nodes');
    const nodes = new ResourceClient<Node>(f.managed, nodeResource);
    expect((await nodes.list()).items.map((n) => n.metadata?.name)).toEqual([]); // cluster1 runs no kubelet
    await f.writeBootstrapSecret();
    const agent = await f.start();
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    await waitForCluster(f, 'capacity 0 without nodes', (mc) => mc.status?.capacity?.cpu === '0');

    const worker = uniqueName('worker');
    const cordoned = uniqueName('cordoned');
    cleanups.push(() => nodes.delete(worker, undefined, { ignoreNotFound: true }));
    cleanups.push(() => nodes.delete(cordoned, undefined, { ignoreNotFound: true }));
    await nodes.create({ metadata: { name: worker } });
    await nodes.patchStatus(worker, {
      status: {
        capacity: { cpu: '2', memory: '1Gi', pods: '110' },
        allocatable: { cpu: '1900m', memory: '900Mi', pods: '110' },
      },
    });
    await nodes.create({ metadata: { name: cordoned }, spec: { unschedulable: true } } as Node);
    await nodes.patchStatus(cordoned, {
      status: { capacity: { cpu: '500m', memory: '512Mi' }, allocatable: { cpu: '500m', memory: '512Mi' } },
    });

    const mc = await waitForCluster(
      f,
      'capacity summed over both nodes',
      (c) => c.status?.capacity?.cpu === '2500m',
    );
    expect(mc.status?.capacity).toEqual({ cpu: '2500m', memory: '1536Mi', pods: '110' });
    expect(mc.status?.allocatable).toEqual({ cpu: '1900m', memory: '900Mi', pods: '110' });
  });

  it('syncs ClusterClaims: reserved first, custom sorted and cut at maxCustomClusterClaims, spoke-only kept local', async () => {
    const f = await fixture('reg-claims');
    const claims = new ResourceClient<ClusterClaim>(f.managed, clusterClaimResource);
    expect((await claims.list()).items.map((c) => c.metadata.name)).toEqual([]);
    const put = async (name: string, value: string, labels?: Record<string, string>) => {
      cleanups.push(() => claims.delete(name, undefined, { ignoreNotFound: true }));
      await claims.create({ metadata: { name, ...(labels ? { labels } : {}) }, spec: { value } });
    };
    const p = f.clusterName;
    await put(`${p}.c.example.com`, 'c');
    await put(`${p}.a.example.com`, 'a');
    await put(`${p}.b.example.com`, 'b');
    await put(`${p}.local.example.com`, 'stays here', { 'open-cluster-management.io/spoke-only': '' });
    await put(WellKnownClusterClaim.Id, p);
    await f.writeBootstrapSecret();
    const agent = await f.start({ maxCustomClusterClaims: 2 });
    await f.acceptWhenCreated();
    await agent.joined(60_000);

    const names = (mc: ManagedCluster) => (mc.status?.clusterClaims ?? []).map((c) => c.name).join(',');
    const mc = await waitForCluster(
      f,
      'claims on the hub',
      (c) => (c.status?.clusterClaims?.length ?? 0) > 0,
    );
    expect(mc.status?.clusterClaims).toEqual([
      { name: 'id.k8s.io', value: p },
      { name: `${p}.a.example.com`, value: 'a' },
      { name: `${p}.b.example.com`, value: 'b' },
    ]);

    await claims.delete(`${p}.a.example.com`);
    await claims.patchMerge(`${p}.c.example.com`, { spec: { value: 'c2' } });
    const after = await waitForCluster(f, 'claims to follow the change', (c) =>
      (c.status?.clusterClaims ?? []).some((claim) => claim.value === 'c2'),
    );
    expect(names(after)).not.toContain('.a.example');
    expect(after.status?.clusterClaims).toEqual([
      { name: 'id.k8s.io', value: p },
      { name: `${p}.b.example.com`, value: 'b' },
      { name: `${p}.c.example.com`, value: 'c2' },
    ]);
  });

  it('puts Available back when the hub marks it Unknown, leaving the hub’s own condition alone', async () => {
    const f = await fixture('reg-hubcond');
    await f.writeBootstrapSecret();
    const agent = await f.start();
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    const before = await waitForCluster(f, 'Available True', availableIs('True'));
    const accepted = condition(before, ManagedClusterCondition.HubAccepted);

    await f.hub.markUnknown(f.clusterName); // what the hub's lease watchdog does
    const after = await waitForCluster(f, 'Available True again', (mc) => {
      const c = condition(mc, ManagedClusterCondition.Available);
      return c?.status === 'True' && mc.metadata.resourceVersion !== before.metadata.resourceVersion;
    });
    expect(condition(after, ManagedClusterCondition.HubAccepted)).toEqual(accepted);
    expect(condition(after, ManagedClusterCondition.Joined)).toEqual(
      condition(before, ManagedClusterCondition.Joined),
    );
    // The agent writes the status by server-side apply under its own field manager.
    const managers = (after.metadata.managedFields ?? []) as Array<{ manager?: string; operation?: string }>;
    expect(managers).toContainEqual(
      expect.objectContaining({ manager: 'registration-agent', operation: 'Apply' }),
    );
  });
});
