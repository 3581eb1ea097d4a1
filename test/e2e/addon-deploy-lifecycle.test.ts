// The addon manager over an addon's life, on a real hub with a real work agent on cluster1: it
// leads on its own Lease and keeps a user's ClusterManagementAddOn; it renders the configs the
// install strategy put in configReferences and reports lastAppliedConfig; a hub-probed addon gets
// Available from the work's feedback; a deleted cluster loses the addon's works.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addonManagerLeaseName, addonManagerLeaseNamespace } from '../../src/addon/sdk/manager.ts';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import { addonDeployWorkName, type ManagedClusterAddOn } from '../../src/api/addon.ts';
import { type ManagedCluster, managedClusterResource } from '../../src/api/cluster.ts';
import {
  isConflict,
  type KubeObject,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../../src/kube/index.ts';
import {
  type AddonTestCluster,
  adcs,
  agentDeployment,
  cmas,
  hubWorks,
  kinds,
  mcas,
  onManaged,
  setUpAddonCluster,
  unique,
  waitFor,
} from './fixtures/addon-deploy.ts';
import { hubAdmin } from './fixtures/work.ts';

const adc = { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' };
const leases = new ResourceClient<Lease>(hubAdmin, leaseResource);
const clusters = new ResourceClient<ManagedCluster>(hubAdmin, managedClusterResource);

const configMapAddon = (name: string, extra: Partial<AgentAddon> = {}): AgentAddon => ({
  name,
  supportedConfigs: [adc],
  manifests: (ctx) => [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings' },
      data: { level: ctx.variables['LEVEL'] ?? '' },
    } as KubernetesObject,
  ],
  ...extra,
});

/** A user's ClusterManagementAddOn, there before the manager starts. */
const userOwned = configMapAddon(unique('deploy-users'), { displayName: 'from the addon' });
const configured = configMapAddon(unique('deploy-configured'));
const probed = configMapAddon(unique('deploy-probed'), {
  health: { type: 'DeploymentAvailability' },
  manifests: () => [agentDeployment('probed', 'quay.io/tether/probed:v1')],
});
const offline = configMapAddon(unique('deploy-offline'));
const identity = unique('e2e-manager');
let cluster: AddonTestCluster;

beforeAll(async () => {
  await cmas.create({
    metadata: { name: userOwned.name },
    spec: {
      addOnMeta: { displayName: 'the user’s' },
      installStrategy: { type: 'Placements', placements: [{ name: 'p', namespace: 'default' }] },
    },
  });
  cluster = await setUpAddonCluster([userOwned, configured, probed, offline], {
    leaderElection: { identity, leaseDurationSeconds: 15 },
  });
});

afterAll(async () => {
  await cluster?.cleanup();
  for (const a of [userOwned, configured, probed, offline])
    await leases.delete(addonManagerLeaseName(a.name), addonManagerLeaseNamespace, { ignoreNotFound: true });
});

/** Write status.configReferences as the install strategy controller does (desiredConfig + specHash). */
async function setDesiredConfig(addon: string, name: string, specHash: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const mca = (await mcas.get(addon, cluster.name)) as ManagedClusterAddOn;
    const previous = mca.status?.configReferences?.[0];
    const status = {
      ...(mca.status ?? {}),
      configReferences: [
        {
          ...adc,
          name,
          namespace: cluster.name,
          desiredConfig: { name, namespace: cluster.name, specHash },
          ...(previous?.lastAppliedConfig ? { lastAppliedConfig: previous.lastAppliedConfig } : {}),
        },
      ],
    };
    try {
      await mcas.replaceStatus({ ...mca, status });
      return;
    } catch (err) {
      if (!isConflict(err) || attempt > 10) throw err;
    }
  }
}

