import { describe, expect, it } from 'vitest';
import {
  allocatableScores,
  balanceScores,
  PrioritizerConfigError,
  prioritizersOf,
} from '../../../src/placement/scheduling/prioritizers.ts';
import { schedule } from '../../../src/placement/scheduling/schedule.ts';
import { cluster, inputs, names, placement } from './fixtures.ts';

const now = Date.parse('2026-01-01T00:00:00Z');

describe('prioritizer policy', () => {
  it('Additive starts from Balance and Steady at weight 1; Exact uses only the configurations; 0 turns off', () => {
    expect(prioritizersOf(undefined).map((p) => [p.name, p.weight])).toEqual([
      ['Balance', 1],
      ['Steady', 1],
    ]);
    const additive = prioritizersOf({
      configurations: [
        { scoreCoordinate: { type: 'BuiltIn', builtIn: 'Steady' }, weight: 0 },
        { scoreCoordinate: { type: 'BuiltIn', builtIn: 'ResourceAllocatableCPU' }, weight: 2 },
      ],
    });
    expect(additive.map((p) => [p.name, p.weight])).toEqual([
      ['Balance', 1],
      ['ResourceAllocatableCPU', 2],
    ]);
    const exact = prioritizersOf({
      mode: 'Exact',
      configurations: [{ scoreCoordinate: { type: 'AddOn', addOn: { resourceName: 'r', scoreName: 's' } } }],
    });
    expect(exact.map((p) => [p.name, p.weight])).toEqual([['AddOn/r/s', 1]]);
    expect(() => prioritizersOf({ mode: 'Other' })).toThrow(PrioritizerConfigError);
    expect(() =>
      prioritizersOf({ configurations: [{ scoreCoordinate: { type: 'BuiltIn', builtIn: 'Nope' } }] }),
    ).toThrow('incorrect builtin prioritizer: Nope');
  });
});

describe('built-in scores', () => {
  it('Balance: 100 for unused clusters, scaled down to -100 for the most used', () => {
    const scores = balanceScores([cluster('a'), cluster('b'), cluster('c')], {
      ...inputs([]),
      otherDecisionCounts: new Map([
        ['a', 4],
        ['b', 1],
      ]),
    });
    expect(Object.fromEntries(scores)).toEqual({ a: -100, b: 50, c: 100 });
  });

  it('ResourceAllocatable: min -100 … max 100, clusters without the resource unscored, all equal 100', () => {
    const clusters = [
      cluster('a', { allocatable: { cpu: '2' }, capacity: { cpu: '4' } }),
      cluster('b', { allocatable: { cpu: '3' }, capacity: { cpu: '4' } }),
      cluster('c', { allocatable: { cpu: '6000m' }, capacity: { cpu: '8' } }),
      cluster('d', { allocatable: { cpu: '6' } }),
    ];
    expect(Object.fromEntries(allocatableScores(clusters, 'cpu'))).toEqual({ a: -100, b: -50, c: 100 });
    const memory = [cluster('a', { allocatable: { memory: '1Gi' }, capacity: { memory: '2Gi' } })];
    expect(Object.fromEntries(allocatableScores(memory, 'memory'))).toEqual({ a: 100 });
  });

  it('Steady keeps the current decisions when nothing else differs', () => {
    const clusters = [cluster('a'), cluster('b'), cluster('c')];
    const result = schedule(placement({ numberOfClusters: 1 }), {
      ...inputs(clusters),
      ownDecisions: new Set(['c']),
    });
    expect(names(result.selected)).toEqual(['c']);
    expect(Object.fromEntries(result.scores)).toEqual({ a: 100, b: 100, c: 200 });
  });
});

describe('AddOn scores', () => {
  const score = (value: number, validUntil?: string) => ({ scores: [{ name: 'cpu', value }], validUntil });
  const exact = placement({
    numberOfClusters: 2,
    prioritizerPolicy: {
      mode: 'Exact',
      configurations: [
        { scoreCoordinate: { type: 'AddOn', addOn: { resourceName: 'res', scoreName: 'cpu' } }, weight: 3 },
      ],
    },
  });

  it('Exact with an AddOn score picks the highest, weighted; missing scores count 0', () => {
    const table: Record<string, ReturnType<typeof score>> = { a: score(10), b: score(90), c: score(-50) };
    const result = schedule(exact, {
      ...inputs([cluster('a'), cluster('b'), cluster('c'), cluster('d')]),
      addOnScore: (c, r) => (r === 'res' ? table[c] : undefined),
    });
    expect(names(result.selected)).toEqual(['b', 'a']);
    expect(Object.fromEntries(result.scores)).toEqual({ a: 30, b: 270, c: -150, d: 0 });
  });

  it('an expired score counts 0 with a warning; a valid one asks for a requeue at validUntil', () => {
    const until = now + 60_000;
    const table: Record<string, ReturnType<typeof score>> = {
      a: score(90, new Date(now - 1000).toISOString()),
      b: score(10, new Date(until).toISOString()),
    };
    const result = schedule(exact, { ...inputs([cluster('a'), cluster('b')]), addOnScore: (c) => table[c] });
    expect(Object.fromEntries(result.scores)).toEqual({ a: 0, b: 30 });
    expect(result.status).toMatchObject({ code: 'Warning', plugin: 'AddOn/res/cpu' });
    expect(result.requeueAt).toBe(until);
  });

  it('Additive adds the AddOn score to Balance and Steady', () => {
    const result = schedule(
      placement({
        numberOfClusters: 1,
        prioritizerPolicy: {
          configurations: [
            { scoreCoordinate: { type: 'AddOn', addOn: { resourceName: 'res', scoreName: 'cpu' } } },
          ],
        },
      }),
      {
        ...inputs([cluster('a'), cluster('b')]),
        ownDecisions: new Set(['a']),
        addOnScore: (c) => (c === 'b' ? score(100) : score(0)),
      },
    );
    // a: balance 100 + steady 100 + 0; b: 100 + 0 + 100 → tie, name order
    expect(names(result.selected)).toEqual(['a']);
    expect(Object.fromEntries(result.scores)).toEqual({ a: 200, b: 200 });
  });
});
