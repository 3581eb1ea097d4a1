// addon.open-cluster-management.io/v1alpha1: ClusterManagementAddOn, ManagedClusterAddOn and
// AddOnDeploymentConfig (all on the hub) — TS types, resource descriptors, CRDs and add-on names.
// Rarely used deep parts (install strategies, rollout progress) are kept as written, not typed.

import type { V1Toleration } from '@kubernetes/client-node';
import type { ObjectMeta } from '../kube/types.ts';
import { addonAgentNamespace } from './cluster.ts';
import { type Condition, conditionsSchema } from './conditions.ts';
import type { ApiResource } from './resource.ts';
import * as s from './schema.ts';

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

// ---- names ----

export const AddOnCondition = {
  Available: 'Available',
  Degraded: 'Degraded',
  Progressing: 'Progressing',
} as const;

/** Label naming the add-on a hub object (CSR, ManifestWork, …) belongs to. */
export const addonNameLabel = 'open-cluster-management.io/addon-name';

// ---- types ----

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

export interface ClusterManagementAddOnSpec {
  addOnMeta?: AddOnMeta;
  addOnConfiguration?: ConfigCoordinates;
  supportedConfigs?: ConfigMeta[];
  /** `{type: 'Manual'}` unless set; placement-driven strategies are kept as written. */
  installStrategy?: { type?: 'Manual' | 'Placements'; placements?: Record<string, unknown>[] };
}

export interface ClusterManagementAddOn {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1';
  kind: 'ClusterManagementAddOn';
  metadata: ObjectMeta;
  spec: ClusterManagementAddOnSpec;
  status?: Record<string, unknown>;
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

export interface ManagedClusterAddOnStatus {
  conditions?: Condition[];
  relatedObjects?: { group: string; resource: string; namespace?: string; name: string }[];
  addOnMeta?: AddOnMeta;
  addOnConfiguration?: ConfigCoordinates;
  supportedConfigs?: ConfigGroupResource[];
  configReferences?: Record<string, unknown>[];
  namespace?: string;
  registrations?: RegistrationConfig[];
  healthCheck?: { mode?: 'Lease' | 'Customized' };
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

export interface AddOnDeploymentConfigSpec {
  customizedVariables?: { name: string; value?: string }[];
  nodePlacement?: { nodeSelector?: Record<string, string>; tolerations?: V1Toleration[] };
  registries?: { mirror: string; source?: string }[];
  proxyConfig?: ProxyConfig;
  /** Defaults to open-cluster-management-agent-addon. */
  agentInstallNamespace?: string;
}

export interface AddOnDeploymentConfig {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1';
  kind: 'AddOnDeploymentConfig';
  metadata: ObjectMeta;
  spec: AddOnDeploymentConfigSpec;
}

// ---- CRDs ----

const namespaceNamePattern = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

function namespaceName(): s.JsonSchema {
  return s.string({ default: addonAgentNamespace, maxLength: 63, pattern: namespaceNamePattern });
}

function addOnMetaSchema(): s.JsonSchema {
  return s.object({ displayName: s.string(), description: s.string() });
}

function configCoordinatesSchema(): s.JsonSchema {
  return s.object({ crdName: s.string(), crName: s.string(), lastObservedGeneration: s.integer('int64') });
}

function groupResourceProperties(): Record<string, s.JsonSchema> {
  return { group: s.string({ default: '' }), resource: s.string({ minLength: 1 }) };
}

function referentProperties(): Record<string, s.JsonSchema> {
  return { namespace: s.string(), name: s.string({ minLength: 1 }) };
}

export function clusterManagementAddOnCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: clusterManagementAddOnResource,
    description:
      'Registers an add-on with the hub: its metadata, the configuration kinds it accepts, how it installs.',
    shortNames: ['cma', 'cmas'],
    printerColumns: [
      { name: 'DISPLAY NAME', type: 'string', jsonPath: '.spec.addOnMeta.displayName' },
      { name: 'CRD NAME', type: 'string', jsonPath: '.spec.addOnConfiguration.crdName' },
    ],
    spec: s.object({
      addOnMeta: addOnMetaSchema(),
      addOnConfiguration: configCoordinatesSchema(),
      supportedConfigs: s.listMap(
        s.object(
          {
            ...groupResourceProperties(),
            defaultConfig: s.object(referentProperties(), { required: ['name'] }),
          },
          { required: ['resource'] },
        ),
        ['group', 'resource'],
      ),
      installStrategy: s.object(
        {
          type: s.oneOf(['Manual', 'Placements'], { default: 'Manual' }),
          placements: s.array(s.unstructured()),
        },
        { default: { type: 'Manual' } },
      ),
    }),
    status: s.object({
      defaultconfigReferences: s.array(s.unstructured()),
      installProgressions: s.array(s.unstructured()),
    }),
  });
}

