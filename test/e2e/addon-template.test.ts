// Template add-ons (src/addon/hub/template) on the shared real hub and cluster1's work agent: a
// ClusterManagementAddOn listing `addontemplates` with a default AddOnTemplate (as `clusteradm addon
// create` writes it) is run as an add-on — its agent rendered from the template with the cluster's
// values and an AddOnDeploymentConfig's variables, applied on cluster1, re-rendered when the
// template changes (the add-on manager records its spec hash); its KubeClient registration and hub permissions (RoleBindings for the cluster's
// own add-on group, in its namespace and in another) kept and removed with the ManagedClusterAddOn.
// And the boundary: a hub user who may only write ManagedClusterAddOns in a cluster namespace
// cannot point one at another AddOnTemplate (that would choose what runs on the cluster).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAddonHub } from '../../src/addon/hub/index.ts';
import { startTemplateAddons, type TemplateAddons } from '../../src/addon/hub/template/controller.ts';
import type { ManagedClusterAddOn } from '../../src/api/addon.ts';
import { addonAgentUser, addonClusterGroup } from '../../src/api/addon-registration.ts';
import { type AddOnTemplate, addOnTemplateResource } from '../../src/api/addon-template.ts';
import { isConflict, isForbidden, ResourceClient } from '../../src/kube/index.ts';
import {
  clusterRoleResource,
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
  roleResource,
} from '../../src/registration/hub/resources.ts';
import {
  type AddonTestCluster,
  adcs,
  cmas,
  kinds,
  mcas,
  onManaged,
  setUpAddonCluster,
  unique,
  waitFor,
} from './fixtures/addon-deploy.ts';
import { Cleanups, hub, kubeconfigAs } from './fixtures/registration-hub.ts';

const group = 'addon.open-cluster-management.io';
const templates = new ResourceClient<AddOnTemplate>(hub, addOnTemplateResource);
const roles = new ResourceClient<RbacRole>(hub, roleResource);
const clusterRoles = new ResourceClient<RbacRole>(hub, clusterRoleResource);
const bindings = new ResourceClient<RbacBinding>(hub, roleBindingResource);
const namespaces = new ResourceClient(hub, kinds.namespace);
const configMaps = onManaged<{ metadata: { name: string }; data?: Record<string, string> } & object>(
  kinds.configMap,
);

const addon = unique('tmpl');
const installNamespace = unique('tmpl-agent');
const sharedNamespace = unique('tmpl-shared');
const reader = unique('tmpl-reader');
const cleanups = new Cleanups();
let cluster: AddonTestCluster;
let running: TemplateAddons;

const template = (name: string, value: string, over: Partial<AddOnTemplate['spec']> = {}): AddOnTemplate => ({
  apiVersion: `${group}/v1alpha1`,
  kind: 'AddOnTemplate',
  metadata: { name },
  spec: {
    addonName: addon,
    agentSpec: {
      workload: {
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            // moved to the AddOnDeploymentConfig's agentInstallNamespace, as OCM's template add-ons do
            metadata: { name: 'tmpl-agent', namespace: 'default' },
            data: { cluster: '{{CLUSTER_NAME}}', level: '{{LOG_LEVEL}}', value },
          },
        ],
      },
    },
    registration: [
      {
        type: 'KubeClient',
        kubeClient: {
          hubPermissions: [
            { type: 'CurrentCluster', currentCluster: { clusterRoleName: reader } },
            {
              type: 'SingleNamespace',
              singleNamespace: {
                namespace: sharedNamespace,
                roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: reader },
              },
            },
          ],
        },
      },
    ],
    ...over,
  },
});

const bindingName = (kind: string) =>
  `open-cluster-management:${addon}:${cluster.name}:${kind}:${reader}:agent`;

async function agentConfigMap() {
  return configMaps.get('tmpl-agent', installNamespace);
}

beforeAll(async () => {
  cluster = await setUpAddonCluster([]);
  cleanups.add(() => cluster.cleanup());
  cluster.removeNamespaceOnCleanup(installNamespace);
  await namespaces.create({ metadata: { name: sharedNamespace } });
  cleanups.add(() => namespaces.delete(sharedNamespace, undefined, { ignoreNotFound: true }));
  const rule = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }];
  await clusterRoles.create({ metadata: { name: reader }, rules: rule } as RbacRole);
  cleanups.add(() => clusterRoles.delete(reader, undefined, { ignoreNotFound: true }));
  await roles.create({ metadata: { name: reader, namespace: sharedNamespace }, rules: rule } as RbacRole);
  for (const name of [`${addon}-v1`, `${addon}-other`]) {
    await templates.create(template(name, name));
    cleanups.add(() => templates.delete(name, undefined, { ignoreNotFound: true }));
  }
  await adcs.create({
    metadata: { name: 'tmpl-settings', namespace: cluster.name },
    spec: {
      agentInstallNamespace: installNamespace,
      customizedVariables: [{ name: 'LOG_LEVEL', value: '4' }],
    },
  });
  // what `clusteradm addon create` writes
  await cmas.create({
    apiVersion: `${group}/v1alpha1`,
    kind: 'ClusterManagementAddOn',
    metadata: { name: addon, annotations: { 'addon.open-cluster-management.io/lifecycle': 'addon-manager' } },
    spec: {
      supportedConfigs: [
        { group, resource: 'addontemplates', defaultConfig: { name: `${addon}-v1` } },
        {
          group,
          resource: 'addondeploymentconfigs',
          defaultConfig: { name: 'tmpl-settings', namespace: cluster.name },
        },
      ],
      installStrategy: { type: 'Manual' },
    },
  });
  cleanups.add(() => cmas.delete(addon, undefined, { ignoreNotFound: true }));
  // as `tether hub` runs them: the add-on manager (config references: a template's spec hash) and
  // the template add-ons
  const addonHub = await startAddonHub({
    hubKubeConfig: hub,
    leaderElection: false,
    installAdmission: false,
  });
  cleanups.add(() => addonHub.stop());
  running = startTemplateAddons({ hubKubeConfig: hub, leaderElection: false });
  cleanups.add(() => running.stop());
  await waitFor('the template add-on to start', async () => running.running().includes(addon));
});

