// The whole placement hub as `tether hub` starts it, on the real hub: it campaigns on its own Lease
// and, leading, runs the cluster-set controllers and the placement scheduler together — a cluster
// put into a set and a binding in a namespace are enough for a Placement there to select it.
import { afterAll, describe, expect, it } from 'vitest';
import { clusterSetLabel, placementLabel } from '../../src/api/index.ts';
import { type Lease, leaseResource, ResourceClient } from '../../src/kube/index.ts';
import { placementLeaderLeaseNamespace } from '../../src/placement/hub/index.ts';
import {
  admin,
  Cleanups,
  createBareCluster,
  createClusterSet,
  createNamespace,
  hub,
  startTestPlacementHub,
  waitFor,
} from '../placement/e2e-fixtures.ts';
import { uniqueName } from './helpers.ts';

const cleanups = new Cleanups();
afterAll(() => cleanups.run());

describe('placement hub', () => {
  it('leads on its own Lease and schedules a Placement over a bound set', async () => {
    const leaseName = uniqueName('placement-lock');
    const leases = new ResourceClient<Lease>(hub, leaseResource);
    cleanups.add(() => leases.delete(leaseName, placementLeaderLeaseNamespace, { ignoreNotFound: true }));
    const running = await startTestPlacementHub(cleanups, {
      placementControllers: true,
      leaderElection: { name: leaseName, leaseDurationSeconds: 5, renewDeadlineMs: 4000, retryPeriodMs: 500 },
    });
    await waitFor(() => running.isLeader(), 'placement hub leads');
    const lease = await leases.get(leaseName, placementLeaderLeaseNamespace);
    expect(lease?.spec?.holderIdentity).toBe(running.identity);

    const set = await createClusterSet(cleanups);
    const cluster = await createBareCluster(cleanups, { [clusterSetLabel]: set });
    const namespace = await createNamespace(cleanups);
    await admin.bindings.create({ metadata: { name: set, namespace }, spec: { clusterSet: set } });
    await admin.placements.create({ metadata: { name: 'pick', namespace }, spec: { clusterSets: [set] } });

    const decided = await waitFor(
      async () => {
        const { items } = await admin.decisions.list({ namespace, labelSelector: `${placementLabel}=pick` });
        const names = items.flatMap((d) => (d.status?.decisions ?? []).map((x) => x.clusterName));
        return names.length > 0 ? names : undefined;
      },
      'a PlacementDecision for the placement',
      30_000,
    );
    expect(decided).toEqual([cluster]);
    const placement = await admin.placements.get('pick', namespace);
    expect(placement?.status?.numberOfSelectedClusters).toBe(1);
  });
});
