// The ManifestWork status the agent reports to the hub: per manifest its resourceMeta, Applied /
// Available / StatusFeedbackSynced conditions, the conditions its condition rules set, and
// feedback values; for the work, Applied and Available aggregated over the manifests, plus
// Progressing, rule aggregates and Degraded (work-conditions.ts), with observedGeneration. Pure functions over apply
// outcomes and the status last written, so transition times only move when a status changes and
// an unchanged status is recognised (statusEqual) and never rewritten.
import { isDeepStrictEqual } from 'node:util';
import {
  type ManifestCondition,
  type ManifestResourceMeta,
  ManifestWorkCondition,
  ManifestWorkReason,
  type ManifestWorkStatus,
} from '../../api/index.ts';
import { type Condition, type ConditionUpdate, removeCondition, setCondition } from '../../kube/index.ts';
import type { ManifestOutcome } from './apply.ts';
import { conditionRuleReasons, evaluateConditionRules } from './condition-rules.ts';
import { readFeedback } from './feedback.ts';
import {
  aggregateRuleConditions,
  staleAggregates,
  unsupportedConfiguration,
  workDegraded,
  workProgressing,
} from './work-conditions.ts';

/** Longest condition message written; apiserver messages can be long (and the CRD caps them). */
const messageMaxLength = 4096;

function truncate(message: string): string {
  return message.length > messageMaxLength ? `${message.slice(0, messageMaxLength - 1)}…` : message;
}

function sameResource(a: ManifestResourceMeta, b: ManifestResourceMeta, withOrdinal: boolean): boolean {
  return (
    (!withOrdinal || a.ordinal === b.ordinal) &&
    (a.group ?? '') === (b.group ?? '') &&
    (a.version ?? '') === (b.version ?? '') &&
    (a.kind ?? '') === (b.kind ?? '') &&
    (a.resource ?? '') === (b.resource ?? '') &&
    (a.name ?? '') === (b.name ?? '') &&
    (a.namespace ?? '') === (b.namespace ?? '')
  );
}

/** The previous status entry of a manifest: same meta, else same meta at another ordinal (if unique). */
export function findPreviousManifest(
  previous: readonly ManifestCondition[],
  meta: ManifestResourceMeta,
): ManifestCondition | undefined {
  const exact = previous.find((p) => sameResource(p.resourceMeta, meta, true));
  if (exact) return exact;
  const moved = previous.filter((p) => sameResource(p.resourceMeta, meta, false));
  return moved.length === 1 ? moved[0] : undefined;
}

function appliedCondition(outcome: ManifestOutcome): ConditionUpdate {
  if (outcome.error) {
    return {
      type: ManifestWorkCondition.Applied,
      status: 'False',
      reason: outcome.ignoreFieldError
        ? ManifestWorkReason.AppliedManifestSSAIgnoreFieldError
        : ManifestWorkReason.AppliedManifestFailed,
      message: truncate(`Failed to apply manifest: ${outcome.error}`),
    };
  }
  return {
    type: ManifestWorkCondition.Applied,
    status: 'True',
    reason: ManifestWorkReason.AppliedManifestComplete,
    message: 'Apply manifest complete',
  };
}

function availableCondition(outcome: ManifestOutcome): ConditionUpdate {
  const type = ManifestWorkCondition.Available;
  if (!outcome.descriptor) {
    return {
      type,
      status: 'Unknown',
      reason: ManifestWorkReason.IncompletedResourceMeta,
      message: 'Resource meta is incompleted',
    };
  }
  switch (outcome.live.state) {
    case 'present':
      return {
        type,
        status: 'True',
        reason: ManifestWorkReason.ResourceAvailable,
        message: 'Resource is available',
      };
    case 'absent':
      return {
        type,
        status: 'False',
        reason: ManifestWorkReason.ResourceNotAvailable,
        message: 'Resource is not available',
      };
    default:
      return {
        type,
        status: 'Unknown',
        reason: ManifestWorkReason.FetchingResourceFailed,
        message: truncate(`Failed to fetch resource: ${outcome.live.message}`),
      };
  }
}

