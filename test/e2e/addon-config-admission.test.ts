// The add-on configuration admission policies (src/addon/hub/config/admission.ts) against a real
// hub user: one holding only the ordinary write verbs on AddOnDeploymentConfigs and
// ManagedClusterAddOns in a cluster namespace (or on ClusterManagementAddOns) cannot choose the
// image, namespace or settings an add-on agent runs with; the same user granted `configure` can.
// An AddonManager renders the test add-on's agent into its ManifestWork, so the image the hub sends
// is checked too.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  installNamespaceAnnotation,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
  managedClusterAddOnV1beta1Resource,
} from '../../src/api/addon.ts';
import type { ManifestWork } from '../../src/api/work.ts';
import { isForbidden, ResourceClient } from '../../src/kube/index.ts';
import {
  clusterRoleBindingResource,
  clusterRoleResource,
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
  roleResource,
} from '../../src/registration/hub/resources.ts';
import {
  type AddonTestCluster,
  adcs,
  agentDeployment,
  cmas,
  mcas,
  setUpAddonCluster,
  unique,
  waitFor,
} from './fixtures/addon-deploy.ts';
import { Cleanups, hub, kubeconfigAs } from './fixtures/registration-hub.ts';

const group = 'addon.open-cluster-management.io';
const adcRef = { group, resource: 'addondeploymentconfigs' };
const hubImage = 'quay.io/tether/agent:v1';
const mirror = 'attacker.example/tether';

const agentAddon: AgentAddon = {
  name: unique('config-admission'),
  supportedConfigs: [adcRef],
  manifests: () => [agentDeployment('agent', hubImage)],
};

const editorName = unique('e2e-addon-editor');
const writeVerbs = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const roles = new ResourceClient<RbacRole>(hub, roleResource);
const roleBindings = new ResourceClient<RbacBinding>(hub, roleBindingResource);
const clusterRoles = new ResourceClient<RbacRole>(hub, clusterRoleResource);
const clusterRoleBindings = new ResourceClient<RbacBinding>(hub, clusterRoleBindingResource);

let cluster: AddonTestCluster;
let editor: {
  adcs: ResourceClient<AddOnDeploymentConfig>;
  mcas: ResourceClient<ManagedClusterAddOn>;
  mcasV1beta1: ResourceClient<ManagedClusterAddOn>;
  cmas: ResourceClient<ClusterManagementAddOn>;
};
const installNamespace = unique('agent-ns');
const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** The image of the agent Deployment in the add-on's ManifestWork. */
function imageOf(w: ManifestWork): string | undefined {
  const d = w.spec.workload?.manifests?.find((m) => m.kind === 'Deployment') as
    | { spec?: { template?: { spec?: { containers?: { image?: string }[] } } } }
    | undefined;
  return d?.spec?.template?.spec?.containers?.[0]?.image;
}

/** Expects the write refused by admission for lack of `configure` on `plural`; returns the message. */
async function refused(write: Promise<unknown>, plural: string): Promise<string> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error('the write was admitted');
  expect(isForbidden(err), err.message).toBe(true);
  expect(err.message).toContain(`needs configure on ${plural}`);
  return err.message;
}

/** Retries `write` while it is refused (a grant takes a moment to reach RBAC and the authorizer). */
function eventually<T>(description: string, write: () => Promise<T>): Promise<T> {
  return waitFor(description, () =>
    write().catch((err: unknown) => {
      if (isForbidden(err)) return undefined;
      throw err;
    }),
  );
}

/** A Role in the cluster namespace granting the editor `verbs` on add-on objects, undone by cleanup. */
async function grantInClusterNamespace(name: string, verbs: string[], done: Cleanups): Promise<void> {
  const ns = cluster.name;
  await roles.create({
    metadata: { name, namespace: ns },
    rules: [{ apiGroups: [group], resources: ['addondeploymentconfigs', 'managedclusteraddons'], verbs }],
  } as RbacRole);
  done.add(() => roles.delete(name, ns, { ignoreNotFound: true }));
  await roleBindings.create({
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: editorName }],
  } as RbacBinding);
  done.add(() => roleBindings.delete(name, ns, { ignoreNotFound: true }));
}

