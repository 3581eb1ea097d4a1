// Issue 11, finding 2: one owner per transition of ManagedClusterConditionAvailable. After an
// outage longer than the lease grace period the hub's watchdog has set Available Unknown and tainted
// the cluster unreachable, and the lease on the hub is stale. The agent, connected again, must not
// report Available before its lease is fresh: the watchdog, still seeing the stale lease, would take
// it away again, and the two flapped (the taint with them) until the agent's next periodic renewal.
// The stale lease is made by hand here (renewTime an hour back), which is exactly what the hub sees
// after such an outage, without waiting out a real one.
import { afterAll, describe, expect, it } from 'vitest';
import { type ManagedCluster, ManagedClusterTaint, managedClusterLeaseName } from '../../src/api/index.ts';
import {
  formatMicroTime,
  Informer,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  availableOf,
  clusters,
  hubKc,
  type JoinedCluster,
  joinedCluster,
  taintsOf,
} from './fixtures/joined-cluster.ts';

const leases = new ResourceClient<Lease>(hubKc, leaseResource);
const LEASE_SECONDS = 10;
let joined: JoinedCluster | undefined;
let watcher: Informer<ManagedCluster> | undefined;

afterAll(async () => {
  await watcher?.stop();
  await joined?.cleanup();
});

describe('Available after an outage longer than the lease grace period', () => {
  it('turns True once when the agent is back, without flapping or losing the unreachable taint meanwhile', async () => {
    joined = await joinedCluster('flap', LEASE_SECONDS);
    const cluster = joined.name;
    await joined.startAgent();
    // Joined and settled: Available, and the unreachable taint it had before that is gone.
    await pollUntil(
      async () => {
        const mc = await clusters.get(cluster);
        return availableOf(mc) === 'True' && taintsOf(mc).length === 0;
      },
      { timeoutMs: 60_000, description: 'Available True without taints after joining' },
    );

    // Every change the hub stores from here on is seen.
    const seen: Array<{ available?: string; taints: string[] }> = [];
    watcher = new Informer(clusters, { fieldSelector: `metadata.name=${cluster}`, name: 'flap-watch' });
    watcher.addHandlers({
      add: (mc) => void seen.push({ available: availableOf(mc), taints: taintsOf(mc) }),
      update: (_old, mc) => void seen.push({ available: availableOf(mc), taints: taintsOf(mc) }),
    });
    watcher.start();
    await watcher.waitForSync(10_000);

    // What the hub holds after a long outage: a lease last renewed an hour ago.
    const stale = formatMicroTime(new Date(Date.now() - 3600_000));
    const lease = await leases.get(managedClusterLeaseName, cluster);
    if (!lease) throw new Error('no lease');
    await leases.replace({ ...lease, spec: { ...lease.spec, renewTime: stale } });
    await pollUntil(async () => seen.some((s) => s.available === 'Unknown'), {
      timeoutMs: 20_000,
      description: 'the watchdog sets Available Unknown',
    });
    await pollUntil(
      async () => {
        const mc = await clusters.get(cluster);
        return availableOf(mc) === 'True' && taintsOf(mc).length === 0;
      },
      { timeoutMs: 30_000, description: 'Available True again with the taint removed' },
    );
    // Watch until the agent's next periodic renewal: the old behaviour flapped until then.
    const renewTime = async () => (await leases.get(managedClusterLeaseName, cluster))?.spec?.renewTime;
    const before = await renewTime();
    await pollUntil(async () => (await renewTime()) !== before, {
      timeoutMs: 2 * LEASE_SECONDS * 1000,
      description: 'a periodic lease renewal after recovery',
    });

    const history = `what the hub stored, in order: ${JSON.stringify(seen)}`;
    const transitions = seen.filter((s, i) => i > 0 && s.available !== seen[i - 1]?.available);
    expect(
      transitions.map((s) => s.available),
      history,
    ).toEqual(['Unknown', 'True']);
    const firstUnknown = seen.findIndex((s) => s.available === 'Unknown');
    const backToTrue = seen.findIndex((s, i) => i > firstUnknown && s.available === 'True');
    expect(
      seen.slice(backToTrue).every((s) => s.available === 'True'),
      history,
    ).toBe(true);
    const tainted = seen.findIndex(
      (s, i) => i >= firstUnknown && s.taints.includes(ManagedClusterTaint.Unreachable),
    );
    expect(tainted, history).toBeGreaterThanOrEqual(0);
    const untainted = seen.findIndex((s, i) => i > tainted && s.taints.length === 0);
    expect(untainted, history).toBeGreaterThan(tainted);
    // The unreachable taint came once and, once gone, did not come back.
    expect(
      seen.slice(untainted).every((s) => s.taints.length === 0),
      history,
    ).toBe(true);
    expect(seen.filter((s) => s.available === 'Unknown').length).toBeLessThanOrEqual(3);
  });
});
