import { describe, expect, it } from 'vitest';
import type { PlacementDecision } from '../../../src/api/index.ts';
import { DecisionCounts } from '../../../src/placement/hub/placement-decision-counts.ts';

const decision = (...clusters: string[]): PlacementDecision =>
  ({
    metadata: { name: 'd', namespace: 'ns' },
    status: { decisions: clusters.map((clusterName) => ({ clusterName, reason: '' })) },
  }) as PlacementDecision;

/** What the scheduler counted before: every decision in `all` not keyed in `own`. */
function recount(all: Map<string, PlacementDecision>, own: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [key, d] of all) {
    if (own.includes(key)) continue;
    for (const c of d.status?.decisions ?? [])
      counts.set(c.clusterName, (counts.get(c.clusterName) ?? 0) + 1);
  }
  return counts;
}

describe('decision counts kept from informer events', () => {
  it('count every decision but the placement’s own, through updates and deletes', () => {
    const counts = new DecisionCounts();
    const all = new Map<string, PlacementDecision>();
    const set = (key: string, d: PlacementDecision | undefined) => {
      counts.set(key, d);
      if (d) all.set(key, d);
      else all.delete(key);
    };
    set('a/p-decision-1', decision('c1', 'c2'));
    set('a/q-decision-1', decision('c2', 'c3'));
    set('b/p-decision-1', decision('c2'));
    expect(counts.others(['a/p-decision-1'])).toEqual(
      new Map([
        ['c2', 2],
        ['c3', 1],
      ]),
    );
    expect(counts.others([])).toEqual(recount(all, []));

    set('a/q-decision-1', decision('c1'));
    set('b/p-decision-1', undefined);
    // a delete whose event object differs from what was counted still removes what was counted
    counts.set('b/p-decision-1', undefined);
    for (const own of [[], ['a/p-decision-1'], ['a/q-decision-1', 'x/unknown']]) {
      expect(counts.others(own)).toEqual(recount(all, own));
    }
    expect(counts.others(['a/p-decision-1', 'a/q-decision-1'])).toEqual(new Map());
  });
});
