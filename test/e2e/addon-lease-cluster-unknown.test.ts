// The hub side of add-on Lease health on a real hub: when a ManagedCluster's Available turns
// Unknown (its registration agent, which reports the add-ons' health, stopped), every add-on in
// its namespace gets Available Unknown with the cluster's reason and message, as OCM's hub does;
// also an add-on enabled while the cluster is Unknown. Clusters are scoped by a label so other
// files' clusters are never touched; no registration hub runs here, the test writes the cluster's
// status itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../src/api/cluster.ts';
import { findCondition, ResourceClient, setCondition } from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';
import { startAddonClusterHealth } from '../../src/registration/hub/addon/lease-health.ts';
import { namespaceResource } from '../../src/registration/hub/resources.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { Cleanups, waitFor } from './fixtures/registration-hub.ts';

const hub = adminKubeConfig(testEnv().hub);
const cleanups = new Cleanups();
const scopeLabel = 'e2e.tether.dev/addon-cluster-health';
const scope = uniqueName('scope');
const cluster = uniqueName('unknown-cluster');
const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
const addons = new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource);
const namespaces = new ResourceClient(hub, namespaceResource);

beforeAll(async () => {
  cleanups.add(() => namespaces.delete(cluster, undefined, { ignoreNotFound: true }));
  cleanups.add(() => clusters.delete(cluster, undefined, { ignoreNotFound: true }));
  await clusters.create({
    metadata: { name: cluster, labels: { [scopeLabel]: scope } },
    spec: { hubAcceptsClient: true },
  });
  await namespaces.create({ metadata: { name: cluster } });
  const health = startAddonClusterHealth({
    hubKubeConfig: hub,
    log: logger('addon-cluster-health-e2e'),
    clusterLabelSelector: `${scopeLabel}=${scope}`,
  });
  cleanups.add(() => health.stop());
});
afterAll(() => cleanups.run());

async function setClusterUnknown(reason: string, message: string) {
  const current = await clusters.get(cluster);
  if (!current) throw new Error(`cluster ${cluster} is gone`);
  const conditions = setCondition(current.status?.conditions, {
    type: ManagedClusterCondition.Available,
    status: 'Unknown',
    reason,
    message,
  });
  await clusters.replaceStatus({ ...current, status: { ...current.status, conditions } });
}

const availableOf = async (name: string) =>
  findCondition((await addons.get(name, cluster))?.status?.conditions, 'Available');

describe('add-ons of a cluster whose agent stopped', () => {
  it("turn Unknown with the cluster's reason and message, also one enabled afterwards", async () => {
    await addons.create({ metadata: { name: 'first', namespace: cluster }, spec: {} });
    const reason = 'ManagedClusterLeaseUpdateStopped';
    const message = 'Registration agent stopped updating its lease.';
    await setClusterUnknown(reason, message);
    const first = await waitFor(
      async () => ((await availableOf('first'))?.status === 'Unknown' ? availableOf('first') : undefined),
      'add-on first Unknown',
    );
    expect(first).toMatchObject({ status: 'Unknown', reason, message });

    await addons.create({ metadata: { name: 'later', namespace: cluster }, spec: {} });
    const later = await waitFor(
      async () => ((await availableOf('later'))?.status === 'Unknown' ? availableOf('later') : undefined),
      'add-on later Unknown',
    );
    expect(later).toMatchObject({ reason, message });
  });
});
