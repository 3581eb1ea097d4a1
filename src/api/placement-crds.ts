// The CRDs of OCM's placement APIs: ManagedClusterSet, ManagedClusterSetBinding, Placement,
// PlacementDecision, AddOnPlacementScore and ManifestWorkReplicaSet. Types and names are in
// placement.ts; test/api/api-facts.test.ts holds every field against OCM's published CRDs.

import { TaintEffect } from './cluster.ts';
import { conditionsSchema } from './conditions.ts';
import {
  addOnPlacementScoreResource,
  ClusterSetCondition,
  ClusterSetSelectorType,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  manifestWorkReplicaSetResource,
  PlacementCondition,
  placementDecisionResource,
  placementResource,
  RolloutType,
} from './placement.ts';
import * as s from './schema.ts';
import { manifestWorkCrd } from './work-crds.ts';

const qualifiedNamePattern =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';
// OCM's spread topologyKey pattern differs from the qualified-name one by one group.
const topologyKeyPattern =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$';
const rolloutPercentPattern = '^((100|[0-9]{1,2})%|[0-9]+)$';
const progressDeadlinePattern = '^(([0-9])+[h|m|s])|None$';

/** metav1.Condition list without list-map semantics (ManagedClusterSet and its binding declare it so). */
function plainConditions(): s.JsonSchema {
  const items = conditionsSchema().items;
  if (!items) throw new Error('conditionsSchema has no items');
  return s.array(items);
}

function requirement(valuesAtomic: boolean): s.JsonSchema {
  return s.object(
    {
      key: s.string(),
      operator: s.string(),
      values: s.array(s.string(), valuesAtomic ? { 'x-kubernetes-list-type': 'atomic' } : {}),
    },
    { required: ['key', 'operator'] },
  );
}

/** metav1.LabelSelector as controller-gen renders it. */
function labelSelector(): s.JsonSchema {
  return s.object(
    {
      matchExpressions: s.array(requirement(true), { 'x-kubernetes-list-type': 'atomic' }),
      matchLabels: s.stringMap(),
    },
    { 'x-kubernetes-map-type': 'atomic' },
  );
}

/** OCM's ClusterClaimSelector: match expressions over status.clusterClaims. */
function claimSelector(): s.JsonSchema {
  return s.object({ matchExpressions: s.array(requirement(true)) });
}

export function managedClusterSetCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: managedClusterSetResource,
    description:
      'A named group of ManagedClusters: those labelled cluster.open-cluster-management.io/clusterset=<name> ' +
      '(ExclusiveClusterSetLabel) or those a label selector matches (LabelSelector).',
    shortNames: ['mclset', 'mclsets'],
    printerColumns: [
      {
        name: 'Empty',
        type: 'string',
        jsonPath: `.status.conditions[?(@.type=="${ClusterSetCondition.Empty}")].status`,
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    spec: s.object(
      {
        clusterSelector: s.object(
          {
            selectorType: s.oneOf(Object.values(ClusterSetSelectorType), {
              default: ClusterSetSelectorType.ExclusiveClusterSetLabel,
            }),
            labelSelector: labelSelector(),
          },
          {
            required: ['selectorType'],
            default: { selectorType: ClusterSetSelectorType.ExclusiveClusterSetLabel },
          },
        ),
        managedNamespaces: s.listMap(
          s.object(
            { name: s.string({ maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }) },
            { required: ['name'] },
          ),
          ['name'],
        ),
      },
      { default: { clusterSelector: { selectorType: ClusterSetSelectorType.ExclusiveClusterSetLabel } } },
    ),
    status: s.object({ conditions: plainConditions() }),
  });
}

export function managedClusterSetBindingCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: managedClusterSetBindingResource,
    description:
      'Lets Placements in this namespace select clusters of one ManagedClusterSet. The name must equal ' +
      'spec.clusterSet.',
    shortNames: ['mclsetbinding', 'mclsetbindings'],
    spec: s.object({ clusterSet: s.string({ minLength: 1 }) }),
    status: s.object({ conditions: plainConditions() }),
  });
}