/** The same on ClusterManagementAddOns (cluster-scoped). */
async function grantOnClusterManagementAddOns(name: string, verbs: string[], done: Cleanups): Promise<void> {
  await clusterRoles.create({
    metadata: { name },
    rules: [{ apiGroups: [group], resources: ['clustermanagementaddons'], verbs }],
  } as RbacRole);
  done.add(() => clusterRoles.delete(name, undefined, { ignoreNotFound: true }));
  await clusterRoleBindings.create({
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: editorName }],
  } as RbacBinding);
  done.add(() => clusterRoleBindings.delete(name, undefined, { ignoreNotFound: true }));
}

const fileCleanups = new Cleanups();

beforeAll(async () => {
  cluster = await setUpAddonCluster([agentAddon]);
  fileCleanups.add(() => cluster.cleanup());
  const kc = await kubeconfigAs({ commonName: editorName });
  editor = {
    adcs: new ResourceClient<AddOnDeploymentConfig>(kc, addOnDeploymentConfigResource),
    mcas: new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnResource),
    mcasV1beta1: new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnV1beta1Resource),
    cmas: new ResourceClient<ClusterManagementAddOn>(kc, clusterManagementAddOnResource),
  };
  // The editor's ordinary rights in the cluster namespace, as a namespace owner would grant them.
  await grantInClusterNamespace('addon-editor', writeVerbs, fileCleanups);
  // What the hub chose: the add-on's configuration, and one more config it did not pick for it.
  await adcs.create({
    metadata: { name: 'hub-settings', namespace: cluster.name },
    spec: { customizedVariables: [{ name: 'LEVEL', value: 'hub' }] },
  });
  await adcs.create({
    metadata: { name: 'mirrored', namespace: cluster.name },
    spec: { registries: [{ source: 'quay.io/tether', mirror }] },
  });
  await cluster.enable(agentAddon.name, installNamespace, [
    { ...adcRef, namespace: cluster.name, name: 'hub-settings' },
  ]);
  await cluster.waitForWork(agentAddon.name, "rendered with the hub's image", (w) => imageOf(w) === hubImage);
});

afterAll(() => fileCleanups.run());

