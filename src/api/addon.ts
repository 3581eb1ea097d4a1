// addon.open-cluster-management.io: ClusterManagementAddOn, ManagedClusterAddOn and
// AddOnDeploymentConfig (all on the hub) — TS types, resource descriptors and add-on names (the CRDs
// are in addon-crds.ts).
// v1alpha1 is the storage version; v1beta1 is served next to it as OCM serves it. The two
// ClusterManagementAddOn / ManagedClusterAddOn schemas differ, so their CRDs convert through a
// webhook (src/addon/conversion.ts); AddOnDeploymentConfig has one schema at both versions.
// Rarely used deep parts (install strategies, rollout progress) are typed loosely.

import type { V1Toleration } from '@kubernetes/client-node';
import type { ObjectMeta } from '../kube/types.ts';
import type { Condition } from './conditions.ts';
import type { ApiResource } from './resource.ts';

export const addonApiGroup = 'addon.open-cluster-management.io';

export const clusterManagementAddOnResource = {
  group: addonApiGroup,
  version: 'v1alpha1',
  plural: 'clustermanagementaddons',
  kind: 'ClusterManagementAddOn',
  namespaced: false,
} as const satisfies ApiResource;

export const managedClusterAddOnResource = {
  group: addonApiGroup,
  version: 'v1alpha1',
  plural: 'managedclusteraddons',
  kind: 'ManagedClusterAddOn',
  namespaced: true,
} as const satisfies ApiResource;

export const addOnDeploymentConfigResource = {
  group: addonApiGroup,
  version: 'v1alpha1',
  plural: 'addondeploymentconfigs',
  kind: 'AddOnDeploymentConfig',
  namespaced: true,
} as const satisfies ApiResource;

/** v1beta1 of the same kinds: served (converted by the webhook), not stored. */
export const clusterManagementAddOnV1beta1Resource = {
  ...clusterManagementAddOnResource,
  version: 'v1beta1',
} as const satisfies ApiResource;

export const managedClusterAddOnV1beta1Resource = {
  ...managedClusterAddOnResource,
  version: 'v1beta1',
} as const satisfies ApiResource;

export const addOnDeploymentConfigV1beta1Resource = {
  ...addOnDeploymentConfigResource,
  version: 'v1beta1',
} as const satisfies ApiResource;

// ---- names ----

export const AddOnCondition = {
  Available: 'Available',
  Degraded: 'Degraded',
  Progressing: 'Progressing',
} as const;

/** Label naming the add-on a hub object (CSR, ManifestWork, …) belongs to. */
export const addonNameLabel = 'open-cluster-management.io/addon-name';

/** Where a v1beta1 ManagedClusterAddOn keeps v1alpha1's `spec.installNamespace` (OCM's key). */
export const installNamespaceAnnotation = 'addon.open-cluster-management.io/v1alpha1-install-namespace';

/**
 * The name a v1beta1 `defaultConfigs` entry carries when the v1alpha1 `supportedConfigs` entry had
 * no `defaultConfig` (OCM's sentinel; deliberately not a valid object name).
 */
export const reservedNoDefaultConfigName = '__reserved_no_default__';

/** The signer whose v1alpha1 registrations are v1beta1 `kubeClient` registrations. */
export const kubeApiserverClientSignerName = 'kubernetes.io/kube-apiserver-client';

// ---- types (v1alpha1) ----

export interface AddOnMeta {
  displayName?: string;
  description?: string;
}

export interface ConfigCoordinates {
  crdName?: string;
  crName?: string;
  lastObservedGeneration?: number;
}

export interface ConfigGroupResource {
  /** '' for the core group; defaults to ''. */
  group?: string;
  resource: string;
}

export interface ConfigReferent {
  namespace?: string;
  name: string;
}

export interface AddOnConfig extends ConfigGroupResource, ConfigReferent {}

export interface ConfigMeta extends ConfigGroupResource {
  defaultConfig?: ConfigReferent;
}

export interface ConfigSpecHash extends ConfigReferent {
  specHash?: string;
}

export interface InstallStrategy {
  /** `Manual` unless set. */
  type?: 'Manual' | 'Placements';
  /** Placement strategies (name, namespace, configs, rolloutStrategy) are kept as written. */
  placements?: Record<string, unknown>[];
}

