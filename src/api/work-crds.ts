// The CRDs of work.open-cluster-management.io/v1 as OCM publishes them: ManifestWork (hub) and
// AppliedManifestWork (managed cluster). Types and names are in work.ts.

import { conditionsSchema } from './conditions.ts';
import * as limits from './peer-limits.ts';
import * as s from './schema.ts';
import {
  appliedManifestWorkResource,
  ConditionRuleType,
  DeletePropagationPolicy,
  defaultWorkFieldManager,
  FeedbackType,
  FieldValueType,
  feedbackJsonRawMaxLength,
  IgnoreFieldsCondition,
  manifestWorkResource,
  UpdateStrategyType,
} from './work.ts';

// ---- CRDs ----

const dnsSubdomainPattern = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$';

function dnsSubdomain(): s.JsonSchema {
  return s.string({ pattern: dnsSubdomainPattern, minLength: 1, maxLength: 253 });
}

/** An object's name, namespace, group, version, kind or resource as a cluster reports it. */
function kubeName(): s.JsonSchema {
  return s.string({ maxLength: 253 });
}

function resourceIdentifierSchema(): s.JsonSchema {
  return s.object(
    { group: s.string(), resource: s.string(), name: s.string(), namespace: s.string() },
    { required: ['name', 'resource'] },
  );
}

/** OCM's CEL rule on a condition rule (the schema builders have no keyword for it, so it is added here). */
function conditionRuleSchema(): s.JsonSchema {
  const rule = s.object(
    {
      condition: s.string(),
      type: s.oneOf(Object.values(ConditionRuleType)),
      celExpressions: s.array(s.string()),
      message: s.string(),
      messageExpression: s.string(),
    },
    { required: ['condition', 'type'] },
  );
  return Object.assign(rule, {
    'x-kubernetes-validations': [
      {
        rule: 'self.type != \'CEL\' || self.condition != ""',
        message: 'Condition is required for CEL rules',
      },
    ],
  });
}

function manifestConfigSchema(): s.JsonSchema {
  return s.object(
    {
      resourceIdentifier: resourceIdentifierSchema(),
      feedbackRules: s.array(
        s.object(
          {
            type: s.oneOf(Object.values(FeedbackType)),
            jsonPaths: s.listMap(
              s.object(
                { name: s.string(), path: s.string(), version: s.string() },
                { required: ['name', 'path'] },
              ),
              ['name'],
            ),
          },
          { required: ['type'] },
        ),
      ),
      feedbackScrapeType: s.oneOf(['Poll', 'Watch'], { default: 'Poll' }),
      updateStrategy: s.object(
        {
          type: s.oneOf(Object.values(UpdateStrategyType), { default: UpdateStrategyType.Update }),
          serverSideApply: s.object({
            fieldManager: s.string({ default: defaultWorkFieldManager, pattern: '^work-agent' }),
            force: s.boolean(),
            ignoreFields: s.listMap(
              s.object(
                {
                  condition: s.oneOf(Object.values(IgnoreFieldsCondition), {
                    default: IgnoreFieldsCondition.OnSpokePresent,
                  }),
                  jqPathExpressions: s.array(s.string()),
                  jsonPaths: s.array(s.string()),
                  jsonPointers: s.array(s.string()),
                },
                { required: ['condition'] },
              ),
              ['condition'],
            ),
          }),
        },
        { required: ['type'] },
      ),
      conditionRules: s.listMap(conditionRuleSchema(), ['condition']),
    },
    { required: ['resourceIdentifier'] },
  );
}

function manifestConditionSchema(): s.JsonSchema {
  return s.object(
    {
      resourceMeta: s.object(
        {
          ordinal: s.integer('int32'),
          group: kubeName(),
          version: kubeName(),
          kind: kubeName(),
          resource: kubeName(),
          name: kubeName(),
          namespace: kubeName(),
        },
        { required: ['ordinal'] },
      ),
      statusFeedback: s.object({
        values: s.listMap(
          s.object(
            {
              name: s.string(),
              fieldValue: s.object(
                {
                  type: s.oneOf(Object.values(FieldValueType)),
                  integer: s.integer('int64'),
                  string: s.string(),
                  boolean: s.boolean(),
                  jsonRaw: s.string({ maxLength: feedbackJsonRawMaxLength }),
                },
                { required: ['type'] },
              ),
            },
            { required: ['name', 'fieldValue'] },
          ),
          ['name'],
          { maxItems: limits.maxFeedbackValues },
        ),
      }),
      conditions: conditionsSchema({ maxItems: limits.maxClusterWrittenConditions }),
    },
    { required: ['conditions', 'resourceMeta'] },
  );
}

/** ManifestWork's spec (also AddOnTemplate's spec.agentSpec). */
export function manifestWorkSpecSchema(): s.JsonSchema {
  return s.object({
    workload: s.object({ manifests: s.array(s.embeddedResource()) }),
    deleteOption: s.object({
      propagationPolicy: s.oneOf(Object.values(DeletePropagationPolicy), {
        default: DeletePropagationPolicy.Foreground,
      }),
      selectivelyOrphans: s.object({ orphaningRules: s.array(resourceIdentifierSchema()) }),
      ttlSecondsAfterFinished: s.integer('int64'),
    }),
    manifestConfigs: s.array(manifestConfigSchema()),
    executor: s.object({
      subject: s.object(
        {
          type: s.oneOf(['ServiceAccount']),
          serviceAccount: s.object(
            { namespace: dnsSubdomain(), name: dnsSubdomain() },
            { required: ['namespace', 'name'] },
          ),
        },
        { required: ['type'] },
      ),
    }),
  });
}

export function manifestWorkCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: manifestWorkResource,
    description:
      "Kubernetes objects the hub wants applied on one managed cluster. Lives in that cluster's namespace " +
      'on the hub; the work agent applies it and reports per-manifest status.',
    spec: manifestWorkSpecSchema(),
    // Written by the cluster's work agent: its lists are bounded (peer-limits.ts).
    status: s.object({
      conditions: conditionsSchema({ maxItems: limits.maxClusterWrittenConditions }),
      resourceStatus: s.object({
        manifests: s.array(manifestConditionSchema(), { maxItems: limits.maxWorkManifestStatuses }),
      }),
    }),
  });
}

export function appliedManifestWorkCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: appliedManifestWorkResource,
    description:
      'Record, on the managed cluster, of what the work agent applied for one ManifestWork; its finalizer ' +
      'removes those resources.',
    spec: s.object(
      { hubHash: s.string(), manifestWorkName: s.string(), agentID: s.string() },
      { required: ['hubHash', 'manifestWorkName'] },
    ),
    status: s.object({
      appliedResources: s.array(
        s.object(
          {
            group: s.string(),
            version: s.string(),
            resource: s.string(),
            namespace: s.string(),
            name: s.string(),
            uid: s.string(),
          },
          { required: ['version', 'resource', 'name'] },
        ),
      ),
      evictionStartTime: s.dateTime(),
    }),
  });
}
