// Hub admission for add-on configuration, as ValidatingAdmissionPolicies (CEL with the `authorizer`
// library, evaluated by the apiserver itself). Whatever decides what an add-on agent runs — its
// image (registries), where (agentInstallNamespace, installNamespace, nodePlacement), with what
// (customizedVariables, proxyConfig, resources) — is written only by holders of the verb
// `configure` in group addon.open-cluster-management.io, on top of their ordinary write verbs:
//   - an AddOnDeploymentConfig's create, or an update that changes its spec (every spec field steers
//     the agent): `configure` on addondeploymentconfigs for that namespace/name;
//   - a ManagedClusterAddOn's create with spec.configs or a spec.installNamespace other than OCM's
//     default, or an update changing either: `configure` on managedclusteraddons for it;
//   - a ClusterManagementAddOn's create or update that sets or changes its default configs
//     (spec.supportedConfigs[].defaultConfig) or, for a Placements strategy, its placements'
//     configs (in order): `configure` on clustermanagementaddons for it.
// Without them a user with plain write rights in a cluster namespace could point the agent (and
// with it the agent's rights on the managed cluster) at an image of their choosing.
// The policies match v1alpha1 with matchPolicy Equivalent: the apiserver converts a v1beta1 write
// (installNamespace as an annotation, defaultConfigs) to v1alpha1 before evaluating, so one set of
// expressions covers both versions. Status and other subresources are not matched; metadata-only
// writes (finalizers, ownerReferences, labels) pass without a check.
// Other config kinds an add-on lists in supportedConfigs are its own resources: who may write them
// is that add-on's RBAC (docs/security.md). Owns these objects and waiting for them; not RBAC.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  addonApiGroup,
  clusterManagementAddOnResource,
  managedClusterAddOnResource,
} from '../../../api/addon.ts';
import { addonAgentNamespace } from '../../../api/cluster.ts';
import { admissionPolicy, applyObjects, ResourceClient, waitUntilEnforced } from '../../../kube/index.ts';

/** The verb that lets a user decide what and where an add-on agent runs. */
export const configureVerb = 'configure';

export const deploymentConfigPolicyName = 'addondeploymentconfig-configure.open-cluster-management.io';
export const managedClusterAddOnPolicyName = 'managedclusteraddon-configure.open-cluster-management.io';
export const clusterManagementAddOnPolicyName = 'clustermanagementaddon-configure.open-cluster-management.io';

const fieldManager = 'tether';

export function addonConfigAdmissionPolicyNames(): string[] {
  return [deploymentConfigPolicyName, managedClusterAddOnPolicyName, clusterManagementAddOnPolicyName];
}

/** CREATE and UPDATE of `plural` at v1alpha1; writes at v1beta1 are converted to it. */
const writesOf = (plural: string) => ({
  matchPolicy: 'Equivalent',
  resourceRules: [
    {
      apiGroups: [addonApiGroup],
      apiVersions: ['v1alpha1'],
      operations: ['CREATE', 'UPDATE'],
      resources: [plural],
    },
  ],
});

/** `authorizer` check of `configure` on `plural`, for the object (namespaced or not). */
function mayConfigure(plural: string, namespaced: boolean): string {
  const scope = namespaced ? '.namespace(object.metadata.namespace)' : '';
  return (
    `authorizer.group('${addonApiGroup}').resource('${plural}')${scope}` +
    `.name(object.metadata.name).check('${configureVerb}').allowed()`
  );
}

/** "<what>: that needs configure on <plural> …", the tail of every refusal. */
function needs(plural: string, namespaced: boolean): string {
  const where = namespaced ? " + ' in namespace ' + object.metadata.namespace" : '';
  return `': that needs ${configureVerb} on ${plural} (group ${addonApiGroup})'${where}`;
}

/** `expr` of the object before the write, `empty` on CREATE. */
const before = (expr: (o: string) => string, empty: string): string =>
  `request.operation == 'UPDATE' ? (${expr('oldObject')}) : ${empty}`;

function deploymentConfigPolicy(): KubernetesObject[] {
  const plural = addOnDeploymentConfigResource.plural;
  return admissionPolicy(deploymentConfigPolicyName, {
    matchConstraints: writesOf(plural),
    validations: [
      {
        expression: `(request.operation == 'UPDATE' && object.spec == oldObject.spec) || ${mayConfigure(plural, true)}`,
        messageExpression:
          "'user ' + request.userInfo.username + ' may not ' + " +
          "(request.operation == 'CREATE' ? 'create' : 'change the spec of') + " +
          "' AddOnDeploymentConfig ' + object.metadata.name + ' (its spec decides the image, namespace and " +
          `settings an add-on agent runs with)' + ${needs(plural, true)}`,
        reason: 'Forbidden',
      },
    ],
  });
}

