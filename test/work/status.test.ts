// The status the agent reports, built from apply outcomes without a cluster: per-manifest
// conditions, the work-level aggregation, stable transition times and change detection.
import { describe, expect, it } from 'vitest';
import type { ManifestOutcome } from '../../src/work/agent/apply.ts';
import { buildWorkStatus, statusEqual } from '../../src/work/agent/status.ts';

const cmDescriptor = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };

function ok(ordinal: number, name: string): ManifestOutcome {
  return {
    meta: {
      ordinal,
      group: '',
      version: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      name,
      namespace: 'ns',
    },
    descriptor: cmDescriptor,
    strategy: 'Update',
    live: { state: 'present', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } } },
  };
}

const t0 = new Date('2030-01-01T00:00:00Z');
const t1 = new Date('2030-01-01T00:05:00Z');

describe('work status', () => {
  it('all applied and present: Applied and Available True, Progressing False, with the generation', () => {
    const status = buildWorkStatus(undefined, [ok(0, 'a'), ok(1, 'b')], 3, t0);
    expect(status.conditions).toEqual([
      {
        type: 'Applied',
        status: 'True',
        reason: 'AppliedManifestWorkComplete',
        message: 'Apply manifest work complete',
        lastTransitionTime: '2030-01-01T00:00:00Z',
        observedGeneration: 3,
      },
      {
        type: 'Available',
        status: 'True',
        reason: 'ResourcesAvailable',
        message: 'All resources are available',
        lastTransitionTime: '2030-01-01T00:00:00Z',
        observedGeneration: 3,
      },
      {
        type: 'Progressing',
        status: 'False',
        reason: 'Completed',
        message: 'All resources are applied and available',
        lastTransitionTime: '2030-01-01T00:00:00Z',
        observedGeneration: 3,
      },
    ]);
    expect(
      status.resourceStatus?.manifests?.[1]?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`),
    ).toEqual(['Applied=True/AppliedManifestComplete', 'Available=True/ResourceAvailable']);
  });

  it('a failed, an unknown-kind and a missing manifest: Applied False, Available False, messages kept', () => {
    const failed: ManifestOutcome = {
      ...ok(1, 'bad'),
      error: 'create ConfigMap ns/bad: invalid',
      live: { state: 'absent' },
    };
    const unknownKind: ManifestOutcome = {
      meta: { ordinal: 2, group: 'x.dev', version: 'v1', kind: 'Gadget', name: 'g' },
      strategy: 'Update',
      error: 'the server doesn\'t have a resource type "Gadget" in x.dev/v1',
      unknownKind: true,
      live: { state: 'unknown', message: 'x' },
    };
    const status = buildWorkStatus(undefined, [ok(0, 'a'), failed, unknownKind], 1, t0);
    expect(status.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual([
      'Applied=False/AppliedManifestWorkFailed',
      'Available=False/ResourcesNotAvailable',
      'Progressing=True/Failed',
    ]);
    const m = status.resourceStatus?.manifests ?? [];
    expect(m[1]?.conditions[0]?.message).toBe('Failed to apply manifest: create ConfigMap ns/bad: invalid');
    expect(m[2]?.conditions[1]).toMatchObject({ status: 'Unknown', reason: 'IncompletedResourceMeta' });
    expect(status.conditions?.[1]?.message).toBe('1 of 3 resources are not available');
  });

  it('keeps transition times while nothing changes, and says so', () => {
    const first = buildWorkStatus(undefined, [ok(0, 'a')], 1, t0);
    const second = buildWorkStatus(first, [ok(0, 'a')], 1, t1);
    expect(statusEqual(first, second)).toBe(true);
    const gone: ManifestOutcome = { ...ok(0, 'a'), live: { state: 'absent' } };
    const third = buildWorkStatus(second, [gone], 1, t1);
    expect(statusEqual(second, third)).toBe(false);
    expect(third.conditions?.find((c) => c.type === 'Available')?.lastTransitionTime).toBe(
      '2030-01-01T00:05:00Z',
    );
    expect(third.conditions?.find((c) => c.type === 'Applied')?.lastTransitionTime).toBe(
      '2030-01-01T00:00:00Z',
    );
  });

  it('a manifest that moved to another ordinal keeps its condition history', () => {
    const first = buildWorkStatus(undefined, [ok(0, 'a'), ok(1, 'b')], 1, t0);
    const moved = buildWorkStatus(first, [ok(0, 'b')], 2, t1);
    expect(moved.resourceStatus?.manifests?.[0]?.conditions[0]?.lastTransitionTime).toBe(
      '2030-01-01T00:00:00Z',
    );
  });

  it('feedback rules add StatusFeedbackSynced and values; without rules there is none', () => {
    const withRules: ManifestOutcome = {
      ...ok(0, 'a'),
      config: {
        resourceIdentifier: { resource: 'configmaps', name: 'a', namespace: 'ns' },
        feedbackRules: [{ type: 'JSONPaths', jsonPaths: [{ name: 'kind', path: '.kind' }] }],
      },
    };
    const status = buildWorkStatus(undefined, [withRules, ok(1, 'b')], 1, t0);
    const [a, b] = status.resourceStatus?.manifests ?? [];
    expect(a?.statusFeedback?.values).toEqual([
      { name: 'kind', fieldValue: { type: 'String', string: 'ConfigMap' } },
    ]);
    expect(a?.conditions.map((c) => c.type)).toContain('StatusFeedbackSynced');
    expect(b?.conditions.map((c) => c.type)).not.toContain('StatusFeedbackSynced');
  });
});

describe('condition rules in the work status', () => {
  it('a rule naming a condition the agent sets itself is skipped, and Degraded says so', () => {
    const outcome: ManifestOutcome = {
      ...ok(0, 'a'),
      config: {
        resourceIdentifier: { resource: 'configmaps', name: 'a', namespace: 'ns' },
        conditionRules: [
          { condition: 'Available', type: 'CEL', celExpressions: ['false'] },
          { condition: 'Ready', type: 'CEL', celExpressions: ['true'] },
        ],
      },
    };
    const status = buildWorkStatus(undefined, [outcome], 1, t0);
    const manifest = status.resourceStatus?.manifests?.[0];
    expect(manifest?.conditions.find((c) => c.type === 'Available')?.status).toBe('True');
    expect(manifest?.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    const degraded = status.conditions?.find((c) => c.type === 'Degraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'UnsupportedConfiguration' });
    expect(degraded?.message).toContain('conditionRules for Available of manifest 0');
  });
});
