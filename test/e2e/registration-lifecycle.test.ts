// The real registration hub and the real registration agent together, the agent behind squid: the
// cluster joins and turns Available; when the agent stops, the hub's lease watchdog turns it
// Unknown and taints it unreachable within 5 × leaseDurationSeconds; when the agent returns, it is
// Available again and the taint is gone.
import { afterAll, describe, expect, it } from 'vitest';
import { ManagedClusterCondition, ManagedClusterTaint } from '../../src/api/index.ts';
import { findCondition } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  availableOf,
  clusters,
  type JoinedCluster,
  joinedCluster,
  taintsOf,
} from './fixtures/joined-cluster.ts';

const LEASE_SECONDS = 2;
let joined: JoinedCluster | undefined;

afterAll(async () => {
  await joined?.cleanup();
});

async function conditions(): Promise<{ available?: string; taints: string[] }> {
  const mc = await clusters.get(joined?.name ?? '');
  return { available: availableOf(mc), taints: taintsOf(mc) };
}

describe('registration hub + agent', () => {
  it('joins through squid, goes Unknown + unreachable when the agent stops, and recovers when it returns', async () => {
    joined = await joinedCluster('life', LEASE_SECONDS);
    const cluster = joined.name;
    await joined.startAgent();
    await pollUntil(async () => (await conditions()).available === 'True', {
      timeoutMs: 60_000,
      description: 'Available True',
    });
    const joinedCondition = findCondition(
      (await clusters.get(cluster))?.status?.conditions ?? [],
      ManagedClusterCondition.Joined,
    );
    expect(joinedCondition?.status).toBe('True');

    await joined.stopAgent();
    const stoppedAt = Date.now();
    await pollUntil(
      async () => {
        const c = await conditions();
        return c.available === 'Unknown' && c.taints.includes(ManagedClusterTaint.Unreachable);
      },
      {
        timeoutMs: 5 * LEASE_SECONDS * 1000 + 15_000,
        description: 'Available Unknown with the unreachable taint',
      },
    );
    // Not before the grace period (5 × lease), and not long after it.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(5 * LEASE_SECONDS * 1000 - 2000);

    await joined.startAgent();
    await pollUntil(
      async () => {
        const c = await conditions();
        return c.available === 'True' && c.taints.length === 0;
      },
      { timeoutMs: 30_000, description: 'Available True again with the taints removed' },
    );
  });
});
