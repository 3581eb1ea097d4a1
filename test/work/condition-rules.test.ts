import { describe, expect, it } from 'vitest';
import type { ManifestCondition } from '../../src/api/index.ts';
import { evaluateConditionRule } from '../../src/work/agent/condition-rules.ts';
import {
  aggregateRuleConditions,
  unsupportedConfiguration,
  workProgressing,
} from '../../src/work/agent/work-conditions.ts';

const job = (conditions: { type: string; status: string }[]) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'j', namespace: 'n' },
  status: { conditions, succeeded: 1 },
});

describe('WellKnownConditions', () => {
  it('a Job is Complete once its Complete or Failed condition is True, as OCM decides it', () => {
    const rule = { condition: 'Complete', type: 'WellKnownConditions' as const };
    expect(evaluateConditionRule(rule, job([{ type: 'Complete', status: 'True' }]))).toMatchObject({
      type: 'Complete',
      status: 'True',
      reason: 'ConditionRuleEvaluated',
    });
    expect(evaluateConditionRule(rule, job([{ type: 'Failed', status: 'True' }])).status).toBe('True');
    expect(evaluateConditionRule(rule, job([{ type: 'Suspended', status: 'True' }])).status).toBe('False');
  });

  it('a Pod is Complete in phase Succeeded or Failed; kinds without a well-known rule say so', () => {
    const rule = { condition: 'Complete', type: 'WellKnownConditions' as const };
    const pod = (phase: string) => ({ apiVersion: 'v1', kind: 'Pod', status: { phase } });
    expect(evaluateConditionRule(rule, pod('Succeeded')).status).toBe('True');
    expect(evaluateConditionRule(rule, pod('Running')).status).toBe('False');
    expect(evaluateConditionRule(rule, { apiVersion: 'v1', kind: 'ConfigMap' })).toMatchObject({
      status: 'False',
      reason: 'ConditionRuleInvalid',
    });
  });
});

describe('CEL rules', () => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    spec: { replicas: 2 },
    status: { readyReplicas: 2, conditions: [{ type: 'Available', status: 'True' }] },
  };

  it('all expressions must hold; integers compare and add as in Go CEL; has() works', () => {
    const rule = (celExpressions: string[]) => ({ condition: 'Ready', type: 'CEL' as const, celExpressions });
    expect(
      evaluateConditionRule(
        rule([
          'object.status.readyReplicas == object.spec.replicas',
          'object.spec.replicas + 1 == 3',
          "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
        ]),
        deployment,
      ).status,
    ).toBe('True');
    expect(
      evaluateConditionRule(rule(['true', 'has(object.status.updatedReplicas)']), deployment).status,
    ).toBe('False');
  });

  it('message and messageExpression (with object and result) become the condition message', () => {
    const withMessage = {
      condition: 'Ready',
      type: 'CEL' as const,
      celExpressions: ['true'],
      message: 'fine',
    };
    expect(evaluateConditionRule(withMessage, deployment).message).toBe('fine');
    const withExpression = {
      condition: 'Ready',
      type: 'CEL' as const,
      celExpressions: ['object.status.readyReplicas >= 2'],
      messageExpression: '(result ? "ready: " : "not ready: ") + string(object.status.readyReplicas)',
    };
    expect(evaluateConditionRule(withExpression, deployment).message).toBe('ready: 2');
  });

  it('errors and non-bool results turn the condition False with ConditionRuleExpressionError', () => {
    const rule = (celExpressions: string[]) => ({ condition: 'X', type: 'CEL' as const, celExpressions });
    const missing = evaluateConditionRule(rule(['object.status.nothing == 1']), deployment);
    expect(missing).toMatchObject({ status: 'False', reason: 'ConditionRuleExpressionError' });
    expect(missing.message).toMatch(/nothing/);
    expect(evaluateConditionRule(rule(['1 +']), deployment).reason).toBe('ConditionRuleExpressionError');
    expect(evaluateConditionRule(rule(['"text"']), deployment).message).toMatch(/not bool/);
    expect(evaluateConditionRule(rule([]), deployment).reason).toBe('ConditionRuleInvalid');
  });
});

const manifest = (ordinal: number, conditions: [string, string, string][]): ManifestCondition => ({
  resourceMeta: { ordinal },
  conditions: conditions.map(([type, status, reason]) => ({
    type,
    status: status as 'True' | 'False',
    reason,
    message: '',
    lastTransitionTime: '2026-01-01T00:00:00Z',
  })),
});

describe('work-level conditions', () => {
  it('Complete is True only when every manifest with a Complete rule is complete', () => {
    const done = manifest(0, [['Complete', 'True', 'ConditionRuleEvaluated']]);
    const running = manifest(1, [['Complete', 'False', 'ConditionRuleEvaluated']]);
    const plain = manifest(2, [['Applied', 'True', 'AppliedManifestComplete']]);
    expect(aggregateRuleConditions([done, plain])).toEqual([
      expect.objectContaining({ type: 'Complete', status: 'True', reason: 'ManifestsComplete' }),
    ]);
    expect(aggregateRuleConditions([done, running, plain])).toEqual([
      expect.objectContaining({ type: 'Complete', status: 'False', reason: 'ManifestsNotComplete' }),
    ]);
    expect(aggregateRuleConditions([plain])).toEqual([]);
  });

  it('Progressing: Failed while a manifest fails, Applying until all are available, then Completed', () => {
    const ok = manifest(0, [
      ['Applied', 'True', 'x'],
      ['Available', 'True', 'x'],
    ]);
    const pending = manifest(1, [
      ['Applied', 'True', 'x'],
      ['Available', 'Unknown', 'x'],
    ]);
    const failed = manifest(2, [['Applied', 'False', 'x']]);
    expect(workProgressing([ok, pending, failed])).toMatchObject({ status: 'True', reason: 'Failed' });
    expect(workProgressing([ok, pending])).toMatchObject({ status: 'True', reason: 'Applying' });
    expect(workProgressing([ok])).toMatchObject({ status: 'False', reason: 'Completed' });
  });

  it('names what the agent cannot honour: feedback to watch beyond the watch cap', () => {
    expect(unsupportedConfiguration([3]).join('\n')).toMatch(/feedbackScrapeType Watch of manifest 3/);
    expect(unsupportedConfiguration([])).toEqual([]);
  });
});
