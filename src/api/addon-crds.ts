// The CRDs of addon.open-cluster-management.io as OCM publishes them (schemas per kind and version,
// printer columns, the conversion block of the two kinds whose versions differ). Types and names are
// in addon.ts.

import {
  AddOnCondition,
  addOnDeploymentConfigResource,
  addOnDeploymentConfigV1beta1Resource,
  clusterManagementAddOnResource,
  clusterManagementAddOnV1beta1Resource,
  managedClusterAddOnResource,
  managedClusterAddOnV1beta1Resource,
} from './addon.ts';
import { addonAgentNamespace } from './cluster.ts';
import { conditionsSchema } from './conditions.ts';
import * as limits from './peer-limits.ts';
import * as s from './schema.ts';

// ---- CRDs ----

/** Where the API server sends ConversionReviews for the two addon kinds whose schemas differ. */
export type AddonConversionWebhook =
  | { url: string; caBundle: string }
  | { service: { namespace: string; name: string; port: number }; caBundle: string };

/** apiextensions.k8s.io/v1 CustomResourceConversion, as on the wire. */
export interface CrdConversion {
  strategy: 'None' | 'Webhook';
  webhook?: {
    clientConfig: {
      url?: string;
      service?: { namespace: string; name: string; path?: string; port?: number };
      caBundle?: string;
    };
    conversionReviewVersions: string[];
  };
}

/** A CRD manifest that may carry a conversion block (schema.ts's CrdManifest has none). */
export type CrdManifestWithConversion = s.CrdManifest & {
  spec: s.CrdManifest['spec'] & { conversion?: CrdConversion };
};

/** Path the conversion webhook serves, as OCM's CRDs name it. */
export const addonConversionPath = '/convert';

function webhookConversion(webhook: AddonConversionWebhook): CrdConversion {
  const clientConfig =
    'url' in webhook
      ? { url: new URL(addonConversionPath, webhook.url).toString(), caBundle: webhook.caBundle }
      : { service: { ...webhook.service, path: addonConversionPath }, caBundle: webhook.caBundle };
  return { strategy: 'Webhook', webhook: { clientConfig, conversionReviewVersions: ['v1', 'v1beta1'] } };
}

/**
 * One CRD serving `alpha` (storage) and `beta` with their own schemas. Without a webhook the two
 * are served with conversion None, like the CRDs in OCM's API module (which carry no conversion
 * block): only apiVersion is rewritten, so differing fields do not carry over.
 */
function twoSchemaCrd(
  alpha: s.CrdDefinition,
  beta: s.CrdDefinition,
  webhook: AddonConversionWebhook | undefined,
): CrdManifestWithConversion {
  const crd: CrdManifestWithConversion = s.defineCrd(alpha);
  const betaVersion = s.defineCrd(beta).spec.versions[0]!;
  crd.spec.versions.push({ ...betaVersion, storage: false });
  if (webhook) crd.spec.conversion = webhookConversion(webhook);
  return crd;
}

// Shared pieces, built fresh on every call.

const namespaceNamePattern = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const percentOrCountPattern = '^((100|[0-9]{1,2})%|[0-9]+)$';
const rolloutDeadlinePattern = '^(([0-9])+[h|m|s])|None$';
const signerNamePattern = '^([a-z0-9][a-z0-9-]*[a-z0-9]\\.)+[a-z]+\\/[a-z0-9-\\.]+$';
const quantityPattern =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
const containerIdPattern = '^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\\*):.+:.+$';

const nonEmpty = (): s.JsonSchema => s.string({ minLength: 1 });

function addOnMetaSchema(): s.JsonSchema {
  return s.object({ description: s.string(), displayName: s.string() });
}

function configCoordinatesSchema(): s.JsonSchema {
  return s.object({ crName: s.string(), crdName: s.string(), lastObservedGeneration: s.integer('int64') });
}

function groupResourceProperties(): Record<string, s.JsonSchema> {
  return { group: s.string({ default: '' }), resource: nonEmpty() };
}

function referentSchema(): s.JsonSchema {
  return s.object({ name: nonEmpty(), namespace: s.string() }, { required: ['name'] });
}

function specHashSchema(): s.JsonSchema {
  return s.object({ name: nonEmpty(), namespace: s.string(), specHash: s.string() }, { required: ['name'] });
}

/** group/resource/name/namespace: a config an add-on uses. */
function addOnConfigSchema(): s.JsonSchema {
  return s.object(
    { ...groupResourceProperties(), name: nonEmpty(), namespace: s.string() },
    { required: ['name', 'resource'] },
  );
}

function mandatoryDecisionGroupsSchema(): s.JsonSchema {
  return s.array(s.object({ groupIndex: s.integer('int32'), groupName: s.string() }));
}

function rolloutTimingProperties(): Record<string, s.JsonSchema> {
  return {
    maxFailures: s.quantity({ default: 0, pattern: percentOrCountPattern }),
    minSuccessTime: s.string({ default: '0' }),
    progressDeadline: s.string({ default: 'None', pattern: rolloutDeadlinePattern }),
  };
}

