// Status feedback without a cluster: the JSONPath subset, OCM's well-known rules, value typing
// and the size caps on what a managed object can push into the hub's status.
import { describe, expect, it } from 'vitest';
import { readFeedback } from '../../src/work/agent/feedback.ts';
import { evaluateJsonPath, JsonPathError, parseJsonPath } from '../../src/work/agent/jsonpath.ts';

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', labels: { 'app.kubernetes.io/name': 'web' } },
  spec: { containers: [{ name: 'a' }, { name: 'b' }] },
  status: {
    phase: 'Pending',
    conditions: [
      { type: 'PodScheduled', status: 'False' },
      { type: 'Ready', status: 'False' },
    ],
  },
};

const at = (obj: unknown, path: string) => evaluateJsonPath(obj, parseJsonPath(path));

describe('JSONPath subset', () => {
  it('reads fields, quoted keys, indexes, wildcards and == / != filters', () => {
    expect(at(pod, '.status.phase')).toEqual(['Pending']);
    expect(at(pod, '{.status.phase}')).toEqual(['Pending']);
    expect(at(pod, "$.metadata.labels['app.kubernetes.io/name']")).toEqual(['web']);
    expect(at(pod, '.spec.containers[1].name')).toEqual(['b']);
    expect(at(pod, '.spec.containers[-1].name')).toEqual(['b']);
    expect(at(pod, '.spec.containers[*].name')).toEqual(['a', 'b']);
    expect(at(pod, '.status.conditions[?(@.type=="Ready")].status')).toEqual(['False']);
    expect(at(pod, ".status.conditions[?(@.type != 'Ready')].type")).toEqual(['PodScheduled']);
  });

  it('missing keys select nothing instead of failing', () => {
    expect(at(pod, '.status.podIP')).toEqual([]);
    expect(at(pod, '.spec.containers[7].name')).toEqual([]);
    expect(at(pod, '.status.conditions[?(@.type=="Nope")].status')).toEqual([]);
  });

  it('rejects what it does not implement, and over-long paths', () => {
    expect(() => parseJsonPath('..name')).toThrow(JsonPathError);
    expect(() => parseJsonPath('.a[?(@.x ~ 1)]')).toThrow(/unsupported/);
    expect(() => parseJsonPath('status')).toThrow(/unexpected/);
    expect(() => parseJsonPath(`.${'a'.repeat(600)}`)).toThrow(/longer than/);
    expect(() => parseJsonPath('.a'.repeat(40))).toThrow(/segments/);
  });
});

describe('feedback rules', () => {
  it('WellKnownStatus of a Deployment omits the counts its status leaves out (never reports 0 for them)', () => {
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', status: { replicas: 3 } };
    expect(readFeedback(deployment, [{ type: 'WellKnownStatus' }])).toEqual({
      values: [{ name: 'Replicas', fieldValue: { type: 'Integer', integer: 3 } }],
      errors: [],
    });
    // No status written yet: nothing to report.
    expect(
      readFeedback({ apiVersion: 'apps/v1', kind: 'Deployment' }, [{ type: 'WellKnownStatus' }]).values,
    ).toEqual([]);
  });

  it('WellKnownStatus of Pods, Jobs and DaemonSets uses OCM names; other kinds are an error', () => {
    expect(readFeedback(pod, [{ type: 'WellKnownStatus' }]).values).toEqual([
      { name: 'PodReady', fieldValue: { type: 'String', string: 'False' } },
      { name: 'PodPhase', fieldValue: { type: 'String', string: 'Pending' } },
    ]);
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      status: { conditions: [{ type: 'Complete', status: 'True' }], succeeded: 1 },
    };
    expect(readFeedback(job, [{ type: 'WellKnownStatus' }]).values.map((v) => v.name)).toEqual([
      'JobComplete',
      'JobSucceeded',
    ]);
    const ds = {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      status: { desiredNumberScheduled: 2, numberReady: 1 },
    };
    expect(readFeedback(ds, [{ type: 'WellKnownStatus' }]).values).toEqual([
      { name: 'NumberReady', fieldValue: { type: 'Integer', integer: 1 } },
      { name: 'DesiredNumberScheduled', fieldValue: { type: 'Integer', integer: 2 } },
    ]);
    const cm = { apiVersion: 'v1', kind: 'ConfigMap' };
    expect(readFeedback(cm, [{ type: 'WellKnownStatus' }]).errors[0]).toContain(
      'cannot find the wellknown statuses',
    );
  });

  it('JSONPaths values are typed Integer, String, Boolean or JsonRaw', () => {
    const obj = {
      apiVersion: 'example.dev/v2',
      kind: 'Thing',
      spec: { n: 4, ratio: 0.5, on: true, s: 'x', list: [1, 2] },
    };
    const { values, errors } = readFeedback(obj, [
      {
        type: 'JSONPaths',
        jsonPaths: [
          { name: 'n', path: '.spec.n' },
          { name: 'ratio', path: '.spec.ratio' },
          { name: 'on', path: '.spec.on' },
          { name: 's', path: '.spec.s' },
          { name: 'list', path: '.spec.list' },
          { name: 'absent', path: '.spec.absent' },
          { name: 'wrong-version', path: '.spec.n', version: 'v1' },
          { name: 'right-version', path: '.spec.n', version: 'v2' },
        ],
      },
    ]);
    expect(Object.fromEntries(values.map((v) => [v.name, v.fieldValue]))).toEqual({
      n: { type: 'Integer', integer: 4 },
      ratio: { type: 'JsonRaw', jsonRaw: '0.5' },
      on: { type: 'Boolean', boolean: true },
      s: { type: 'String', string: 'x' },
      list: { type: 'JsonRaw', jsonRaw: '[1,2]' },
      'right-version': { type: 'Integer', integer: 4 },
    });
    expect(errors).toEqual(['version set in the path wrong-version is not matched for the related resource']);
  });

  it('caps what a managed object can push to the hub', () => {
    const big = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      data: { blob: 'x'.repeat(5000) },
      spec: { obj: { k: 'y'.repeat(2000) } },
    };
    const { values, errors } = readFeedback(big, [
      {
        type: 'JSONPaths',
        jsonPaths: [
          { name: 'blob', path: '.data.blob' },
          { name: 'obj', path: '.spec.obj' },
        ],
      },
    ]);
    expect(values).toEqual([]);
    expect(errors).toHaveLength(2);
    expect(errors[1]).toContain('larger than the maximum length 1024');
    const many = Array.from({ length: 70 }, (_, i) => ({ name: `v${i}`, path: '.kind' }));
    const capped = readFeedback(big, [{ type: 'JSONPaths', jsonPaths: many }]);
    expect(capped.values).toHaveLength(64);
    expect(capped.errors[0]).toContain('more than 64');
  });
});