export function managedClusterAddOnCrd(): s.CrdManifest {
  const conditionColumn = (type: string): s.PrinterColumn => ({
    name: type,
    type: 'string',
    jsonPath: `.status.conditions[?(@.type=="${type}")].status`,
  });
  return s.defineCrd({
    resource: managedClusterAddOnResource,
    description: "One add-on on one managed cluster; lives in that cluster's namespace on the hub.",
    shortNames: ['mca', 'mcas'],
    printerColumns: [
      conditionColumn(AddOnCondition.Available),
      conditionColumn(AddOnCondition.Degraded),
      conditionColumn(AddOnCondition.Progressing),
    ],
    spec: s.object({
      installNamespace: namespaceName(),
      configs: s.array(
        s.object(
          { ...groupResourceProperties(), ...referentProperties() },
          { required: ['resource', 'name'] },
        ),
      ),
    }),
    status: s.object({
      conditions: conditionsSchema(),
      relatedObjects: s.array(
        s.object(
          { group: s.string(), resource: s.string(), namespace: s.string(), name: s.string() },
          { required: ['group', 'resource', 'name'] },
        ),
      ),
      addOnMeta: addOnMetaSchema(),
      addOnConfiguration: configCoordinatesSchema(),
      supportedConfigs: s.listMap(s.object(groupResourceProperties(), { required: ['resource'] }), [
        'group',
        'resource',
      ]),
      configReferences: s.array(s.unstructured()),
      namespace: s.string(),
      registrations: s.array(
        s.object(
          {
            signerName: s.string({ minLength: 5, maxLength: 571 }),
            subject: s.object({
              user: s.string(),
              groups: s.array(s.string()),
              organizationUnit: s.array(s.string()),
            }),
          },
          { required: ['signerName'] },
        ),
      ),
      healthCheck: s.object({ mode: s.oneOf(['Lease', 'Customized'], { default: 'Lease' }) }),
    }),
  });
}

export function addOnDeploymentConfigCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: addOnDeploymentConfigResource,
    description: 'Deployment settings for add-on agents: variables, node placement, image mirrors, proxy.',
    spec: s.object({
      customizedVariables: s.listMap(
        s.object(
          {
            name: s.string({ maxLength: 255, pattern: '^[a-zA-Z_][_a-zA-Z0-9]*$' }),
            value: s.string({ maxLength: 1024 }),
          },
          { required: ['name'] },
        ),
        ['name'],
      ),
      nodePlacement: s.object({
        nodeSelector: s.stringMap(),
        tolerations: s.array(
          s.object({
            key: s.string(),
            operator: s.string(),
            value: s.string(),
            effect: s.string(),
            tolerationSeconds: s.integer('int64'),
          }),
        ),
      }),
      registries: s.array(s.object({ mirror: s.string(), source: s.string() }, { required: ['mirror'] })),
      proxyConfig: s.object({
        httpProxy: s.string(),
        httpsProxy: s.string(),
        noProxy: s.string(),
        caBundle: s.bytes(),
      }),
      agentInstallNamespace: namespaceName(),
    }),
  });
}