/** Condition types the agent sets itself, on manifests or on the work. */
const agentConditionTypes: ReadonlySet<string> = new Set([
  ManifestWorkCondition.Applied,
  ManifestWorkCondition.Available,
  ManifestWorkCondition.Progressing,
  ManifestWorkCondition.Deleting,
  ManifestWorkCondition.StatusFeedbackSynced,
]);

/** "manifest 2: the rule for Available": rules naming a condition the agent sets itself (skipped). */
function rulesForAgentConditions(outcomes: readonly ManifestOutcome[]): string[] {
  return outcomes.flatMap((o) =>
    (o.config?.conditionRules ?? [])
      .filter((r) => agentConditionTypes.has(r.condition))
      .map(
        (r) =>
          `conditionRules for ${r.condition} of manifest ${o.meta.ordinal}: ${r.condition} is set by the work agent itself`,
      ),
  );
}

/**
 * The conditions the manifest's rules set. Evaluated on the live object; kept as they were while it
 * cannot be read; a Complete that was True stays so (a completed manifest is not evaluated again);
 * conditions of rules that were removed go.
 */
function ruleConditions(
  outcome: ManifestOutcome,
  conditions: Condition[],
  generation: number | undefined,
  now: Date,
): Condition[] {
  // Conditions the agent sets itself are not the rules' to set (Degraded says they are skipped).
  const rules = (outcome.config?.conditionRules ?? []).filter((r) => !agentConditionTypes.has(r.condition));
  const ruleTypes = new Set(rules.map((r) => r.condition));
  let next = conditions.filter((c) => !conditionRuleReasons.has(c.reason) || ruleTypes.has(c.type));
  if (outcome.live.state !== 'present') return next;
  for (const update of evaluateConditionRules(rules, outcome.live.object)) {
    const previous = next.find((c) => c.type === update.type);
    if (update.type === ManifestWorkCondition.Complete && previous?.status === 'True') continue;
    next = setCondition(next, update, generation, now);
  }
  return next;
}

/** Whether a manifest's status says it completed (a Complete rule held): it is no longer updated. */
export function isManifestComplete(entry: ManifestCondition | undefined): boolean {
  return (entry?.conditions ?? []).some(
    (c) =>
      c.type === ManifestWorkCondition.Complete && c.status === 'True' && conditionRuleReasons.has(c.reason),
  );
}

/** The status entry of one manifest, keeping transition times (and feedback when unreadable) from `previous`. */
export function manifestCondition(
  outcome: ManifestOutcome,
  previous: ManifestCondition | undefined,
  generation: number | undefined,
  now: Date,
): ManifestCondition {
  let conditions: Condition[] = (previous?.conditions ?? []) as Condition[];
  conditions = setCondition(conditions, appliedCondition(outcome), generation, now);
  conditions = setCondition(conditions, availableCondition(outcome), generation, now);
  conditions = ruleConditions(outcome, conditions, generation, now);
  // OCM always writes statusFeedback, `{}` when there is nothing to report.
  const entry: ManifestCondition = { resourceMeta: outcome.meta, statusFeedback: {}, conditions };
  const rules = outcome.config?.feedbackRules ?? [];
  if (rules.length === 0) {
    entry.conditions = conditions.filter((c) => c.type !== ManifestWorkCondition.StatusFeedbackSynced);
    return entry;
  }
  if (outcome.live.state !== 'present') {
    // Nothing to read: keep what was reported last (and its condition).
    if (previous?.statusFeedback) entry.statusFeedback = previous.statusFeedback;
    return entry;
  }
  const { values, errors } = readFeedback(outcome.live.object, rules);
  entry.statusFeedback = values.length > 0 ? { values } : {};
  entry.conditions = setCondition(
    conditions,
    errors.length > 0
      ? {
          type: ManifestWorkCondition.StatusFeedbackSynced,
          status: 'False',
          reason: ManifestWorkReason.StatusFeedbackSyncFailed,
          message: truncate(`Sync status feedback failed with error ${errors.join('; ')}`),
        }
      : {
          type: ManifestWorkCondition.StatusFeedbackSynced,
          status: 'True',
          reason: ManifestWorkReason.StatusFeedbackSynced,
          message: '',
        },
    generation,
    now,
  );
  return entry;
}

