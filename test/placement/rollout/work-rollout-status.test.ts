// How a ManifestWorkReplicaSet reads its works for the rollout and its status, as OCM does: the
// decision groups of PlacementDecisions; ToApply until the agent observed the generation; then
// Progressing/Degraded or, without Progressing, Available; ManifestworkApplied from the counts;
// the work it wants (name, labels, template) and the owner key of a work's label.
import { describe, expect, it } from 'vitest';
import type { ManifestWork, ManifestWorkReplicaSet, PlacementDecision } from '../../../src/api/index.ts';
import type { Condition } from '../../../src/kube/index.ts';
import {
  desiredWork,
  manifestworkAppliedCondition,
  replicaSetKeyOfWork,
  workIsCurrent,
  workRolloutStatus,
} from '../../../src/placement/hub/manifestworkreplicaset-works.ts';
import { clusterGroupsOf } from '../../../src/placement/rollout/index.ts';

const t0 = '2026-01-01T00:00:00Z';
const cond = (type: string, status: 'True' | 'False', observedGeneration = 2): Condition => ({
  type,
  status,
  reason: type,
  message: '',
  lastTransitionTime: t0,
  observedGeneration,
});
const work = (conditions: Condition[], generation = 2): ManifestWork => ({
  apiVersion: 'work.open-cluster-management.io/v1',
  kind: 'ManifestWork',
  metadata: { name: 'w', namespace: 'c1', generation },
  spec: {},
  status: { conditions },
});
const statusOf = (conditions: Condition[]) => workRolloutStatus('c1', work(conditions)).status;

describe('work rollout status', () => {
  it('is ToApply until the agent reports Applied for the current generation', () => {
    expect(statusOf([])).toBe('ToApply');
    expect(statusOf([cond('Applied', 'True', 1), cond('Available', 'True', 1)])).toBe('ToApply');
    expect(statusOf([cond('Applied', 'False'), cond('Available', 'True')])).toBe('ToApply');
    expect(statusOf([cond('Applied', 'True')])).toBe('ToApply');
    expect(statusOf([cond('Applied', 'True'), cond('Available', 'True'), cond('Degraded', 'False', 1)])).toBe(
      'ToApply',
    );
  });

  it('reads Progressing (with Degraded) when the agent reports it, else Available', () => {
    const applied = cond('Applied', 'True');
    expect(statusOf([applied, cond('Progressing', 'True')])).toBe('Progressing');
    expect(statusOf([applied, cond('Progressing', 'True'), cond('Degraded', 'True')])).toBe('Failed');
    expect(statusOf([applied, cond('Progressing', 'False'), cond('Available', 'False')])).toBe('Succeeded');
    expect(statusOf([applied, cond('Available', 'True')])).toBe('Succeeded');
    expect(statusOf([applied, cond('Available', 'False')])).toBe('Progressing');
    expect(statusOf([applied, cond('Available', 'True'), cond('Degraded', 'True')])).toBe('Failed');
    expect(workRolloutStatus('c1', work([applied, cond('Available', 'True')])).lastTransitionTime).toBe(
      Date.parse(t0),
    );
  });
});

describe('ManifestworkApplied', () => {
  it('is AsExpected only when every work is Available and none progresses or is degraded', () => {
    const reason = (s: Parameters<typeof manifestworkAppliedCondition>[0], verified = 'AsExpected') =>
      manifestworkAppliedCondition(s, verified);
    expect(reason({ total: 2, available: 2, progressing: 0, degraded: 0 })).toMatchObject({
      status: 'True',
      reason: 'AsExpected',
    });
    expect(reason({ total: 2, available: 1, progressing: 1, degraded: 0 }).reason).toBe('Processing');
    expect(reason({ total: 2, available: 1, progressing: 1, degraded: 1 }).reason).toBe('NotAsExpected');
    expect(reason({ total: 0 }, 'PlacementDecisionEmpty').reason).toBe('PlacementDecisionEmpty');
    expect(reason({ total: 0 }, 'PlacementDecisionNotFound').reason).toBe('NotAsExpected');
  });
});

describe('the works of a set', () => {
  const mwrs: ManifestWorkReplicaSet = {
    apiVersion: 'work.open-cluster-management.io/v1alpha1',
    kind: 'ManifestWorkReplicaSet',
    metadata: { name: 'app.v1', namespace: 'team', labels: { tier: 'web' } },
    spec: {
      cascadeDeletionPolicy: 'Background',
      placementRefs: [{ name: 'p' }],
      manifestWorkTemplate: { workload: { manifests: [] } },
    },
  };

  it('wants a work named after the set with its labels, the owner labels and the template', () => {
    const want = desiredWork(mwrs, 'c1', 'p');
    expect(want.metadata).toEqual({
      name: 'app.v1',
      namespace: 'c1',
      labels: {
        tier: 'web',
        'work.open-cluster-management.io/manifestworkreplicaset': 'team.app.v1',
        'work.open-cluster-management.io/placementname': 'p',
      },
    });
    const w = { ...work([]), metadata: { ...want.metadata }, spec: { workload: { manifests: [] } } };
    expect(replicaSetKeyOfWork(w)).toBe('team/app.v1');
    expect(workIsCurrent(w, mwrs, 'p')).toBe(true);
    expect(workIsCurrent(w, mwrs, 'other')).toBe(false);
    expect(
      workIsCurrent(
        { ...w, spec: { workload: { manifests: [{ apiVersion: 'v1', kind: 'X' }] } } } as ManifestWork,
        mwrs,
        'p',
      ),
    ).toBe(false);
  });
});

describe('decision groups', () => {
  const decision = (index: number, name: string, clusters: string[]): PlacementDecision => ({
    apiVersion: 'cluster.open-cluster-management.io/v1beta1',
    kind: 'PlacementDecision',
    metadata: {
      name: `p-decision-${index + 1}`,
      labels: {
        'cluster.open-cluster-management.io/placement': 'p',
        'cluster.open-cluster-management.io/decision-group-index': String(index),
        'cluster.open-cluster-management.io/decision-group-name': name,
      },
    },
    status: { decisions: clusters.map((clusterName) => ({ clusterName, reason: '' })) },
  });

  it('groups clusters by the decision-group labels, ordered by index, a cluster once', () => {
    const groups = clusterGroupsOf([decision(1, 'prod', ['p2', 'p1']), decision(0, 'canary', ['c1', 'p1'])]);
    expect(groups).toEqual([
      { key: { groupIndex: 0, groupName: 'canary' }, clusters: ['c1'] },
      { key: { groupIndex: 1, groupName: 'prod' }, clusters: ['p1', 'p2'] },
    ]);
  });
});