export function placementCrd(): s.CrdManifest {
  const weight = s.integer('int32', { default: 1, minimum: -10, maximum: 10 });
  return s.defineCrd({
    resource: placementResource,
    description:
      'Selects ManagedClusters from the sets bound to its namespace; the hub writes the selection into ' +
      'PlacementDecisions labelled cluster.open-cluster-management.io/placement=<name>.',
    required: ['spec'],
    printerColumns: [
      {
        name: 'Succeeded',
        type: 'string',
        jsonPath: `.status.conditions[?(@.type=="${PlacementCondition.Satisfied}")].status`,
      },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: `.status.conditions[?(@.type=="${PlacementCondition.Satisfied}")].reason`,
      },
      { name: 'SelectedClusters', type: 'integer', jsonPath: '.status.numberOfSelectedClusters' },
    ],
    spec: s.object({
      clusterSets: s.array(s.string()),
      numberOfClusters: s.integer('int32'),
      predicates: s.array(
        s.object({
          requiredClusterSelector: s.object({
            labelSelector: labelSelector(),
            claimSelector: claimSelector(),
            celSelector: s.object({ celExpressions: s.array(s.string()) }),
          }),
        }),
      ),
      prioritizerPolicy: s.object({
        mode: s.string({ default: 'Additive' }),
        configurations: s.array(
          s.object(
            {
              scoreCoordinate: s.object(
                {
                  type: s.oneOf(['BuiltIn', 'AddOn'], { default: 'BuiltIn' }),
                  builtIn: s.string(),
                  addOn: s.object(
                    { resourceName: s.string(), scoreName: s.string() },
                    { required: ['resourceName', 'scoreName'] },
                  ),
                },
                { required: ['type'] },
              ),
              weight,
            },
            { required: ['scoreCoordinate'] },
          ),
        ),
      }),
      spreadPolicy: s.object({
        spreadConstraints: s.array(
          s.object(
            {
              topologyKey: s.string({ maxLength: 316, pattern: topologyKeyPattern }),
              topologyKeyType: s.oneOf(['Label', 'Claim']),
              maxSkew: s.integer('int32', { default: 1, minimum: 1 }),
              whenUnsatisfiable: s.oneOf(['DoNotSchedule', 'ScheduleAnyway'], { default: 'ScheduleAnyway' }),
            },
            { required: ['topologyKey', 'topologyKeyType'] },
          ),
          { maxItems: 8 },
        ),
      }),
      tolerations: s.array(
        s.object({
          key: s.string({ maxLength: 316, pattern: qualifiedNamePattern }),
          operator: s.string({ default: 'Equal' }),
          value: s.string({ maxLength: 1024 }),
          effect: s.oneOf(Object.values(TaintEffect)),
          tolerationSeconds: s.integer('int64'),
        }),
      ),
      decisionStrategy: s.object({
        groupStrategy: s.object({
          decisionGroups: s.array(
            s.object(
              {
                groupName: s.string({ pattern: '^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$' }),
                groupClusterSelector: s.object({
                  labelSelector: labelSelector(),
                  claimSelector: claimSelector(),
                }),
              },
              { required: ['groupName', 'groupClusterSelector'] },
            ),
          ),
          clustersPerDecisionGroup: s.quantity({
            default: '100%',
            pattern: '^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$',
          }),
        }),
      }),
      sortBy: s.oneOf(['ClusterName', 'Score'], { default: 'ClusterName' }),
      scoreRateLimit: s.string({ default: '1m', pattern: '^[0-9]+[hms]$' }),
    }),
    status: s.object({
      numberOfSelectedClusters: s.integer('int32'),
      decisionGroups: s.array(
        s.object({
          decisionGroupIndex: s.integer('int32'),
          decisionGroupName: s.string(),
          decisions: s.array(s.string()),
          clusterCount: s.integer('int32', { default: 0 }),
        }),
      ),
      conditions: conditionsSchema(),
      lastScoreUpdateTime: s.dateTime(),
    }),
  });
}

export function placementDecisionCrd(): s.CrdManifest {
  const crd = s.defineCrd({
    resource: placementDecisionResource,
    description:
      'Clusters a Placement selected (at most 100 per object), labelled with the Placement and its ' +
      'decision group. Written by the hub only.',
    spec: s.object({}),
    status: s.object(
      {
        decisions: s.array(
          s.object(
            { clusterName: s.string(), reason: s.string(), score: s.integer('int64') },
            { required: ['clusterName', 'reason'] },
          ),
        ),
      },
      { required: ['decisions'] },
    ),
  });
  return withoutSpec(crd);
}

