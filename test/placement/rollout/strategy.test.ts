// OCM's rollout strategies as pure logic: All, Progressive (maxConcurrency, mandatory groups,
// maxFailures, minSuccessTime, progressDeadline), ProgressivePerGroup, removed clusters, and the
// count/percentage/duration readings OCM applies.
import { describe, expect, it } from 'vitest';
import type { RolloutStrategy } from '../../../src/api/index.ts';
import {
  type ClusterGroup,
  type ClusterRolloutStatus,
  nextRollout,
  parseProgressDeadline,
  rolloutSize,
} from '../../../src/placement/rollout/index.ts';

const now = Date.parse('2026-01-01T00:10:00Z');
const minutesAgo = (m: number) => now - m * 60_000;

const group = (groupIndex: number, clusters: string[], groupName = ''): ClusterGroup => ({
  key: { groupIndex, groupName },
  clusters,
});
const oneGroup = [group(0, ['c1', 'c2', 'c3', 'c4'])];
const st = (
  clusterName: string,
  status: ClusterRolloutStatus['status'],
  lastTransitionTime?: number,
): ClusterRolloutStatus => ({ clusterName, status, ...(lastTransitionTime ? { lastTransitionTime } : {}) });
const names = (list: ClusterRolloutStatus[]) => list.map((s) => s.clusterName).sort();

describe('rollout strategy All', () => {
  it('rolls out to every decided cluster at once (also without a strategy)', () => {
    for (const strategy of [undefined, { type: 'All' } as RolloutStrategy]) {
      const r = nextRollout(strategy, oneGroup, [], now);
      expect(names(r.clustersToRollout)).toEqual(['c1', 'c2', 'c3', 'c4']);
      expect(r.clustersToRollout.every((s) => s.status === 'ToApply')).toBe(true);
    }
  });

  it('leaves succeeded clusters alone and lists clusters without a decision as removed', () => {
    const r = nextRollout(
      { type: 'All' },
      oneGroup,
      [st('c1', 'Succeeded', minutesAgo(5)), st('gone', 'Succeeded', minutesAgo(5))],
      now,
    );
    expect(names(r.clustersToRollout)).toEqual(['c2', 'c3', 'c4']);
    expect(names(r.clustersRemoved)).toEqual(['gone']);
  });

  it('times out a cluster progressing past progressDeadline and rechecks before it', () => {
    const strategy: RolloutStrategy = { type: 'All', all: { progressDeadline: '10m' } };
    const late = nextRollout(strategy, oneGroup, [st('c1', 'Progressing', minutesAgo(11))], now);
    expect(names(late.clustersTimeOut)).toEqual(['c1']);
    expect(late.clustersTimeOut[0]?.status).toBe('TimeOut');
    const early = nextRollout(strategy, oneGroup, [st('c1', 'Progressing', minutesAgo(4))], now);
    expect(early.clustersTimeOut).toEqual([]);
    expect(early.recheckAfterMs).toBe(6 * 60_000);
  });
});

describe('rollout strategy Progressive', () => {
  const progressive = (p: NonNullable<RolloutStrategy['progressive']>): RolloutStrategy => ({
    type: 'Progressive',
    progressive: p,
  });

  it('starts maxConcurrency clusters in name order and waits for them before the next', () => {
    const strategy = progressive({ maxConcurrency: 2 });
    expect(names(nextRollout(strategy, oneGroup, [], now).clustersToRollout)).toEqual(['c1', 'c2']);
    const waiting = nextRollout(
      strategy,
      oneGroup,
      [st('c1', 'Succeeded', minutesAgo(1)), st('c2', 'Progressing', minutesAgo(1))],
      now,
    );
    // c2 still progressing holds one slot: one new cluster joins.
    expect(names(waiting.clustersToRollout)).toEqual(['c2', 'c3']);
    const done = nextRollout(
      strategy,
      oneGroup,
      [st('c1', 'Succeeded', minutesAgo(1)), st('c2', 'Succeeded', minutesAgo(1))],
      now,
    );
    expect(names(done.clustersToRollout)).toEqual(['c3', 'c4']);
  });

  it('reads maxConcurrency as a percentage rounded up', () => {
    const r = nextRollout(progressive({ maxConcurrency: '25%' }), oneGroup, [], now);
    expect(names(r.clustersToRollout)).toEqual(['c1']);
  });

  it('holds a succeeded cluster within minSuccessTime and rechecks when the soak ends', () => {
    const strategy = progressive({ maxConcurrency: 1, minSuccessTime: '5m' });
    const soaking = nextRollout(strategy, oneGroup, [st('c1', 'Succeeded', minutesAgo(2))], now);
    expect(names(soaking.clustersToRollout)).toEqual(['c1']);
    expect(soaking.recheckAfterMs).toBe(3 * 60_000);
    const soaked = nextRollout(strategy, oneGroup, [st('c1', 'Succeeded', minutesAgo(6))], now);
    expect(names(soaked.clustersToRollout)).toEqual(['c2']);
  });

  it('rolls out mandatory decision groups first, by name or index', () => {
    const groups = [group(0, ['a1', 'a2'], 'canary'), group(1, ['b1', 'b2'], 'prod')];
    for (const mandatory of [{ groupName: 'prod' }, { groupIndex: 1 }]) {
      const r = nextRollout(progressive({ mandatoryDecisionGroups: [mandatory] }), groups, [], now);
      expect(names(r.clustersToRollout)).toEqual(['b1', 'b2']);
    }
    const after = nextRollout(
      progressive({ mandatoryDecisionGroups: [{ groupName: 'prod' }], maxConcurrency: 1 }),
      groups,
      [st('b1', 'Succeeded', minutesAgo(1)), st('b2', 'Succeeded', minutesAgo(1))],
      now,
    );
    expect(names(after.clustersToRollout)).toEqual(['a1']);
  });

  it('stops starting clusters once more than maxFailures failed', () => {
    const existing = [st('c1', 'Failed', minutesAgo(1)), st('c2', 'Succeeded', minutesAgo(1))];
    const stopped = nextRollout(progressive({ maxConcurrency: 2 }), oneGroup, existing, now);
    expect(stopped.maxFailureBreach).toBe(true);
    expect(names(stopped.clustersToRollout)).toEqual(['c1']);
    const tolerated = nextRollout(
      progressive({ maxConcurrency: 2, maxFailures: 1 }),
      oneGroup,
      existing,
      now,
    );
    expect(tolerated.maxFailureBreach).toBe(false);
    expect(names(tolerated.clustersToRollout)).toEqual(['c1', 'c3']);
  });

  it('counts a timed-out cluster as failed', () => {
    const r = nextRollout(
      progressive({ maxConcurrency: 1, progressDeadline: '5m' }),
      oneGroup,
      [st('c1', 'Progressing', minutesAgo(6))],
      now,
    );
    expect(names(r.clustersTimeOut)).toEqual(['c1']);
    expect(r.maxFailureBreach).toBe(true);
    expect(r.clustersToRollout).toEqual([]);
  });
});

