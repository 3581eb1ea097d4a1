// Condition rules (`manifestConfigs[].conditionRules`): conditions the agent computes for one
// manifest from its live object on the managed cluster. `CEL` rules evaluate the user's
// expressions (all must be true) with `object` bound to the live object; `WellKnownConditions`
// use OCM's built-in expressions for the kinds it knows (Complete of Jobs and Pods). Every rule
// yields a condition — a rule that cannot be evaluated says why in its reason and message, it is
// never skipped. Expressions come from the hub, so their size and the work they do are bounded.
// Pure: no I/O, no state besides a bounded cache of parsed expressions.
import { Environment } from '@marcbachmann/cel-js';
import {
  type ConditionRule,
  ConditionRuleType,
  ManifestWorkCondition,
  ManifestWorkReason,
} from '../../api/index.ts';
import { celCompiler, celExpressionsMaxCount, toCelValue } from '../../cel/programs.ts';
import { errorMessage } from '../../errors.ts';
import type { ConditionUpdate, KubeObject } from '../../kube/index.ts';

/** Longest message a messageExpression may produce. */
const messageMaxLength = 1024;

/** OCM's well-known rules: per condition type, per apiVersion/kind, the CEL expression that decides it. */
const wellKnownRules: Record<string, Record<string, string>> = {
  [ManifestWorkCondition.Complete]: {
    'batch/v1/Job':
      "object.status.conditions.filter(c, c.type == 'Complete' || c.type == 'Failed').exists(c, c.status == 'True')",
    'v1/Pod': "object.status.phase in ['Succeeded', 'Failed']",
  },
};

const environment = new Environment({
  homogeneousAggregateLiterals: false,
  limits: { maxAstNodes: 2000, maxDepth: 64, maxListElements: 256, maxMapEntries: 256 },
})
  .registerVariable('object', 'dyn')
  .registerVariable('result', 'bool');
const compile = celCompiler(environment);

function ruleCondition(
  rule: ConditionRule,
  status: 'True' | 'False',
  reason: string,
  message: string,
): ConditionUpdate {
  return { type: rule.condition, status, reason, message: message.slice(0, messageMaxLength) };
}

/** The expressions a rule stands for, or why it has none for this object. */
function expressionsOf(rule: ConditionRule, obj: KubeObject): string[] | string {
  if (rule.type === ConditionRuleType.WellKnownConditions) {
    const expression = wellKnownRules[rule.condition]?.[`${obj.apiVersion}/${obj.kind}`];
    return expression
      ? [expression]
      : `no well-known ${rule.condition} condition for ${obj.apiVersion}, Kind=${obj.kind}`;
  }
  if (rule.type === ConditionRuleType.CEL) {
    const expressions = rule.celExpressions ?? [];
    if (expressions.length === 0) return 'a CEL rule needs at least one expression';
    if (expressions.length > celExpressionsMaxCount) {
      return `a CEL rule holds at most ${celExpressionsMaxCount} expressions`;
    }
    return expressions;
  }
  return `unknown condition rule type ${String(rule.type)}`;
}

/** Evaluate one rule against the live object. */
export function evaluateConditionRule(rule: ConditionRule, obj: KubeObject): ConditionUpdate {
  const expressions = expressionsOf(rule, obj);
  if (typeof expressions === 'string') {
    return ruleCondition(rule, 'False', ManifestWorkReason.ConditionRuleInvalid, expressions);
  }
  const context = { object: toCelValue(obj), result: false };
  let result = true;
  for (const expression of expressions) {
    let value: unknown;
    try {
      value = compile(expression)(context);
    } catch (err) {
      return ruleCondition(
        rule,
        'False',
        ManifestWorkReason.ConditionRuleExpressionError,
        `failed to evaluate ${JSON.stringify(expression)}: ${errorMessage(err).split('\n')[0]}`,
      );
    }
    if (typeof value !== 'boolean') {
      return ruleCondition(
        rule,
        'False',
        ManifestWorkReason.ConditionRuleExpressionError,
        `${JSON.stringify(expression)} evaluated to ${typeof value}, not bool`,
      );
    }
    if (!value) {
      result = false;
      break;
    }
  }
  context.result = result;
  let message = rule.message ?? '';
  if (rule.messageExpression) {
    try {
      const value = compile(rule.messageExpression)(context);
      if (typeof value !== 'string') throw new Error(`evaluated to ${typeof value}, not string`);
      message = value;
    } catch (err) {
      return ruleCondition(
        rule,
        'False',
        ManifestWorkReason.ConditionRuleExpressionError,
        `failed to evaluate messageExpression: ${errorMessage(err).split('\n')[0]}`,
      );
    }
  }
  return ruleCondition(rule, result ? 'True' : 'False', ManifestWorkReason.ConditionRuleEvaluated, message);
}

/** Conditions for every rule of a manifest (the CRD keys rules by condition, so types are unique). */
export function evaluateConditionRules(rules: readonly ConditionRule[], obj: KubeObject): ConditionUpdate[] {
  return rules.map((rule) => evaluateConditionRule(rule, obj));
}

/** Reasons a rule-made condition carries: how conditions set by rules are told from the agent's own. */
export const conditionRuleReasons: ReadonlySet<string> = new Set([
  ManifestWorkReason.ConditionRuleEvaluated,
  ManifestWorkReason.ConditionRuleInvalid,
  ManifestWorkReason.ConditionRuleExpressionError,
  ManifestWorkReason.ConditionRuleInternalError,
]);