export interface ClusterManagementAddOnSpec {
  addOnMeta?: AddOnMeta;
  /** Deprecated in OCM; not served at v1beta1. */
  addOnConfiguration?: ConfigCoordinates;
  supportedConfigs?: ConfigMeta[];
  installStrategy?: InstallStrategy;
}

export interface DefaultConfigReference extends ConfigGroupResource {
  desiredConfig?: ConfigSpecHash;
}

export interface ClusterManagementAddOnStatus {
  /** Spelled with a lower-case c at v1alpha1, as OCM does. */
  defaultconfigReferences?: DefaultConfigReference[];
  installProgressions?: Record<string, unknown>[];
}

export interface ClusterManagementAddOn {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1';
  kind: 'ClusterManagementAddOn';
  metadata: ObjectMeta;
  spec: ClusterManagementAddOnSpec;
  status?: ClusterManagementAddOnStatus;
}

export interface ManagedClusterAddOnSpec {
  /** Defaults to open-cluster-management-agent-addon. */
  installNamespace?: string;
  configs?: AddOnConfig[];
}

export interface RegistrationConfig {
  signerName: string;
  subject?: { user?: string; groups?: string[]; organizationUnit?: string[] };
}

export interface ConfigReference extends ConfigGroupResource {
  /** Deprecated in OCM in favour of desiredConfig; kept in step with it. */
  name: string;
  namespace?: string;
  desiredConfig?: ConfigSpecHash;
  lastAppliedConfig?: ConfigSpecHash;
  lastObservedGeneration?: number;
}

export type KubeClientDriver = 'csr' | 'token';

export interface ManagedClusterAddOnStatus {
  conditions?: Condition[];
  relatedObjects?: { group: string; resource: string; namespace?: string; name: string }[];
  addOnMeta?: AddOnMeta;
  addOnConfiguration?: ConfigCoordinates;
  supportedConfigs?: ConfigGroupResource[];
  configReferences?: ConfigReference[];
  namespace?: string;
  registrations?: RegistrationConfig[];
  healthCheck?: { mode?: 'Lease' | 'Customized' };
  kubeClientDriver?: KubeClientDriver;
}

export interface ManagedClusterAddOn {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1';
  kind: 'ManagedClusterAddOn';
  metadata: ObjectMeta;
  spec: ManagedClusterAddOnSpec;
  status?: ManagedClusterAddOnStatus;
}

export interface ProxyConfig {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
  /** CA bundle (base64) to verify an HTTPS proxy. */
  caBundle?: string;
}

export interface ContainerResourceRequirements {
  /** `<kind>:<name>:<container>`, kind one of deployments, daemonsets, …, pods or `*`. */
  containerID: string;
  resources: {
    limits?: Record<string, string | number>;
    requests?: Record<string, string | number>;
    claims?: { name: string; request?: string }[];
  };
}

export interface AddOnDeploymentConfigSpec {
  customizedVariables?: { name: string; value?: string }[];
  nodePlacement?: { nodeSelector?: Record<string, string>; tolerations?: V1Toleration[] };
  registries?: { mirror: string; source?: string }[];
  proxyConfig?: ProxyConfig;
  /** Defaults to open-cluster-management-agent-addon; '' means the add-on's own default. */
  agentInstallNamespace?: string;
  resourceRequirements?: ContainerResourceRequirements[];
}

export interface AddOnDeploymentConfig {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1';
  kind: 'AddOnDeploymentConfig';
  metadata: ObjectMeta;
  spec: AddOnDeploymentConfigSpec;
}

// ---- types (v1beta1) ----

export interface ClusterManagementAddOnV1beta1 {
  apiVersion: 'addon.open-cluster-management.io/v1beta1';
  kind: 'ClusterManagementAddOn';
  metadata: ObjectMeta;
  spec: {
    addOnMeta?: AddOnMeta;
    defaultConfigs?: AddOnConfig[];
    installStrategy?: InstallStrategy;
  };
  status?: {
    defaultConfigReferences?: DefaultConfigReference[];
    installProgressions?: Record<string, unknown>[];
  };
}

