// The registration agent's heartbeat comes back with the hub (issue 11 item 5): a lease renewal
// that failed while the hub apiserver was cut off is retried as soon as the hub answers again, not
// after what is left of its backoff (1 s doubling to 30 s). The real ManagedClusterLeaseUpdater
// renews a real Lease on the shared hub apiserver through a TCP relay the test cuts and restores.
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterLeaseName,
} from '../../src/api/index.ts';
import { type Lease, leaseResource, loadKubeconfig, ResourceClient } from '../../src/kube/index.ts';
import { ManagedClusterLeaseUpdater } from '../../src/registration/agent/lease.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { Cleanups } from './fixtures/registration-hub.ts';
import { capturedLog, msUntil, relayedHub } from './fixtures/relayed-hub.ts';

/** From restoring the relay to the renewal landing (without the wiring: its whole backoff, ≥ 8 s here). */
const RESUME_BOUND_MS = 3_000;
/** Failed renewals before restoring: retries 1, 2, 4 s apart, so the next one is 8 s away. */
const FAILED_RENEWALS = 4;

const env = testEnv();
const admin = loadKubeconfig(env.hub.kubeconfigPath);
const namespaces = new ResourceClient(admin, {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
});
const leases = new ResourceClient<Lease>(admin, leaseResource);

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** The agent's cached view of its ManagedCluster: accepted by the hub, 60 s lease. */
function acceptedCluster(name: string): ManagedCluster {
  return {
    apiVersion: 'cluster.open-cluster-management.io/v1',
    kind: 'ManagedCluster',
    metadata: { name },
    spec: { hubAcceptsClient: true, leaseDurationSeconds: 60 },
    status: {
      conditions: [
        {
          type: ManagedClusterCondition.HubAccepted,
          status: 'True',
          reason: 'HubClusterAdminAccepted',
          message: 'accepted',
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    },
  } as ManagedCluster;
}

describe('managed cluster lease after a hub outage', () => {
  it('renews within 3 s of the hub coming back, not after the rest of its backoff', async () => {
    const clusterName = uniqueName('lease-resume');
    await namespaces.create({ metadata: { name: clusterName } });
    cleanups.add(() => namespaces.delete(clusterName, undefined, { ignoreNotFound: true }));
    const { relay, kc } = await relayedHub(env);
    cleanups.add(() => relay.close());
    const { log, lines } = capturedLog();
    const updater = new ManagedClusterLeaseUpdater({
      hubKubeConfig: kc,
      clusterName,
      cluster: () => acceptedCluster(clusterName),
      log,
    });
    updater.start();
    cleanups.add(() => updater.stop());
    await pollUntil(() => updater.renewed >= 1, {
      timeoutMs: 30_000,
      description: 'the lease to be created',
    });

    relay.cut();
    updater.requestRenewal();
    await pollUntil(
      () => lines.filter((l) => l.msg === 'managed cluster lease renewal failed').length >= FAILED_RENEWALS,
      { timeoutMs: 60_000, intervalMs: 50, description: `${FAILED_RENEWALS} failed renewals` },
    );
    const renewedBefore = updater.renewed;
    relay.restore();
    const restoredAt = performance.now();
    const resumeMs = await msUntil(
      restoredAt,
      () => updater.renewed > renewedBefore,
      'a renewal after restore',
    );
    console.log(
      `[lease-resume] after ${FAILED_RENEWALS} failed renewals: renewed ${resumeMs} ms after the hub came back`,
    );
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    const lease = await leases.get(managedClusterLeaseName, clusterName);
    expect(lease?.spec?.renewTime).toBeTruthy();
  });
});
