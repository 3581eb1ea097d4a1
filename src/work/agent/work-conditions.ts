// Work-level conditions besides Applied and Available: Progressing (still converging, or done),
// the conditions condition rules set on manifests aggregated over the work (Complete, and any
// other a rule names: True when every manifest carrying it is True), and Degraded when the agent
// cannot honour something the work asks for (named in the message, so nothing the CRD accepts is
// silently ignored). Pure functions over the manifest conditions.
import { type ManifestCondition, ManifestWorkCondition, ManifestWorkReason } from '../../api/index.ts';
import type { Condition, ConditionUpdate } from '../../kube/index.ts';
import { conditionRuleReasons } from './condition-rules.ts';
import { feedbackWatchesMax } from './feedback-watch.ts';

/** Reason of an aggregated rule condition other than Complete. */
const aggregatedReason = 'ConditionRulesAggregated';

/** Reasons the work-level conditions made here carry, so they can be removed when their cause goes. */
const aggregateReasons: ReadonlySet<string> = new Set([
  ManifestWorkReason.ManifestsComplete,
  ManifestWorkReason.ManifestsNotComplete,
  aggregatedReason,
]);

function statusOf(m: ManifestCondition, type: string): string | undefined {
  return m.conditions.find((c) => c.type === type)?.status;
}

/** Progressing: True while any manifest is failing or not available yet; False once all are. */
export function workProgressing(manifests: readonly ManifestCondition[]): ConditionUpdate {
  const type = ManifestWorkCondition.Progressing;
  const failed = manifests.filter((m) => statusOf(m, ManifestWorkCondition.Applied) === 'False').length;
  if (failed > 0) {
    return {
      type,
      status: 'True',
      reason: ManifestWorkReason.Failed,
      message: `${failed} of ${manifests.length} manifests failed to apply; retrying`,
    };
  }
  const waiting = manifests.filter((m) => statusOf(m, ManifestWorkCondition.Available) !== 'True').length;
  if (waiting > 0) {
    return {
      type,
      status: 'True',
      reason: ManifestWorkReason.Applying,
      message: `${waiting} of ${manifests.length} resources are not available yet`,
    };
  }
  return {
    type,
    status: 'False',
    reason: ManifestWorkReason.Completed,
    message: 'All resources are applied and available',
  };
}

/** One work condition per condition type that rules set on manifests. */
export function aggregateRuleConditions(manifests: readonly ManifestCondition[]): ConditionUpdate[] {
  const byType = new Map<string, string[]>();
  for (const m of manifests) {
    for (const c of m.conditions) {
      if (!conditionRuleReasons.has(c.reason)) continue;
      byType.set(c.type, [...(byType.get(c.type) ?? []), c.status]);
    }
  }
  const updates: ConditionUpdate[] = [];
  for (const [type, statuses] of byType) {
    const notTrue = statuses.filter((s) => s !== 'True').length;
    const all = notTrue === 0;
    const complete = type === ManifestWorkCondition.Complete;
    updates.push({
      type,
      status: all ? 'True' : 'False',
      reason: complete
        ? all
          ? ManifestWorkReason.ManifestsComplete
          : ManifestWorkReason.ManifestsNotComplete
        : aggregatedReason,
      message: all
        ? `All ${statuses.length} manifests with a ${type} rule are ${type}`
        : `${notTrue} of ${statuses.length} manifests with a ${type} rule are not ${type}`,
    });
  }
  return updates;
}

/** Aggregated conditions whose rules are gone: to be removed from the work. */
export function staleAggregates(
  conditions: readonly Condition[],
  current: readonly ConditionUpdate[],
): string[] {
  const types = new Set(current.map((c) => c.type));
  return conditions.filter((c) => aggregateReasons.has(c.reason) && !types.has(c.type)).map((c) => c.type);
}

/**
 * What this agent applies without honouring, one line each (empty when everything is honoured):
 * today only manifests whose feedback should be watched but is polled (the watch cap was reached).
 * The work is still applied; these go to the Degraded condition.
 */
export function unsupportedConfiguration(unwatched: readonly number[]): string[] {
  return unwatched.map(
    (ordinal) =>
      `feedbackScrapeType Watch of manifest ${ordinal}: more than ${feedbackWatchesMax} objects are watched by this agent, so its feedback is polled at the status sync interval`,
  );
}

/** Degraded from unsupported configuration; undefined when there is none (and no rule sets Degraded). */
export function workDegraded(unsupported: readonly string[]): ConditionUpdate | undefined {
  if (unsupported.length === 0) return undefined;
  return {
    type: ManifestWorkCondition.Degraded,
    status: 'True',
    reason: ManifestWorkReason.UnsupportedConfiguration,
    message: `Not honoured by this work agent: ${unsupported.join('; ')}`,
  };
}