function rolloutStrategySchema(): s.JsonSchema {
  return s.object(
    {
      all: s.object(rolloutTimingProperties()),
      progressive: s.object({
        mandatoryDecisionGroups: mandatoryDecisionGroupsSchema(),
        maxConcurrency: s.quantity({ pattern: percentOrCountPattern }),
        ...rolloutTimingProperties(),
      }),
      progressivePerGroup: s.object({
        mandatoryDecisionGroups: mandatoryDecisionGroupsSchema(),
        ...rolloutTimingProperties(),
      }),
      type: s.oneOf(['All', 'Progressive', 'ProgressivePerGroup'], { default: 'All' }),
    },
    { default: { type: 'All' } },
  );
}

function installStrategySchema(): s.JsonSchema {
  return s.object(
    {
      placements: s.listMap(
        s.object(
          {
            configs: s.array(addOnConfigSchema()),
            name: nonEmpty(),
            namespace: nonEmpty(),
            rolloutStrategy: rolloutStrategySchema(),
          },
          { required: ['name', 'namespace'] },
        ),
        ['namespace', 'name'],
      ),
      type: s.oneOf(['Manual', 'Placements'], { default: 'Manual' }),
    },
    { default: { type: 'Manual' } },
  );
}

function defaultConfigReferencesSchema(): s.JsonSchema {
  return s.array(
    s.object({ ...groupResourceProperties(), desiredConfig: specHashSchema() }, { required: ['resource'] }),
  );
}

function installProgressionsSchema(): s.JsonSchema {
  return s.array(
    s.object(
      {
        conditions: conditionsSchema(),
        configReferences: s.array(
          s.object(
            {
              ...groupResourceProperties(),
              desiredConfig: specHashSchema(),
              lastAppliedConfig: specHashSchema(),
              lastKnownGoodConfig: specHashSchema(),
            },
            { required: ['resource'] },
          ),
        ),
        name: nonEmpty(),
        namespace: nonEmpty(),
      },
      { required: ['name', 'namespace'] },
    ),
  );
}

const cmaDescription =
  'Registers an add-on with the hub: its metadata, the configuration kinds it accepts, how it installs.';

export function clusterManagementAddOnCrd(webhook?: AddonConversionWebhook): CrdManifestWithConversion {
  const displayName: s.PrinterColumn = {
    name: 'DISPLAY NAME',
    type: 'string',
    jsonPath: '.spec.addOnMeta.displayName',
  };
  const common = { description: cmaDescription, shortNames: ['cma', 'cmas'], required: ['spec'] };
  return twoSchemaCrd(
    {
      ...common,
      resource: clusterManagementAddOnResource,
      printerColumns: [
        displayName,
        { name: 'CRD NAME', type: 'string', jsonPath: '.spec.addOnConfiguration.crdName' },
      ],
      spec: s.object({
        addOnConfiguration: configCoordinatesSchema(),
        addOnMeta: addOnMetaSchema(),
        installStrategy: installStrategySchema(),
        supportedConfigs: s.listMap(
          s.object(
            { ...groupResourceProperties(), defaultConfig: referentSchema() },
            { required: ['resource'] },
          ),
          ['group', 'resource'],
        ),
      }),
      status: s.object({
        defaultconfigReferences: defaultConfigReferencesSchema(),
        installProgressions: installProgressionsSchema(),
      }),
    },
    {
      ...common,
      resource: clusterManagementAddOnV1beta1Resource,
      printerColumns: [displayName],
      spec: s.object({
        addOnMeta: addOnMetaSchema(),
        defaultConfigs: s.listMap(addOnConfigSchema(), ['group', 'resource']),
        installStrategy: installStrategySchema(),
      }),
      status: s.object({
        defaultConfigReferences: defaultConfigReferencesSchema(),
        installProgressions: installProgressionsSchema(),
      }),
    },
    webhook,
  );
}

// What a cluster writes in a ManagedClusterAddOn's status is bounded (peer-limits.ts).
const statusString = (): s.JsonSchema => s.string({ maxLength: limits.maxAddOnStatusStringLength });
const statusList = (items: s.JsonSchema): s.JsonSchema =>
  s.array(items, { maxItems: limits.maxAddOnStatusEntries });

function relatedObjectsSchema(): s.JsonSchema {
  return s.array(
    s.object(
      { group: statusString(), name: statusString(), namespace: statusString(), resource: statusString() },
      { required: ['group', 'name', 'resource'] },
    ),
    { maxItems: limits.maxAddOnRelatedObjects },
  );
}

function configReferencesSchema(version: 'v1alpha1' | 'v1beta1'): s.JsonSchema {
  const properties: Record<string, s.JsonSchema> = {
    ...groupResourceProperties(),
    desiredConfig: specHashSchema(),
    lastAppliedConfig: specHashSchema(),
    lastObservedGeneration: s.integer('int64'),
  };
  if (version === 'v1beta1') return statusList(s.object(properties, { required: ['resource'] }));
  return statusList(
    s.object({ ...properties, name: nonEmpty(), namespace: s.string() }, { required: ['name', 'resource'] }),
  );
}

