// A hub admin deletes a joined cluster's ManagedCluster while its agent runs: the real registration
// hub cleans it up, the running agent (not restarted) creates it again, and once the admin accepts
// it again the agent reports it Available with the certificate it already had.
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { availableOf, clusters, type JoinedCluster, joinedCluster } from './fixtures/joined-cluster.ts';

let joined: JoinedCluster | undefined;

afterAll(async () => {
  await joined?.cleanup();
});

describe('registration agent recreates its ManagedCluster', () => {
  it('a ManagedCluster deleted on the hub is created again by the running agent, and rejoins once accepted', async () => {
    joined = await joinedCluster('recreate', 5);
    const name = joined.name;
    const agent = await joined.startAgent();
    await pollUntil(async () => availableOf(await clusters.get(name)) === 'True', {
      timeoutMs: 60_000,
      description: 'Available True',
    });
    const before = await clusters.get(name);
    const serial = agent.certificateSerial();
    const labels = before?.metadata.labels ?? {};

    await clusters.delete(name);
    const recreated = await pollUntil(
      async () => {
        const mc = await clusters.get(name);
        return mc && mc.metadata.uid !== before?.metadata.uid && !mc.metadata.deletionTimestamp
          ? mc
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the ManagedCluster created again by the agent' },
    );
    // As at first join: the agent's client config, not accepted until the hub admin says so.
    expect(recreated.spec?.hubAcceptsClient).toBe(false);
    expect(recreated.spec?.managedClusterClientConfigs?.[0]?.url).toBeTruthy();

    // The admin accepts it again (and puts it back in this test hub's scope).
    await clusters.patchMerge(name, { metadata: { labels }, spec: { hubAcceptsClient: true } });
    await pollUntil(async () => availableOf(await clusters.get(name)) === 'True', {
      timeoutMs: 90_000,
      description: 'Available True again after the new acceptance',
    });
    expect(agent.certificateSerial()).toBe(serial);
  });
});
