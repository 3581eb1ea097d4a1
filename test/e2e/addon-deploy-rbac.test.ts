// An AddonManager does its part with nothing but the rules it publishes for the hub's ClusterRole
// (addonDeployHubRules), elected leader on its own Lease: ensures the ClusterManagementAddOn,
// delivers the agent, writes the status, and removes the work when the addon is deleted.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { addonDeployHubRules } from '../../src/addon/hub/deploy/rbac.ts';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import { addonDeployWorkName } from '../../src/api/addon.ts';
import {
  type AddonTestCluster,
  cmas,
  hubWorks,
  kinds,
  mcas,
  onManaged,
  setUpAddonCluster,
  unique,
  waitFor,
} from './fixtures/addon-deploy.ts';
import { testEnv } from './fixtures/env.ts';
import { kubectl } from './fixtures/helpers.ts';
import { kubeconfigAs, admin as rbacAdmin } from './fixtures/registration-hub.ts';

const addon: AgentAddon = {
  name: unique('deploy-rbac'),
  description: 'delivered by a restricted manager',
  manifests: () => [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'restricted' },
      data: { a: '1' },
    } as KubernetesObject,
  ],
};
const user = unique('addon-deploy-manager');
const leaseNamespace = unique('addon-deploy-lease');
const hubKubeconfigPath = testEnv().hub.kubeconfigPath;
let cluster: AddonTestCluster | undefined;

beforeAll(async () => {
  await kubectl(hubKubeconfigPath, ['create', 'namespace', leaseNamespace]);
  await rbacAdmin.clusterRoles.create({ metadata: { name: user }, rules: addonDeployHubRules() });
  await rbacAdmin.clusterRoleBindings.create({
    metadata: { name: user },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
  cluster = await setUpAddonCluster([addon], {
    hubKubeConfig: await kubeconfigAs({ commonName: user }),
    registration: false,
    leaderElection: { namespace: leaseNamespace, identity: user },
  });
});

afterAll(async () => {
  await cluster?.cleanup();
  await rbacAdmin.clusterRoleBindings.delete(user, undefined, { ignoreNotFound: true });
  await rbacAdmin.clusterRoles.delete(user, undefined, { ignoreNotFound: true });
  await kubectl(hubKubeconfigPath, [
    'delete',
    'namespace',
    leaseNamespace,
    '--ignore-not-found',
    '--wait=false',
  ]);
});

it('installs and removes an addon with only addonDeployHubRules, as the elected leader', async () => {
  if (!cluster) throw new Error('set-up failed');
  const c = cluster;
  await waitFor('the restricted manager to lead', async () => c.manager.isLeader());
  expect((await cmas.get(addon.name))?.spec.addOnMeta?.description).toBe('delivered by a restricted manager');
  const ns = unique('restricted-ns');
  await c.enable(addon.name, ns);
  await waitFor('the ConfigMap on cluster1', () => onManaged(kinds.configMap).get('restricted', ns));
  await c.waitForCondition(addon.name, 'ManifestApplied', { status: 'True' });
  await c.waitForCondition(addon.name, 'Progressing', { status: 'False', reason: 'InstallSucceed' });

  await mcas.delete(addon.name, c.name);
  await waitFor(
    'the addon and its work to be gone',
    async () =>
      !(await mcas.get(addon.name, c.name)) &&
      !(await hubWorks.get(addonDeployWorkName(addon.name), c.name)) &&
      !(await onManaged(kinds.configMap).get('restricted', ns)),
    60_000,
  );
});