describe('rollout strategy ProgressivePerGroup', () => {
  const groups = [group(0, ['a1', 'a2']), group(1, ['b1', 'b2']), group(2, ['c1'])];

  it('rolls out one decision group after the other by index', () => {
    const strategy: RolloutStrategy = { type: 'ProgressivePerGroup' };
    expect(names(nextRollout(strategy, groups, [], now).clustersToRollout)).toEqual(['a1', 'a2']);
    const half = nextRollout(strategy, groups, [st('a1', 'Succeeded', minutesAgo(1))], now);
    expect(names(half.clustersToRollout)).toEqual(['a2']);
    const next = nextRollout(
      strategy,
      groups,
      [st('a1', 'Succeeded', minutesAgo(1)), st('a2', 'Succeeded', minutesAgo(1))],
      now,
    );
    expect(names(next.clustersToRollout)).toEqual(['b1', 'b2']);
  });

  it('takes mandatory groups first and counts maxFailures per group', () => {
    const first = nextRollout(
      { type: 'ProgressivePerGroup', progressivePerGroup: { mandatoryDecisionGroups: [{ groupIndex: 2 }] } },
      groups,
      [],
      now,
    );
    expect(names(first.clustersToRollout)).toEqual(['c1']);
    const failedA = [st('a1', 'Failed', minutesAgo(1)), st('a2', 'Succeeded', minutesAgo(1))];
    const stop = nextRollout({ type: 'ProgressivePerGroup' }, groups, failedA, now);
    expect(stop.maxFailureBreach).toBe(true);
    expect(names(stop.clustersToRollout)).toEqual(['a1']);
    const go = nextRollout(
      { type: 'ProgressivePerGroup', progressivePerGroup: { maxFailures: '50%', progressDeadline: '1m' } },
      groups,
      failedA,
      now,
    );
    // a1 failed past its deadline (timed out), within the group's 50%: group 1 goes on.
    expect(names(go.clustersTimeOut)).toEqual(['a1']);
    expect(names(go.clustersToRollout)).toEqual(['b1', 'b2']);
  });
});

describe('rollout readings', () => {
  it('reads counts and percentages as OCM does (out of range falls back)', () => {
    expect(rolloutSize(2, 4, 4)).toBe(2);
    expect(rolloutSize('50%', 3, 3)).toBe(2);
    expect(rolloutSize(0, 4, 4)).toBe(4);
    expect(rolloutSize(9, 4, 0)).toBe(0);
    expect(() => rolloutSize('2', 4, 4)).toThrow(/percentage/);
  });

  it('reads progressDeadline None as no deadline and rejects other words', () => {
    expect(parseProgressDeadline('None')).toBe(Number.POSITIVE_INFINITY);
    expect(parseProgressDeadline('90s')).toBe(90_000);
    expect(() => parseProgressDeadline('soon')).toThrow(/progressDeadline/);
    expect(() => nextRollout({ type: 'Bogus' as 'All' }, [], [], now)).toThrow(/Bogus/);
  });
});
