// The whole placement hub as `tether hub` starts it, on the real hub: it campaigns on its own Lease
// and, leading, runs the cluster-set controllers and the placement scheduler together — a cluster
// put into a set and a binding in a namespace are enough for a Placement there to select it; and
// the `tether hub` process itself runs it and stops it on SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterSetLabel, defaultClusterSetName, placementLabel } from '../../src/api/index.ts';
import { type Lease, leaseResource, ResourceClient } from '../../src/kube/index.ts';
import { placementAdmissionObjects, placementLeaderLeaseNamespace } from '../../src/placement/hub/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  Cleanups,
  createBareCluster,
  createClusterSet,
  createNamespace,
  hub,
  startTestPlacementHub,
  waitFor,
} from './fixtures/placement.ts';
import { env } from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** Deletes the admission policies a `tether hub` run applied to the shared hub. */
async function removeAdmissionPolicies(): Promise<void> {
  for (const obj of placementAdmissionObjects()) {
    const plural =
      obj.kind === 'ValidatingAdmissionPolicy'
        ? 'validatingadmissionpolicies'
        : 'validatingadmissionpolicybindings';
    await new ResourceClient(hub, {
      group: 'admissionregistration.k8s.io',
      version: 'v1',
      plural,
      kind: obj.kind ?? '',
      namespaced: false,
    }).delete(obj.metadata?.name ?? '', undefined, { ignoreNotFound: true });
  }
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

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
    const cluster = await createBareCluster(cleanups, { [clusterSetLabel]: set }, 'pl', true);
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
    // the scheduler writes the decisions first and the Placement's status after them
    const selected = await waitFor(
      async () => (await admin.placements.get('pick', namespace))?.status?.numberOfSelectedClusters,
      'the Placement status to count the selected cluster',
      30_000,
    );
    expect(selected).toBe(1);
  });

  it('tether hub runs the placement hub and stops it on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      ['bin/tether.js', 'hub', `--kubeconfig=${env.hub.kubeconfigPath}`, '--no-leader-elect', '--ops-port=0'],
      // The child inherits VITEST, which silences the log; its start line is what this waits for.
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TETHER_LOG_LEVEL: 'info' } },
    );
    let output = '';
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const exited = exitOf(child);
    cleanups.add(removeAdmissionPolicies);
    cleanups.add(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    });
    await waitFor(
      () => output.includes('hub started'),
      `tether hub to start (output: ${output.slice(-500)})`,
      60_000,
    );

    const cluster = await createBareCluster(cleanups);
    await waitFor(
      async () =>
        (await admin.clusters.get(cluster))?.metadata.labels?.[clusterSetLabel] === defaultClusterSetName,
      'tether hub labels the cluster into default',
      30_000,
    );

    // Its registration hub put a finalizer on the cluster: delete it while that hub still runs.
    await admin.clusters.delete(cluster);
    await waitFor(
      async () => !(await admin.clusters.get(cluster)),
      'tether hub finishes deleting the cluster',
      30_000,
    );

    child.kill('SIGTERM');
    const code = await Promise.race([
      exited,
      new Promise((r) => setTimeout(() => r('still running'), 30_000)),
    ]);
    expect(code).toBe(0);
  });
});
