// Lease health on a real node, the slow case: the helloworld agent runs as a pod on the managed
// node (enabled with the real CLI, its manager on the host), then its process is frozen (SIGSTOP)
// so that its pod stays Running but its Lease is no longer renewed. The registration agent in the
// klusterlet pod turns the add-on Available False with OCM's ManagedClusterAddOnLeaseUpdateStopped
// once the lease is older than the grace period (5 lease durations), not before; after SIGCONT the
// agent renews and the add-on is Available again. (Scaling the agent's Deployment to 0 would not
// do: the work agent puts the Deployment back as its ManifestWork says.) The periods are set short
// as OCM's integration suites set them: lease duration 5 s (`tether join --addon-lease-duration`
// for the registration agent, the manager's --agent-lease-duration for the helloworld agent), so
// the grace is 25 s, and the registration agent looks at the add-on every second (the work agent's
// status sync is 2 s); the defaults (60 s, 30 s, 30 s) are pinned by test/cli/agent-periods.test.ts.
// Run only as `flock /tmp/tether-realnode.lock npx vitest run test/e2e/addon-real-node-lease.test.ts`.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type Lease, leaseResource, ResourceClient } from '../../src/kube/index.ts';
import { conditionOf, type Pod, pidsWithArgs, resources } from './fixtures/addon-real-node.ts';
import { ADDON, ADDON_NS, AddonRealNode, AGENT } from './fixtures/addon-real-node-env.ts';

// node names are per host: a `tether up` may run on this machine meanwhile
const PREFIX = `al${process.pid % 100000}-`;
/** The add-on lease duration here (OCM's is 60 s). */
const LEASE_DURATION_S = 5;
/** OCM's grace: a lease counts as renewed for 5 lease durations after its renewTime. */
const GRACE_MS = 5 * LEASE_DURATION_S * 1000;
/** How often the registration agent looks at the add-on here (OCM's is 30 s). */
const SYNC_INTERVAL_S = 1;
const measured: Record<string, string> = {};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

let rn: AddonRealNode | undefined;

function env(): AddonRealNode {
  if (!rn) throw new Error('no environment');
  return rn;
}

beforeAll(async () => {
  const t = Date.now();
  rn = await AddonRealNode.start(PREFIX, 'addon-real-node-lease', {
    leaseDurationSeconds: LEASE_DURATION_S,
    syncIntervalSeconds: SYNC_INTERVAL_S,
    statusSyncIntervalSeconds: 2,
  });
  measured.environment = seconds(Date.now() - t);
}, 1_200_000);

afterAll(async () => {
  await rn?.stop();
  process.stderr.write(`[addon-real-node-lease] measured: ${JSON.stringify(measured)}\n`);
}, 300_000);

describe('Lease health of an add-on agent on a real node', () => {
  it('a frozen agent (pod still Running) turns the add-on Available False ManagedClusterAddOnLeaseUpdateStopped after the grace period, and True again once it renews', async () => {
    const e = env();
    const logs = () => e.logs();
    onTestFailed(async () => {
      process.stderr.write(`${await logs()}\n`);
    });
    const enabledAt = Date.now();
    await e.enable();
    let frozen: number | undefined;
    try {
      await e.addonUntil(
        'the add-on to be Available (lease updated)',
        (a) => conditionOf(a, 'Available')?.reason === 'ManagedClusterAddOnLeaseUpdated',
        240_000,
      );
      measured.enableToAvailable = seconds(Date.now() - enabledAt);
      const agentArgs = [
        '/app/examples/helloworld-addon/helloworld.ts',
        'agent',
        `--cluster-name=${e.cluster}`,
      ];
      const pids = pidsWithArgs(agentArgs);
      expect(pids, 'exactly one agent process on the node').toHaveLength(1);
      const leases = new ResourceClient<Lease>(e.managed(), leaseResource);
      const renewTimeOf = async () => Date.parse((await leases.get(ADDON, ADDON_NS))?.spec?.renewTime ?? '');
      // the agent took the short lease duration from its manager
      expect((await leases.get(ADDON, ADDON_NS))?.spec?.leaseDurationSeconds).toBe(LEASE_DURATION_S);

      frozen = pids[0];
      process.kill(frozen as number, 'SIGSTOP');
      const frozenAt = Date.now();
      const lastRenewal = await renewTimeOf();
      expect(lastRenewal).toBeLessThanOrEqual(frozenAt);

      const stopped = await e.addonUntil(
        'Available False with ManagedClusterAddOnLeaseUpdateStopped',
        (a) => conditionOf(a, 'Available')?.status === 'False',
        GRACE_MS + 60_000,
      );
      const falseAt = Date.now();
      measured.frozenToFalse = seconds(falseAt - frozenAt);
      measured.lastRenewalToFalse = seconds(falseAt - lastRenewal);
      expect(conditionOf(stopped, 'Available')).toMatchObject({
        reason: 'ManagedClusterAddOnLeaseUpdateStopped',
        message: `${ADDON} add-on is not available.`,
      });
      // not before the grace period ran out (renewTime has second precision)
      const changedAt = Date.parse(conditionOf(stopped, 'Available')?.lastTransitionTime ?? '');
      expect(changedAt).toBeGreaterThanOrEqual(lastRenewal + GRACE_MS - 1_000);
      // and soon after it: the registration agent's grace is the short one, not OCM's 5 min
      expect(changedAt).toBeLessThan(lastRenewal + GRACE_MS + 15_000);
      // it is the lease that decides: the pod is still Running, the lease untouched
      expect(await renewTimeOf()).toBe(lastRenewal);
      const pods = new ResourceClient<Pod>(e.managed(), resources.pods);
      const running = (await pods.list({ namespace: ADDON_NS, labelSelector: `app=${AGENT}` })).items.filter(
        (p) => p.status?.phase === 'Running',
      );
      expect(running).toHaveLength(1);

      process.kill(frozen as number, 'SIGCONT');
      frozen = undefined;
      const resumedAt = Date.now();
      const back = await e.addonUntil(
        'Available True again after SIGCONT',
        (a) => conditionOf(a, 'Available')?.status === 'True',
        60_000,
      );
      measured.resumedToAvailable = seconds(Date.now() - resumedAt);
      expect(conditionOf(back, 'Available')?.reason).toBe('ManagedClusterAddOnLeaseUpdated');
      expect(await renewTimeOf()).toBeGreaterThan(lastRenewal);
    } finally {
      if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
      await e.disable();
    }
  }, 600_000);
});
