// status.conditions the Kubernetes way (metav1.Condition, apimachinery's meta.SetStatusCondition):
// one entry per type; lastTransitionTime moves only when status changes; reason, message and
// observedGeneration always follow the latest write. Every status writer in tether goes through
// setCondition, so "did anything change?" (conditionsEqualIgnoringTime) means the same everywhere.

// The Condition type is Kubernetes' metav1.Condition, defined once in ./types.ts.
import type { Condition, ConditionStatus } from './types.ts';

export type { Condition, ConditionStatus };

/** What a reconciler decides; setCondition adds the times. */
export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/** metav1.Time text of a Date: 2006-01-02T15:04:05Z (the apiserver keeps seconds only). */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * A new conditions array with `update` set: added (transition time now) when the type is new;
 * otherwise status, reason, message and observedGeneration replaced, and lastTransitionTime set to
 * now only when the status changed. Order is kept; the input is not modified.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  observedGeneration?: number,
  now: Date = new Date(),
): Condition[] {
  const list = conditions ?? [];
  const existing = list.find((c) => c.type === update.type);
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message,
    lastTransitionTime:
      existing && existing.status === update.status && existing.lastTransitionTime
        ? existing.lastTransitionTime
        : formatTime(now),
  };
  const generation = observedGeneration ?? existing?.observedGeneration;
  if (generation !== undefined) next.observedGeneration = generation;
  if (!existing) return [...list, next];
  return list.map((c) => (c === existing ? next : c));
}

/** A new conditions array without `type`. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * Same types with the same status, reason, message and observedGeneration, in any order; the
 * transition times are not compared. Use it to skip status writes that would change nothing.
 */
export function conditionsEqualIgnoringTime(
  a: readonly Condition[] | undefined,
  b: readonly Condition[] | undefined,
): boolean {
  const left = a ?? [];
  const right = b ?? [];
  if (left.length !== right.length) return false;
  return left.every((x) => {
    const y = right.find((c) => c.type === x.type);
    return (
      y !== undefined &&
      y.status === x.status &&
      y.reason === x.reason &&
      y.message === x.message &&
      y.observedGeneration === x.observedGeneration
    );
  });
}
