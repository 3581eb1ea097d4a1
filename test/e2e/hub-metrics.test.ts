// `tether hub`'s /metrics carries controller-runtime's per-controller series: after the hub
// reconciled a new ManagedCluster, the `managedcluster` controller's reconcile count, latency
// histogram and queue depth are there (and Node's process series), as a Prometheus scrape reads them.
import { afterEach, describe, expect, it } from 'vitest';
import { managedClusterFinalizer } from '../../src/api/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { admin, Cleanups, env, waitFor } from './fixtures/registration-hub.ts';
import { startTetherHub } from './fixtures/tether-hub-process.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** The value of the first sample line starting with `prefix`, or undefined. */
function sample(text: string, prefix: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('tether hub /metrics', () => {
  it('has per-controller reconcile counts, latency and queue depth after a reconcile', async () => {
    const leaseNamespace = uniqueName('hub-metrics');
    await admin.namespaces.create({ metadata: { name: leaseNamespace } });
    cleanups.add(() => admin.namespaces.delete(leaseNamespace, undefined, { ignoreNotFound: true }));
    const hub = await startTetherHub(
      [
        `--kubeconfig=${env.hub.kubeconfigPath}`,
        `--leader-election-namespace=${leaseNamespace}`,
        '--no-leader-elect',
      ],
      cleanups,
    );
    expect(hub.opsPort).toBeGreaterThan(0);
    const cluster = uniqueName('metrics');
    await admin.clusters.create({ metadata: { name: cluster }, spec: { hubAcceptsClient: false } });
    cleanups.add(() => admin.clusters.delete(cluster, undefined, { ignoreNotFound: true }));
    await waitFor(
      async () =>
        (await admin.clusters.get(cluster))?.metadata.finalizers?.includes(managedClusterFinalizer) ?? false,
      'the hub to reconcile the new ManagedCluster',
      30_000,
    );

    const scrape = async () => (await fetch(`http://127.0.0.1:${hub.opsPort}/metrics`)).text();
    let text = '';
    await waitFor(
      async () => {
        text = await scrape();
        return (
          (sample(text, 'controller_runtime_reconcile_total{controller="managedcluster",result="success"}') ??
            0) > 0
        );
      },
      'a successful managedcluster reconcile in /metrics',
      10_000,
    );
    expect(
      sample(text, 'controller_runtime_reconcile_time_seconds_count{controller="managedcluster"}'),
    ).toBeGreaterThan(0);
    expect(sample(text, 'workqueue_adds_total{name="managedcluster"}')).toBeGreaterThan(0);
    expect(sample(text, 'workqueue_depth{name="managedcluster"}')).toBeGreaterThanOrEqual(0);
    expect(
      sample(text, 'controller_runtime_active_workers{controller="managedcluster"}'),
    ).toBeGreaterThanOrEqual(0);
    for (const controller of ['managedcluster-lease', 'csr-approving'])
      expect(text).toContain(`workqueue_depth{name="${controller}"}`);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });
});
