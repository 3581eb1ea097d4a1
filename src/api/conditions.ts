// The metav1.Condition shape shared by every OCM status: its TS type and its CRD schema. Setting,
// comparing and transition-time bookkeeping live in src/kube, not here.

import { type Condition, ConditionStatus } from '../kube/types.ts';
import * as s from './schema.ts';

// metav1.Condition itself is defined with the other metav1 shapes in src/kube/types.ts.
export { type Condition, ConditionStatus };

/** Upper bound of Condition.message the API server accepts. */
export const conditionMessageMaxLength = 32768;

// Patterns and bounds are the ones metav1.Condition declares, so objects written by OCM's Go
// components validate here and ours validate there.
const conditionTypePattern =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';
const conditionReasonPattern = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';

function conditionSchema(): s.JsonSchema {
  return s.object(
    {
      type: s.string({ maxLength: 316, pattern: conditionTypePattern }),
      status: s.oneOf(['True', 'False', 'Unknown']),
      reason: s.string({ minLength: 1, maxLength: 1024, pattern: conditionReasonPattern }),
      message: s.string({ maxLength: conditionMessageMaxLength }),
      lastTransitionTime: s.dateTime(),
      observedGeneration: s.integer('int64', { minimum: 0 }),
    },
    { required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'] },
  );
}

/**
 * A `conditions` list keyed by `type`, so server-side apply merges entries instead of replacing the
 * list. `maxItems` bounds lists a peer writes (see peer-limits.ts).
 */
export function conditionsSchema(options: { description?: string; maxItems?: number } = {}): s.JsonSchema {
  const { description, maxItems } = options;
  return s.listMap(conditionSchema(), ['type'], {
    ...(description ? { description } : {}),
    ...(maxItems !== undefined ? { maxItems } : {}),
  });
}
