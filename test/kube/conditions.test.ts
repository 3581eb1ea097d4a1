import { describe, expect, it } from 'vitest';
import {
  type Condition,
  conditionsEqualIgnoringTime,
  findCondition,
  formatTime,
  isConditionTrue,
  removeCondition,
  setCondition,
} from '../../src/kube/conditions.ts';

const t0 = new Date('2025-03-01T10:00:00.123Z');
const t1 = new Date('2025-03-01T10:05:00.456Z');

const joined = { type: 'ManagedClusterJoined', status: 'True', reason: 'Joined', message: 'joined' } as const;
const available = {
  type: 'ManagedClusterConditionAvailable',
  status: 'True',
  reason: 'ManagedClusterAvailable',
  message: 'lease renewed',
} as const;

describe('setCondition', () => {
  it('adds a new condition with the transition time now, in seconds precision', () => {
    const out = setCondition(undefined, joined, 3, t0);
    expect(out).toEqual([{ ...joined, lastTransitionTime: '2025-03-01T10:00:00Z', observedGeneration: 3 }]);
  });

  it('keeps lastTransitionTime when only reason and message change, but takes them', () => {
    const before = setCondition([], available, 1, t0);
    const after = setCondition(
      before,
      { ...available, reason: 'Renewed', message: 'lease renewed again' },
      2,
      t1,
    );
    expect(after).toEqual([
      {
        ...available,
        reason: 'Renewed',
        message: 'lease renewed again',
        lastTransitionTime: '2025-03-01T10:00:00Z',
        observedGeneration: 2,
      },
    ]);
  });

  it('moves lastTransitionTime when the status changes', () => {
    const before = setCondition([], available, 1, t0);
    const after = setCondition(
      before,
      { ...available, status: 'Unknown', reason: 'ManagedClusterLeaseUpdateStopped', message: 'no lease' },
      1,
      t1,
    );
    expect(findCondition(after, available.type)).toMatchObject({
      status: 'Unknown',
      reason: 'ManagedClusterLeaseUpdateStopped',
      lastTransitionTime: '2025-03-01T10:05:00Z',
    });
  });

  it('returns a new array, keeps the order and the input untouched', () => {
    const before = setCondition(setCondition([], joined, 1, t0), available, 1, t0);
    const snapshot = structuredClone(before);
    const after = setCondition(
      before,
      { ...joined, status: 'False', reason: 'Denied', message: 'denied' },
      2,
      t1,
    );
    expect(before).toEqual(snapshot);
    expect(after).not.toBe(before);
    expect(after.map((c) => c.type)).toEqual([joined.type, available.type]);
    expect(after[1]).toBe(before[1]);
  });

  it('keeps the recorded observedGeneration when none is given', () => {
    const before = setCondition([], joined, 7, t0);
    const after = setCondition(before, { ...joined, message: 'still joined' }, undefined, t1);
    expect(after[0]?.observedGeneration).toBe(7);
  });
});

describe('condition queries', () => {
  const conditions: Condition[] = setCondition(
    setCondition([], joined, 1, t0),
    { ...available, status: 'False', reason: 'Down', message: 'down' },
    1,
    t0,
  );

  it('finds by type and tells whether it is True', () => {
    expect(findCondition(conditions, joined.type)?.reason).toBe('Joined');
    expect(findCondition(conditions, 'Nope')).toBeUndefined();
    expect(isConditionTrue(conditions, joined.type)).toBe(true);
    expect(isConditionTrue(conditions, available.type)).toBe(false);
    expect(isConditionTrue(undefined, joined.type)).toBe(false);
  });

  it('removes by type', () => {
    expect(removeCondition(conditions, joined.type).map((c) => c.type)).toEqual([available.type]);
  });

  it('compares ignoring transition times and order, but not reason, message or generation', () => {
    const later = [...setCondition(conditions, { ...joined }, 1, t1)].reverse();
    expect(conditionsEqualIgnoringTime(conditions, later)).toBe(true);
    const flipped = setCondition(conditions, { ...joined, status: 'False' }, 1, t1);
    expect(conditionsEqualIgnoringTime(conditions, flipped)).toBe(false);
    expect(
      conditionsEqualIgnoringTime(conditions, setCondition(conditions, { ...joined, message: 'x' }, 1, t0)),
    ).toBe(false);
    expect(conditionsEqualIgnoringTime(conditions, setCondition(conditions, joined, 2, t0))).toBe(false);
    expect(conditionsEqualIgnoringTime(conditions, conditions.slice(1))).toBe(false);
    expect(conditionsEqualIgnoringTime(undefined, [])).toBe(true);
  });

  it('formats metav1.Time without fractions', () => {
    expect(formatTime(new Date('2025-01-02T03:04:05.999Z'))).toBe('2025-01-02T03:04:05Z');
  });
});