export type RegistrationConfigV1beta1 =
  | {
      type: 'kubeClient';
      kubeClient?: { driver?: KubeClientDriver; subject?: { user?: string; groups?: string[] } };
    }
  | {
      type: 'customSigner';
      customSigner?: {
        signerName: string;
        subject?: { user?: string; groups?: string[]; organizationUnits?: string[] };
      };
    };

export interface ManagedClusterAddOnV1beta1 {
  apiVersion: 'addon.open-cluster-management.io/v1beta1';
  kind: 'ManagedClusterAddOn';
  metadata: ObjectMeta;
  spec: { configs?: AddOnConfig[] };
  status?: Omit<
    ManagedClusterAddOnStatus,
    'addOnConfiguration' | 'configReferences' | 'registrations' | 'kubeClientDriver'
  > & {
    configReferences?: Omit<ConfigReference, 'name' | 'namespace'>[];
    registrations?: RegistrationConfigV1beta1[];
  };
}

// ---- addon delivery (the hub's addon manager) ----

/** ManifestWork `addon-<addon>-deploy-<index>` in the cluster namespace: an addon agent's objects. */
export function addonDeployWorkName(addonName: string, index = 0): string {
  return `addon-${addonName}-deploy-${index}`;
}

/** The prefix every deploy work of an addon's name starts with. */
export function addonDeployWorkPrefix(addonName: string): string {
  return `addon-${addonName}-deploy-`;
}

/** True for `addon-<addon>-deploy-<index>` (not a hosting work, whose name shares the prefix). */
export function isAddonDeployWorkName(addonName: string, workName: string): boolean {
  const prefix = addonDeployWorkPrefix(addonName);
  return workName.startsWith(prefix) && /^\d+$/.test(workName.slice(prefix.length));
}

/**
 * ManifestWork `addon-<addon>-deploy-hosting-<cluster>-<index>` in the hosting cluster's namespace:
 * the part of a hosted add-on's agent that runs on the hosting cluster (OCM's name).
 */
export function addonHostingWorkName(addonName: string, cluster: string, index = 0): string {
  return `${addonHostingWorkPrefix(addonName, cluster)}${index}`;
}

export function addonHostingWorkPrefix(addonName: string, cluster: string): string {
  return `addon-${addonName}-deploy-hosting-${cluster}-`;
}

/** The cluster a hosting work of `addonName` serves, read from its name; undefined for any other work. */
export function hostedClusterOfWork(addonName: string, workName: string): string | undefined {
  const match = /^(.+)-(\d+)$/.exec(workName.slice(`addon-${addonName}-deploy-hosting-`.length));
  if (!workName.startsWith(`addon-${addonName}-deploy-hosting-`) || !match) return undefined;
  return match[1];
}

/**
 * OCM's annotation on a ManagedClusterAddOn asking for hosted mode: the add-on agent is deployed to
 * the named (hosting) cluster instead of the managed cluster.
 */
export const hostingClusterNameAnnotation = 'addon.open-cluster-management.io/hosting-cluster-name';

/**
 * On a hosted ManagedClusterAddOn: the addon manager deletes its hosting works (in another
 * namespace, so no ownerReference can) before it goes (OCM's name).
 */
export const addonHostingManifestFinalizer = 'addon.open-cluster-management.io/hosting-manifests-cleanup';

/**
 * On a ManagedClusterAddOn: the addon manager deletes the addon's ManifestWorks before it goes
 * (addon-framework's first deploy controller's name; OCM now relies on the works' ownerReference).
 */
export const addonWorkCleanupFinalizer = 'addon.open-cluster-management.io/work-cleanup';

/** The Secret the registration agent keeps an add-on's hub credential in (kube-apiserver-client signer). */
export function addonHubKubeconfigSecretName(addonName: string): string {
  return `${addonName}-hub-kubeconfig`;
}

/**
 * OCM's Secret a hosted add-on agent reads its managed cluster with (key `kubeconfig`), in its
 * install namespace on the hosting cluster; tether's hosted klusterlet agent writes it.
 */
export function addonManagedKubeconfigSecretName(addonName: string): string {
  return `${addonName}-managed-kubeconfig`;
}

/** OCM's add-on lease duration: an add-on agent renews its Lease this often (plus jitter). */
export const defaultAddonLeaseDurationSeconds = 60;