function countStatus(manifests: readonly ManifestCondition[], type: string, status: string): number {
  return manifests.filter((m) => m.conditions.find((c) => c.type === type)?.status === status).length;
}

/** Work-level Applied: every manifest applied. */
function workApplied(manifests: readonly ManifestCondition[]): ConditionUpdate {
  const failed = countStatus(manifests, ManifestWorkCondition.Applied, 'False');
  return failed === 0
    ? {
        type: ManifestWorkCondition.Applied,
        status: 'True',
        reason: ManifestWorkReason.AppliedManifestWorkComplete,
        message: 'Apply manifest work complete',
      }
    : {
        type: ManifestWorkCondition.Applied,
        status: 'False',
        reason: ManifestWorkReason.AppliedManifestWorkFailed,
        message: `Failed to apply manifest work: ${failed} of ${manifests.length} manifests failed`,
      };
}

/** Work-level Available: False when any resource is missing, Unknown when any cannot be told. */
function workAvailable(manifests: readonly ManifestCondition[]): ConditionUpdate {
  const type = ManifestWorkCondition.Available;
  const total = manifests.length;
  const missing = countStatus(manifests, type, 'False');
  if (missing > 0) {
    return {
      type,
      status: 'False',
      reason: ManifestWorkReason.ResourcesNotAvailable,
      message: `${missing} of ${total} resources are not available`,
    };
  }
  const unknown = total - countStatus(manifests, type, 'True');
  if (unknown > 0) {
    return {
      type,
      status: 'Unknown',
      reason: ManifestWorkReason.ResourcesStatusUnknown,
      message: `${unknown} of ${total} resources have unknown status`,
    };
  }
  return {
    type,
    status: 'True',
    reason: ManifestWorkReason.ResourcesAvailable,
    message: 'All resources are available',
  };
}

/** The whole status for `outcomes` (in manifest order), building on `previous`. */
export function buildWorkStatus(
  previous: ManifestWorkStatus | undefined,
  outcomes: readonly ManifestOutcome[],
  generation: number | undefined,
  now: Date = new Date(),
  /** ordinals of manifests whose feedback should be watched but is polled */
  unwatched: readonly number[] = [],
): ManifestWorkStatus {
  const previousManifests = previous?.resourceStatus?.manifests ?? [];
  const manifests = outcomes.map((o) =>
    manifestCondition(o, findPreviousManifest(previousManifests, o.meta), generation, now),
  );
  let conditions = (previous?.conditions ?? []) as Condition[];
  conditions = setCondition(conditions, workApplied(manifests), generation, now);
  conditions = setCondition(conditions, workAvailable(manifests), generation, now);
  conditions = setCondition(conditions, workProgressing(manifests), generation, now);
  const aggregates = aggregateRuleConditions(manifests);
  for (const type of staleAggregates(conditions, aggregates)) conditions = removeCondition(conditions, type);
  for (const update of aggregates) conditions = setCondition(conditions, update, generation, now);
  const degraded = workDegraded([
    ...unsupportedConfiguration(unwatched),
    ...rulesForAgentConditions(outcomes),
  ]);
  if (degraded) conditions = setCondition(conditions, degraded, generation, now);
  else if (findUnsupported(conditions))
    conditions = removeCondition(conditions, ManifestWorkCondition.Degraded);
  return { conditions, resourceStatus: { manifests } };
}

function findUnsupported(conditions: readonly Condition[]): boolean {
  return conditions.some(
    (c) =>
      c.type === ManifestWorkCondition.Degraded && c.reason === ManifestWorkReason.UnsupportedConfiguration,
  );
}

/** Same status as far as the apiserver would store it (undefined fields dropped, key order ignored). */
export function statusEqual(a: ManifestWorkStatus | undefined, b: ManifestWorkStatus | undefined): boolean {
  const normal = (s: ManifestWorkStatus | undefined) => JSON.parse(JSON.stringify(s ?? {}));
  return isDeepStrictEqual(normal(a), normal(b));
}