export function addOnPlacementScoreCrd(): s.CrdManifest {
  const crd = s.defineCrd({
    resource: addOnPlacementScoreResource,
    description:
      "Scores an addon reports for the managed cluster whose namespace holds it (−100…100), for Placements' " +
      'AddOn prioritizers; ignored after status.validUntil.',
    spec: s.object({}),
    status: s.object({
      conditions: conditionsSchema(),
      scores: s.listMap(
        s.object(
          { name: s.string(), value: s.integer('int32', { minimum: -100, maximum: 100 }) },
          { required: ['name', 'value'] },
        ),
        ['name'],
      ),
      validUntil: s.dateTime(),
    }),
  });
  return withoutSpec(crd);
}

function rolloutConfig(): Record<string, s.JsonSchema> {
  return {
    minSuccessTime: s.string({ default: '0' }),
    progressDeadline: s.string({ default: 'None', pattern: progressDeadlinePattern }),
    maxFailures: s.quantity({ default: 0, pattern: rolloutPercentPattern }),
  };
}

function mandatoryDecisionGroups(): s.JsonSchema {
  return s.array(s.object({ groupName: s.string(), groupIndex: s.integer('int32') }));
}

function workSummary(): s.JsonSchema {
  const count = (): s.JsonSchema => ({ type: 'integer' });
  return s.object({
    total: count(),
    desiredTotal: count(),
    applied: count(),
    available: count(),
    degraded: count(),
    progressing: count(),
    updated: count(),
  });
}

export function manifestWorkReplicaSetCrd(): s.CrdManifest {
  const template = manifestWorkCrd().spec.versions[0]?.schema.openAPIV3Schema.properties?.['spec'];
  if (!template) throw new Error('ManifestWork CRD has no spec schema');
  return s.defineCrd({
    resource: manifestWorkReplicaSetResource,
    description:
      'A ManifestWork template deployed to every cluster the referenced Placements select, with a rollout ' +
      'strategy per Placement.',
    shortNames: ['mwrs'],
    printerColumns: [
      {
        name: 'Placement',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="PlacementVerified")].reason',
      },
      {
        name: 'Found',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="PlacementVerified")].status',
      },
      {
        name: 'ManifestWorks',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="ManifestworkApplied")].reason',
      },
      {
        name: 'Applied',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="ManifestworkApplied")].status',
      },
    ],
    spec: s.object(
      {
        manifestWorkTemplate: template,
        placementRefs: s.array(
          s.object(
            {
              name: s.string({ minLength: 1 }),
              rolloutStrategy: s.object(
                {
                  type: s.oneOf(Object.values(RolloutType), { default: RolloutType.All }),
                  all: s.object(rolloutConfig()),
                  progressive: s.object({
                    ...rolloutConfig(),
                    mandatoryDecisionGroups: mandatoryDecisionGroups(),
                    maxConcurrency: s.quantity({ pattern: rolloutPercentPattern }),
                  }),
                  progressivePerGroup: s.object({
                    ...rolloutConfig(),
                    mandatoryDecisionGroups: mandatoryDecisionGroups(),
                  }),
                },
                { default: { type: RolloutType.All, all: { progressDeadline: 'None' } } },
              ),
            },
            { required: ['name'] },
          ),
          { minItems: 1 },
        ),
        cascadeDeletionPolicy: s.oneOf(['Background', 'Foreground'], { default: 'Background' }),
      },
      { required: ['placementRefs', 'cascadeDeletionPolicy'] },
    ),
    status: s.object({
      conditions: conditionsSchema(),
      summary: workSummary(),
      placementSummary: s.array(
        s.object({ name: s.string(), availableDecisionGroups: s.string(), summary: workSummary() }),
      ),
    }),
  });
}

/** PlacementDecision and AddOnPlacementScore have no spec in OCM's schema: only status. */
function withoutSpec(crd: s.CrdManifest): s.CrdManifest {
  for (const v of crd.spec.versions) delete v.schema.openAPIV3Schema.properties?.['spec'];
  return crd;
}

/** Every placement CRD the hub serves. */
export function placementCrdManifests(): s.CrdManifest[] {
  return [
    managedClusterSetCrd(),
    managedClusterSetBindingCrd(),
    placementCrd(),
    placementDecisionCrd(),
    addOnPlacementScoreCrd(),
    manifestWorkReplicaSetCrd(),
  ];
}