function managedClusterAddOnPolicy(): KubernetesObject[] {
  const plural = managedClusterAddOnResource.plural;
  const configs = (o: string) => `${o}.spec.?configs.orValue([])`;
  // unset and OCM's default namespace are the same choice: the hub's
  const installNamespace = (o: string) =>
    `${o}.spec.?installNamespace.orValue('') == '' ? '${addonAgentNamespace}' : ${o}.spec.installNamespace`;
  return admissionPolicy(managedClusterAddOnPolicyName, {
    matchConstraints: writesOf(plural),
    variables: [
      { name: 'configs', expression: configs('object') },
      { name: 'oldConfigs', expression: before(configs, '[]') },
      { name: 'installNamespace', expression: installNamespace('object') },
      { name: 'oldInstallNamespace', expression: before(installNamespace, `'${addonAgentNamespace}'`) },
    ],
    validations: [
      {
        expression:
          '(variables.configs == variables.oldConfigs && ' +
          `variables.installNamespace == variables.oldInstallNamespace) || ${mayConfigure(plural, true)}`,
        messageExpression:
          "'user ' + request.userInfo.username + ' may not set spec.configs or spec.installNamespace of " +
          "ManagedClusterAddOn ' + object.metadata.name + ' (they decide which configuration and namespace " +
          `its agent runs with)' + ${needs(plural, true)}`,
        reason: 'Forbidden',
      },
    ],
  });
}

function clusterManagementAddOnPolicy(): KubernetesObject[] {
  const plural = clusterManagementAddOnResource.plural;
  const defaults = (o: string) => `${o}.spec.?supportedConfigs.orValue([]).filter(c, has(c.defaultConfig))`;
  // the placements whose configs apply: a Manual strategy applies none of them
  const placements = (o: string) =>
    `${o}.spec.?installStrategy.?type.orValue('Manual') == 'Placements' ? ` +
    `${o}.spec.installStrategy.?placements.orValue([]).filter(p, size(p.?configs.orValue([])) > 0) : []`;
  return admissionPolicy(clusterManagementAddOnPolicyName, {
    matchConstraints: writesOf(plural),
    variables: [
      { name: 'defaults', expression: defaults('object') },
      { name: 'oldDefaults', expression: before(defaults, '[]') },
      { name: 'placements', expression: placements('object') },
      { name: 'oldPlacements', expression: before(placements, '[]') },
    ],
    validations: [
      {
        expression:
          '(variables.defaults == variables.oldDefaults && ' +
          "variables.placements.map(p, p.namespace + '/' + p.name) == " +
          "variables.oldPlacements.map(p, p.namespace + '/' + p.name) && " +
          'variables.placements.map(p, p.configs) == variables.oldPlacements.map(p, p.configs)) || ' +
          mayConfigure(plural, false),
        messageExpression:
          "'user ' + request.userInfo.username + ' may not set the default configs " +
          '(spec.supportedConfigs[].defaultConfig) or placement configs (spec.installStrategy.placements[].configs) ' +
          `of ClusterManagementAddOn ' + object.metadata.name + ${needs(plural, false)}`,
        reason: 'Forbidden',
      },
    ],
  });
}

/** The policies and their bindings, in install order. */
export function addonConfigAdmissionObjects(): KubernetesObject[] {
  return [...deploymentConfigPolicy(), ...managedClusterAddOnPolicy(), ...clusterManagementAddOnPolicy()];
}

/**
 * Applies the policies (server-side apply) and waits until the apiserver enforces them: a probe
 * user that may only create AddOnDeploymentConfigs (granted for the wait) dry-runs one until the
 * policy refuses it. `kc` must be a hub admin (RBAC writes, impersonation).
 */
export async function installAddonConfigAdmission(kc: KubeConfig, timeoutMs = 60_000): Promise<void> {
  await applyObjects(kc, addonConfigAdmissionObjects(), fieldManager);
  await waitUntilEnforced(kc, {
    user: 'tether:addon-config-admission-probe',
    rules: [
      { apiGroups: [addonApiGroup], resources: [addOnDeploymentConfigResource.plural], verbs: ['create'] },
    ],
    write: (asProbe) =>
      new ResourceClient<AddOnDeploymentConfig>(asProbe, addOnDeploymentConfigResource).create(
        { metadata: { name: 'tether-admission-probe', namespace: 'default' }, spec: {} },
        { dryRun: true },
      ),
    refusal: `needs ${configureVerb} on`,
    description: 'the add-on configuration admission policies to be enforced',
    timeoutMs,
    fieldManager,
  });
}