describe('addon manager lifecycle', () => {
  it('leads on Lease <addon>-addon-manager and keeps a user’s ClusterManagementAddOn', async () => {
    await waitFor('the manager to lead every addon', async () => cluster.manager.isLeader());
    for (const a of [userOwned, configured, probed]) {
      const lease = await leases.get(addonManagerLeaseName(a.name), addonManagerLeaseNamespace);
      expect(lease?.spec?.holderIdentity).toBe(identity);
    }
    const kept = await cmas.get(userOwned.name);
    expect(kept?.spec.installStrategy?.type).toBe('Placements');
    expect(kept?.spec.addOnMeta?.displayName).toBe('the user’s');
    expect(kept?.spec.supportedConfigs).toEqual([adc]);
    const created = await cmas.get(configured.name);
    expect(created?.spec.installStrategy?.type).toBe('Manual');
    expect(created?.spec.supportedConfigs).toEqual([adc]);
  });

  it('renders the desiredConfig, then lastAppliedConfig follows; a new hash is an upgrade', async () => {
    const ns = unique('configured-ns');
    cluster.removeNamespaceOnCleanup(ns);
    await adcs.create({
      metadata: { name: 'levels', namespace: cluster.name },
      spec: { agentInstallNamespace: ns, customizedVariables: [{ name: 'LEVEL', value: 'one' }] },
    });
    await cluster.enable(configured.name, unique('unused-ns'));
    await setDesiredConfig(configured.name, 'levels', 'hash-1');
    const work = await cluster.waitForWork(configured.name, 'rendered with the desired config', (w) =>
      w.metadata.annotations?.['open-cluster-management.io/config-spec-hash']?.includes('hash-1')
        ? w
        : undefined,
    );
    expect(
      JSON.parse(work.metadata.annotations?.['open-cluster-management.io/config-spec-hash'] ?? ''),
    ).toEqual({
      [`addondeploymentconfigs.addon.open-cluster-management.io/${cluster.name}/levels`]: 'hash-1',
    });
    await cluster.waitForCondition(configured.name, 'Progressing', {
      status: 'False',
      reason: 'InstallSucceed',
    });
    const installed = await mcas.get(configured.name, cluster.name);
    expect(installed?.status?.configReferences?.[0]?.lastAppliedConfig).toEqual({
      name: 'levels',
      namespace: cluster.name,
      specHash: 'hash-1',
    });
    await waitFor('the variable on cluster1', async () => {
      const cm = await onManaged<KubeObject & { data?: Record<string, string> }>(kinds.configMap).get(
        'settings',
        ns,
      );
      return cm?.data?.['level'] === 'one';
    });

    await adcs.patchMerge(
      'levels',
      { spec: { customizedVariables: [{ name: 'LEVEL', value: 'two' }] } },
      cluster.name,
    );
    await setDesiredConfig(configured.name, 'levels', 'hash-2');
    await cluster.waitForCondition(configured.name, 'Progressing', {
      status: 'False',
      reason: 'UpgradeSucceed',
    });
    const upgraded = await mcas.get(configured.name, cluster.name);
    expect(upgraded?.status?.configReferences?.[0]?.lastAppliedConfig?.specHash).toBe('hash-2');
    await waitFor('the new variable on cluster1', async () => {
      const cm = await onManaged<KubeObject & { data?: Record<string, string> }>(kinds.configMap).get(
        'settings',
        ns,
      );
      return cm?.data?.['level'] === 'two';
    });
  });

  it('DeploymentAvailability: feedback rules in the work, Available from the Deployment feedback', async () => {
    await cluster.enable(probed.name, unique('probed-ns'));
    const work = await cluster.waitForWork(probed.name, 'created', (w) => w);
    expect(work.spec.manifestConfigs?.[0]).toMatchObject({
      resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'probed' },
      feedbackRules: [{ type: 'WellKnownStatus' }],
    });
    // Process-mode clusters run no deployment controller: until someone writes the Deployment's
    // status, the work has no feedback for it.
    const ns = (await mcas.get(probed.name, cluster.name))?.status?.namespace ?? '';
    await cluster.waitForCondition(probed.name, 'Available', {
      status: 'Unknown',
      reason: 'NoProbeResult',
      message: 'Probe results are not returned',
    });
    // Written here as the deployment controller would: a replica, none ready, then one ready.
    const deployments = onManaged(kinds.deployment);
    await deployments.patchStatus('probed', { status: { replicas: 1 } }, ns);
    const unavailable = await cluster.waitForCondition(probed.name, 'Available', {
      status: 'False',
      reason: 'ProbeUnavailable',
    });
    expect(unavailable.message).toBe(
      `Probe addon unavailable with err readyReplica is not probed for deployment ${ns}/probed`,
    );
    await deployments.patchStatus(
      'probed',
      { status: { replicas: 1, readyReplicas: 1, availableReplicas: 1 } },
      ns,
    );
    await cluster.waitForCondition(probed.name, 'Available', {
      status: 'True',
      reason: 'ProbeAvailable',
      message: `${probed.name} add-on is available.`,
    });
    expect((await mcas.get(probed.name, cluster.name))?.status?.healthCheck?.mode).toBe('Customized');
  });

  it('a deleted addon waits for the work agent only while its cluster is available', async () => {
    await cluster.enable(offline.name, unique('offline-ns'));
    await cluster.waitForCondition(offline.name, 'ManifestApplied', { status: 'True' });
    await cluster.stopAgent();
    try {
      await mcas.delete(offline.name, cluster.name);
      // Available: the finalizer holds the addon while its work waits for the (stopped) agent.
      const held = await waitFor('the work to be deleting', async () => {
        const w = await hubWorks.get(addonDeployWorkName(offline.name), cluster.name);
        return w?.metadata.deletionTimestamp ? w : undefined;
      });
      expect(held.metadata.finalizers?.length).toBeGreaterThan(0);
      expect((await mcas.get(offline.name, cluster.name))?.metadata.deletionTimestamp).toBeDefined();
      // The cluster goes Unknown: nothing can clean up there now, the addon is let go.
      await cluster.setAvailable('Unknown');
      await waitFor('the addon to be gone', async () => !(await mcas.get(offline.name, cluster.name)));
      expect(await hubWorks.get(addonDeployWorkName(offline.name), cluster.name)).toBeDefined();
    } finally {
      await cluster.setAvailable('True');
      await cluster.startAgent();
    }
    await waitFor(
      'the agent back to remove the work',
      async () => !(await hubWorks.get(addonDeployWorkName(offline.name), cluster.name)),
      60_000,
    );
  });

  it('a deleted ManagedCluster loses the addon’s works', async () => {
    expect(await hubWorks.get(addonDeployWorkName(probed.name), cluster.name)).toBeDefined();
    await clusters.delete(cluster.name);
    await waitFor(
      'the addon works of the deleted cluster to go',
      async () =>
        !(await hubWorks.get(addonDeployWorkName(probed.name), cluster.name)) &&
        !(await hubWorks.get(addonDeployWorkName(configured.name), cluster.name)),
      60_000,
    );
  });
});
