// The add-on manager does its whole job with nothing but the rules it publishes for the hub's
// ClusterRole (addonInstallHubRules), elected leader on its own Lease: stamps the lifecycle,
// creates and deletes add-ons by placement decisions, writes their config references and the
// ClusterManagementAddOn's status.
import { afterEach, describe, expect, it } from 'vitest';
import { addonInstallHubRules } from '../../src/addon/hub/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  addonAdmin,
  addonClusters,
  createAddon,
  placementClusters,
  startControllers,
} from './fixtures/addon-install.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  Cleanups,
  createPlacement,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';
import { kubeconfigAs, admin as rbacAdmin } from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const group = 'addon.open-cluster-management.io';
const resource = 'addondeploymentconfigs';

/** A hub user allowed exactly addonInstallHubRules(). */
async function addonManagerIdentity() {
  const user = uniqueName('addon-manager');
  cleanups.add(() => rbacAdmin.clusterRoles.delete(user, undefined, { ignoreNotFound: true }));
  cleanups.add(() => rbacAdmin.clusterRoleBindings.delete(user, undefined, { ignoreNotFound: true }));
  await rbacAdmin.clusterRoles.create({ metadata: { name: user }, rules: addonInstallHubRules() });
  await rbacAdmin.clusterRoleBindings.create({
    metadata: { name: user },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
  return kubeconfigAs({ commonName: user });
}

describe('add-on manager identity', () => {
  it('installs, configures and cleans up with only its published rules, as the elected leader', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-rbac', 2, { tier: 'gold' });
    const [c0, c1] = clusters as [string, string];
    await addonAdmin.deploymentConfigs.create({
      metadata: { name: 'defaults', namespace: ns },
      spec: { agentInstallNamespace: 'agents' },
    });
    const placement = await createPlacement(ns, {
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { tier: 'gold' } } } }],
    });
    const kc = await addonManagerIdentity();
    const hub = await startControllers(cleanups, ns, {
      hubKubeConfig: kc,
      leaderElection: { namespace: ns, name: uniqueName('addon-manager-lock'), retryPeriodMs: 200 },
    });
    await pollUntil(() => hub.isLeader() || undefined, {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'add-on manager elected',
    });
    await waitForDecisions(ns, placement, clusters);
    const name = await createAddon(cleanups, {
      supportedConfigs: [{ group, resource, defaultConfig: { name: 'defaults', namespace: ns } }],
      installStrategy: { type: 'Placements', placements: [{ name: placement, namespace: ns }] },
    });

    await waitFor(
      async () => (await addonClusters(name)).join() === [c0, c1].join() || undefined,
      'two add-ons',
    );
    const refs = await waitFor(async () => {
      const r = (await addonAdmin.mcas.get(name, c0))?.status?.configReferences;
      return r?.[0]?.desiredConfig?.specHash ? r : undefined;
    }, 'configReferences with a hash');
    expect(refs[0]?.desiredConfig?.name).toBe('defaults');
    const cma = await waitFor(async () => {
      const c = await addonAdmin.cmas.get(name);
      return c?.status?.installProgressions?.length === 1 && c.status.defaultconfigReferences ? c : undefined;
    }, 'ClusterManagementAddOn status');
    expect(cma.metadata.annotations?.['addon.open-cluster-management.io/lifecycle']).toBe('addon-manager');

    await admin.clusters.patchMerge(c1, { metadata: { labels: { tier: 'bronze' } } });
    await waitFor(
      async () => (await addonClusters(name)).join() === c0 || undefined,
      `only ${c0} keeps the add-on`,
    );
  });
});