function mcaStatusProperties(): Record<string, s.JsonSchema> {
  return {
    addOnMeta: s.object({
      description: s.string({ maxLength: limits.maxAddOnDescriptionLength }),
      displayName: statusString(),
    }),
    conditions: conditionsSchema({ maxItems: limits.maxClusterWrittenConditions }),
    healthCheck: s.object({ mode: s.oneOf(['Lease', 'Customized'], { default: 'Lease' }) }),
    namespace: statusString(),
    relatedObjects: relatedObjectsSchema(),
    supportedConfigs: s.listMap(
      s.object(groupResourceProperties(), { required: ['resource'] }),
      ['group', 'resource'],
      { maxItems: limits.maxAddOnStatusEntries },
    ),
  };
}

const signerName = (): s.JsonSchema => s.string({ minLength: 5, maxLength: 571, pattern: signerNamePattern });
const kubeClientDriver = (): s.JsonSchema => s.oneOf(['csr', 'token']);

export function managedClusterAddOnCrd(webhook?: AddonConversionWebhook): CrdManifestWithConversion {
  const conditionColumn = (type: string): s.PrinterColumn => ({
    name: type,
    type: 'string',
    jsonPath: `.status.conditions[?(@.type=="${type}")].status`,
  });
  const common = {
    description: "One add-on on one managed cluster; lives in that cluster's namespace on the hub.",
    shortNames: ['mca', 'mcas'],
    required: ['spec'],
    printerColumns: [
      conditionColumn(AddOnCondition.Available),
      conditionColumn(AddOnCondition.Degraded),
      conditionColumn(AddOnCondition.Progressing),
    ],
  };
  const configs = (): s.JsonSchema => s.array(addOnConfigSchema());
  return twoSchemaCrd(
    {
      ...common,
      resource: managedClusterAddOnResource,
      spec: s.object({
        configs: configs(),
        installNamespace: s.string({
          default: addonAgentNamespace,
          maxLength: 63,
          pattern: namespaceNamePattern,
        }),
      }),
      status: s.object({
        ...mcaStatusProperties(),
        addOnConfiguration: configCoordinatesSchema(),
        configReferences: configReferencesSchema('v1alpha1'),
        kubeClientDriver: kubeClientDriver(),
        registrations: statusList(
          s.object(
            {
              signerName: signerName(),
              subject: s.object({
                groups: statusList(statusString()),
                organizationUnit: statusList(statusString()),
                user: statusString(),
              }),
            },
            { required: ['signerName'] },
          ),
        ),
      }),
    },
    {
      ...common,
      resource: managedClusterAddOnV1beta1Resource,
      spec: s.object({ configs: configs() }),
      status: s.object({
        ...mcaStatusProperties(),
        configReferences: configReferencesSchema('v1beta1'),
        registrations: statusList(
          s.object(
            {
              customSigner: s.object(
                {
                  signerName: signerName(),
                  subject: s.object({
                    groups: statusList(statusString()),
                    organizationUnits: statusList(statusString()),
                    user: statusString(),
                  }),
                },
                { required: ['signerName'] },
              ),
              kubeClient: s.object({
                driver: kubeClientDriver(),
                subject: s.object({ groups: statusList(statusString()), user: statusString() }),
              }),
              type: s.oneOf(['kubeClient', 'customSigner']),
            },
            { required: ['type'] },
          ),
        ),
      }),
    },
    webhook,
  );
}

function resourceListSchema(): s.JsonSchema {
  return { type: 'object', additionalProperties: s.quantity({ pattern: quantityPattern }) };
}

export function addOnDeploymentConfigCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: addOnDeploymentConfigResource,
    description: 'Deployment settings for add-on agents: variables, node placement, image mirrors, proxy.',
    required: ['spec'],
    // One schema at both versions: the API server converts by rewriting apiVersion (strategy None).
    alsoServed: [addOnDeploymentConfigV1beta1Resource.version],
    spec: s.object({
      agentInstallNamespace: s.string({
        default: addonAgentNamespace,
        maxLength: 63,
        // '' is allowed: OCM reads it as "the add-on's own default namespace".
        pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$',
      }),
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
            effect: s.string(),
            key: s.string(),
            operator: s.string(),
            tolerationSeconds: s.integer('int64'),
            value: s.string(),
          }),
        ),
      }),
      proxyConfig: s.object({
        caBundle: s.bytes(),
        httpProxy: s.string(),
        httpsProxy: s.string(),
        noProxy: s.string(),
      }),
      registries: s.array(s.object({ mirror: s.string(), source: s.string() }, { required: ['mirror'] })),
      resourceRequirements: s.listMap(
        s.object(
          {
            containerID: s.string({ pattern: containerIdPattern }),
            resources: s.object({
              claims: s.listMap(s.object({ name: s.string(), request: s.string() }, { required: ['name'] }), [
                'name',
              ]),
              limits: resourceListSchema(),
              requests: resourceListSchema(),
            }),
          },
          { required: ['containerID', 'resources'] },
        ),
        ['containerID'],
      ),
    }),
  });
}
