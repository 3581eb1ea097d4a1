// Shared by the hostile-cluster e2e files: proof that the registration hub keeps serving other
// clusters while one cluster attacks — it accepts a new cluster and its lease watchdog judges that
// cluster's unrenewed 1 s lease, each within a deadline, while the attack runs.
import { ManagedClusterCondition } from '../../src/api/index.ts';
import { type Cleanups, conditionOf, createCluster, waitFor } from '../registration/hub/e2e-fixtures.ts';

/** A cluster the hub serves while the attack goes on: accepted with a 1 s lease that nobody renews. */
async function hubServesAnotherCluster(
  cleanups: Cleanups,
  scope: string,
): Promise<{ acceptedMs: number; leaseJudgedMs: number }> {
  const start = Date.now();
  const other = await createCluster(cleanups, scope, { hubAcceptsClient: true, leaseDurationSeconds: 1 });
  await waitFor(
    async () => (await conditionOf(other, ManagedClusterCondition.HubAccepted))?.status === 'True',
    `the hub to accept ${other} during the attack`,
    15_000,
  );
  const acceptedMs = Date.now() - start;
  await waitFor(
    async () => (await conditionOf(other, ManagedClusterCondition.Available))?.status === 'Unknown',
    `the hub's lease watchdog to judge ${other} during the attack`,
    15_000,
  );
  return { acceptedMs, leaseJudgedMs: Date.now() - start };
}

/**
 * Repeats `attacks` until the hub of `scope` has served another cluster (accepted it, and judged
 * its unrenewed lease), and at least `minRounds` times; what the hub took, in ms.
 */
export async function whileAttacking(
  cleanups: Cleanups,
  scope: string,
  attacks: Array<() => Promise<unknown>>,
  minRounds = 1,
) {
  let serving = true;
  let rounds = 0;
  const attacking = async () => {
    while (serving || rounds < minRounds) {
      for (const attack of attacks) await attack();
      rounds += 1;
    }
  };
  const serve = () =>
    hubServesAnotherCluster(cleanups, scope).finally(() => {
      serving = false;
    });
  const [, served] = await Promise.all([attacking(), serve()]);
  console.log(`the hub served another cluster during ${rounds} attack rounds: ${JSON.stringify(served)}`);
  return served;
}