describe('add-on configuration admission', () => {
  it('a hub user with write verbs on add-on objects in a cluster namespace cannot change the image its add-on agent runs', async () => {
    const ns = cluster.name;
    const adcsPlural = 'addondeploymentconfigs';
    const mcasPlural = 'managedclusteraddons';
    // RBAC lets the editor through: a metadata-only write of the hub's config is admitted.
    await eventually('the editor to label the hub config', () =>
      editor.adcs.patchMerge('hub-settings', { metadata: { labels: { seen: 'yes' } } }, ns),
    );
    const before = await adcs.get('hub-settings', ns);

    // the AddOnDeploymentConfig the add-on uses: registries, and every other spec field
    const message = await refused(
      editor.adcs.patchMerge(
        'hub-settings',
        { spec: { registries: [{ source: 'quay.io/tether', mirror }] } },
        ns,
      ),
      adcsPlural,
    );
    expect(message).toContain(
      `user ${editorName} may not change the spec of AddOnDeploymentConfig hub-settings`,
    );
    expect(message).toContain(`in namespace ${ns}`);
    for (const spec of [
      { agentInstallNamespace: 'kube-system' },
      { nodePlacement: { nodeSelector: { 'node-role.kubernetes.io/control-plane': '' } } },
      { customizedVariables: [{ name: 'Image', value: `${mirror}/agent:v1` }] },
      { proxyConfig: { httpsProxy: 'http://attacker.example:3128' } },
    ]) {
      await refused(editor.adcs.patchMerge('hub-settings', { spec }, ns), adcsPlural);
    }
    // a new AddOnDeploymentConfig, with registries or without
    await refused(
      editor.adcs.create({
        metadata: { name: 'mine', namespace: ns },
        spec: { registries: [{ source: 'quay.io/tether', mirror }] },
      }),
      adcsPlural,
    );
    await refused(editor.adcs.create({ metadata: { name: 'mine', namespace: ns }, spec: {} }), adcsPlural);

    // the ManagedClusterAddOn: its configs, its install namespace (also through v1beta1's annotation)
    await refused(
      editor.mcas.patchMerge(
        agentAddon.name,
        { spec: { configs: [{ ...adcRef, namespace: ns, name: 'mirrored' }] } },
        ns,
      ),
      mcasPlural,
    );
    await refused(
      editor.mcas.patchMerge(agentAddon.name, { spec: { installNamespace: 'kube-system' } }, ns),
      mcasPlural,
    );
    await refused(
      editor.mcasV1beta1.patchMerge(
        agentAddon.name,
        { metadata: { annotations: { [installNamespaceAnnotation]: 'kube-system' } } },
        ns,
      ),
      mcasPlural,
    );
    const other = unique('other-addon');
    await refused(
      editor.mcas.create({
        metadata: { name: other, namespace: ns },
        spec: { configs: [{ ...adcRef, namespace: ns, name: 'mirrored' }] },
      }),
      mcasPlural,
    );
    // enabling an add-on with the hub's configuration stays the editor's right
    await editor.mcas.create({ metadata: { name: other, namespace: ns }, spec: {} }, { dryRun: true });
    await editor.mcas.patchMerge(agentAddon.name, { metadata: { labels: { seen: 'yes' } } }, ns);

    const after = await adcs.get('hub-settings', ns);
    expect(after?.spec).toEqual(before?.spec);
    expect((await mcas.get(agentAddon.name, ns))?.spec).toMatchObject({
      installNamespace,
      configs: [{ ...adcRef, namespace: ns, name: 'hub-settings' }],
    });
    const work = await cluster.waitForWork(agentAddon.name, 'the rendered agent', (w) => w);
    expect(imageOf(work)).toBe(hubImage);
  });

  it('the same user granted configure changes the add-on configuration, and the agent image follows', async () => {
    const ns = cluster.name;
    await grantInClusterNamespace('addon-configurer', ['configure'], cleanups);
    await eventually('the configurer to set registries', () =>
      editor.adcs.patchMerge(
        'hub-settings',
        { spec: { registries: [{ source: 'quay.io/tether', mirror }] } },
        ns,
      ),
    );
    await cluster.waitForWork(
      agentAddon.name,
      'rendered with the mirror',
      (w) => imageOf(w) === `${mirror}/agent:v1`,
    );
    await editor.mcas.patchMerge(
      agentAddon.name,
      { spec: { configs: [{ ...adcRef, namespace: ns, name: 'mirrored' }], installNamespace: 'elsewhere' } },
      ns,
      { dryRun: true },
    );
    await editor.adcs.create({ metadata: { name: 'mine', namespace: ns }, spec: {} }, { dryRun: true });
  });

  it('a hub user who may write ClusterManagementAddOns cannot set their default or placement configs without configure', async () => {
    const plural = 'clustermanagementaddons';
    const role = unique('cma-editor');
    await grantOnClusterManagementAddOns(role, writeVerbs, cleanups);
    const name = unique('cma');
    cleanups.add(() => cmas.delete(name, undefined, { ignoreNotFound: true }));
    const defaults = (configName: string) => ({
      supportedConfigs: [{ ...adcRef, defaultConfig: { namespace: cluster.name, name: configName } }],
    });
    // supported kinds without a default, and the add-on's description, need no more than write verbs
    await eventually('RBAC to let the editor create ClusterManagementAddOns', () =>
      editor.cmas.create({ metadata: { name }, spec: { supportedConfigs: [adcRef] } }),
    );
    await editor.cmas.patchMerge(name, { spec: { addOnMeta: { displayName: 'renamed' } } });
    const other = unique('cma');
    const message = await refused(
      editor.cmas.create({ metadata: { name: other }, spec: defaults('mirrored') }, { dryRun: true }),
      plural,
    );
    expect(message).toContain(`of ClusterManagementAddOn ${other}`);
    await refused(editor.cmas.patchMerge(name, { spec: defaults('mirrored') }), plural);
    const placements = (configs: unknown[]) => ({
      installStrategy: {
        type: 'Placements',
        placements: [{ namespace: cluster.name, name: 'all', configs }],
      },
    });
    await refused(
      editor.cmas.patchMerge(name, {
        spec: placements([{ ...adcRef, namespace: cluster.name, name: 'mirrored' }]),
      }),
      plural,
    );
    await editor.cmas.patchMerge(name, { spec: placements([]) });

    await grantOnClusterManagementAddOns(`${role}-configure`, ['configure'], cleanups);
    await eventually('the configurer to set a default config', () =>
      editor.cmas.patchMerge(name, { spec: defaults('mirrored') }),
    );
  });
});