afterAll(() => cleanups.run());

describe('template add-ons', () => {
  it('renders the agent from the template with the cluster’s values and the config’s variables and namespace, and applies it', async () => {
    await cluster.enable(addon, installNamespace);
    const cm = await waitFor('the agent ConfigMap on cluster1', agentConfigMap, 60_000);
    expect(cm.data).toEqual({ cluster: cluster.name, level: '4', value: `${addon}-v1` });
  });

  it('registers the agent with OCM’s template identity and binds its hub permissions to this cluster’s add-on group only', async () => {
    const mca = await waitFor('status.registrations', async () => {
      const m = await mcas.get(addon, cluster.name);
      return m?.status?.registrations?.length ? m : undefined;
    });
    expect(mca.status?.registrations).toEqual([
      {
        signerName: 'kubernetes.io/kube-apiserver-client',
        subject: {
          user: addonAgentUser(cluster.name, addon, `${addon}-agent`),
          groups: [
            addonClusterGroup(cluster.name, addon),
            `system:open-cluster-management:addon:${addon}`,
            'system:authenticated',
          ],
        },
      },
    ]);
    const subjects = [
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: addonClusterGroup(cluster.name, addon) },
    ];
    const inCluster = await waitFor('the CurrentCluster binding', () =>
      bindings.get(bindingName('clusterrole'), cluster.name),
    );
    expect(inCluster.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: reader,
    });
    expect(inCluster.subjects).toEqual(subjects);
    const shared = await waitFor('the SingleNamespace binding', () =>
      bindings.get(bindingName('role'), sharedNamespace),
    );
    expect(shared.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: reader });
    expect(shared.subjects).toEqual(subjects);
  });

  it('re-renders the agent when the template changes', async () => {
    const current = await templates.get(`${addon}-v1`);
    if (!current) throw new Error('template gone');
    await templates.replace({ ...template(`${addon}-v1`, 'changed'), metadata: current.metadata });
    await waitFor(
      'the changed template applied',
      async () => (await agentConfigMap())?.data?.value === 'changed',
      60_000,
    );
  });

  it('a hub user who may write ManagedClusterAddOns in the cluster namespace cannot point one at another AddOnTemplate', async () => {
    const done = new Cleanups();
    try {
      const editorName = unique('tmpl-editor');
      const name = unique('tmpl-editor');
      await roles.create({
        metadata: { name, namespace: cluster.name },
        rules: [
          {
            apiGroups: [group],
            resources: ['managedclusteraddons'],
            verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
          },
        ],
      } as RbacRole);
      done.add(() => roles.delete(name, cluster.name, { ignoreNotFound: true }));
      await bindings.create({
        metadata: { name, namespace: cluster.name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: editorName }],
      } as RbacBinding);
      done.add(() => bindings.delete(name, cluster.name, { ignoreNotFound: true }));
      const editor = new ResourceClient<ManagedClusterAddOn>(
        await kubeconfigAs({ commonName: editorName }),
        mcas.descriptor,
      );
      const err = await waitFor('the editor to be refused by admission, not RBAC', async () => {
        const mca = await editor.get(addon, cluster.name).catch(() => undefined);
        if (!mca) return undefined; // the grant has not reached the authorizer yet
        return editor
          .replace({
            ...mca,
            spec: { ...mca.spec, configs: [{ group, resource: 'addontemplates', name: `${addon}-other` }] },
          })
          .then(
            () => new Error('admitted'),
            // the add-on manager wrote the add-on between the read and the replace: read again
            (e: Error) => (isConflict(e) ? undefined : e),
          );
      });
      expect(isForbidden(err), err.message).toBe(true);
      expect(err.message).toContain('needs configure on managedclusteraddons');
      expect((await agentConfigMap())?.data?.value).toBe('changed');
    } finally {
      await done.run();
    }
  });

  it('removes the agent and every hub binding, also outside the cluster namespace, with the ManagedClusterAddOn', async () => {
    await mcas.delete(addon, cluster.name);
    await waitFor('the agent ConfigMap removed', async () => (await agentConfigMap()) === undefined, 60_000);
    await waitFor(
      'the SingleNamespace binding removed',
      async () => (await bindings.get(bindingName('role'), sharedNamespace)) === undefined,
      60_000,
    );
    await waitFor(
      'the CurrentCluster binding removed',
      async () => (await bindings.get(bindingName('clusterrole'), cluster.name)) === undefined,
      60_000,
    );
  });

  it('stops the add-on when its ClusterManagementAddOn is deleted; the ClusterManagementAddOn stays deleted', async () => {
    await cmas.delete(addon);
    await waitFor('the template add-on to stop', async () => !running.running().includes(addon));
    expect(await cmas.get(addon)).toBeUndefined();
  });
});
