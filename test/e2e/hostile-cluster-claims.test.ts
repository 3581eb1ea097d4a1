// Issue 23, a hostile managed-cluster admin creating thousands of ClusterClaims on its own cluster:
// the registration agent reports the reserved claims plus at most maxCustomClusterClaims custom
// ones (OCM's default 20), logs how many it left out, and keeps renewing its lease and reporting
// Available. (Writing the claims to the hub directly, past the agent, is refused by the
// ManagedCluster schema: hostile-cluster-status.test.ts.) cluster1 is the managed cluster; the hub
// is played by the test (test/registration/agent/fake-hub.ts).
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClusterClaim,
  clusterClaimResource,
  defaultMaxCustomClusterClaims,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterLeaseName,
  WellKnownClusterClaim,
} from '../../src/api/index.ts';
import { findCondition, ResourceClient } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { kubectl } from './fixtures/helpers.ts';
import { type AgentFixture, agentFixture } from './fixtures/registration-agent.ts';

const env = testEnv();
let fx: AgentFixture | undefined;
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
  for (const step of cleanups.splice(0).reverse()) await step();
});

const floodLabel = 'e2e.tether.dev/claim-flood';

/** Create `count` ClusterClaims labelled for cleanup, `parallel` requests at a time. */
async function createClaims(claims: ResourceClient<ClusterClaim>, prefix: string, count: number) {
  const parallel = 32;
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, (_, i) => start + i);
    await Promise.all(
      batch.map((i) =>
        claims.create({
          metadata: {
            name: `${prefix}.c${String(i).padStart(5, '0')}.example.com`,
            labels: { [floodLabel]: prefix },
          },
          spec: { value: `v${i}` },
        }),
      ),
    );
  }
}

describe('a hostile managed cluster flooding ClusterClaims', () => {
  it('a managed-cluster admin creating 2 000 ClusterClaims gets only the reserved ones and 20 custom ones reported, and the agent stays healthy', async () => {
    const f = await agentFixture(env, 'claim-flood');
    fx = f;
    const p = f.clusterName;
    const claims = new ResourceClient<ClusterClaim>(f.managed, clusterClaimResource);
    cleanups.push(() =>
      kubectl(
        env.cluster1.kubeconfigPath,
        ['delete', 'clusterclaims', '-l', `${floodLabel}=${p}`, '--wait=false'],
        {
          timeoutMs: 120_000,
        },
      ),
    );
    cleanups.push(() => claims.delete(WellKnownClusterClaim.Id, undefined, { ignoreNotFound: true }));
    await claims.create({ metadata: { name: WellKnownClusterClaim.Id }, spec: { value: p } });
    const floodStart = Date.now();
    await createClaims(claims, p, 2_000);
    const floodMs = Date.now() - floodStart;

    await f.writeBootstrapSecret();
    // The production default: no maxCustomClusterClaims given.
    const agent = await f.start({ leaseDurationSeconds: 2 });
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    const reported = await pollUntil(
      async () => {
        const mc = await f.cluster();
        return (mc?.status?.clusterClaims?.length ?? 0) > 0 ? mc : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'claims on the hub' },
    );
    const names = (mc: ManagedCluster) => (mc.status?.clusterClaims ?? []).map((c) => c.name);
    const expected = [
      WellKnownClusterClaim.Id,
      ...Array.from({ length: 20 }, (_, i) => `${p}.c${String(i).padStart(5, '0')}.example.com`),
    ];
    expect(defaultMaxCustomClusterClaims).toBe(20);
    expect(names(reported)).toEqual(expected);

    // Still healthy with 2 000 claims in its cache: Available True, the lease renewed again, and a
    // new claim that sorts first still makes it to the hub.
    const lease = async () =>
      new Date((await f.hub.leases.get(managedClusterLeaseName, p))?.spec?.renewTime ?? 0).getTime();
    const renewedBefore = await lease();
    await pollUntil(async () => (await lease()) > renewedBefore, {
      timeoutMs: 15_000,
      description: 'a lease renewal with 2 000 claims on the cluster',
    });
    const early = `${p}.a.example.com`;
    await claims.create({ metadata: { name: early, labels: { [floodLabel]: p } }, spec: { value: 'first' } });
    const after = await pollUntil(
      async () => {
        const mc = await f.cluster();
        return mc && names(mc).includes(early) ? mc : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'the new claim on the hub' },
    );
    expect(names(after)).toHaveLength(1 + 20);
    expect(findCondition(after.status?.conditions, ManagedClusterCondition.Available)?.status).toBe('True');
    console.log(`2 000 claims created in ${floodMs} ms; the hub sees ${names(after).length}`);
  });
});
