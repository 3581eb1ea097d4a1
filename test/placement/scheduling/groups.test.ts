import { describe, expect, it } from 'vitest';
import { decisionGroups, groupLength, layoutDecisions } from '../../../src/placement/scheduling/groups.ts';
import { schedule } from '../../../src/placement/scheduling/schedule.ts';
import { cluster, inputs, placement } from './fixtures.ts';

const many = (n: number, labels: (i: number) => Record<string, string> = () => ({})) =>
  Array.from({ length: n }, (_, i) => cluster(`c${String(i).padStart(3, '0')}`, { labels: labels(i) }));

describe('decision groups', () => {
  it('clustersPerDecisionGroup: a count, a percentage rounded up, default all', () => {
    expect(groupLength(undefined, 10)).toBe(10);
    expect(groupLength(3, 10)).toBe(3);
    expect(groupLength('25%', 10)).toBe(3);
    expect(groupLength(0, 10)).toBe(10);
    expect(groupLength(20, 10)).toBe(10);
    expect(() => groupLength('3', 10)).toThrow('3 invalid type: string is not a percentage');
  });

  it('named groups take their clusters first, the rest form the "" group, each cut by length and name', () => {
    const clusters = many(7, (i): Record<string, string> => (i < 3 ? { canary: 'true' } : {}));
    const groups = decisionGroups(
      {
        decisionGroups: [
          {
            groupName: 'canary',
            groupClusterSelector: { labelSelector: { matchLabels: { canary: 'true' } } },
          },
        ],
        clustersPerDecisionGroup: 2,
      },
      clusters,
    );
    expect(groups).toEqual([
      { name: 'canary', clusters: ['c000', 'c001'] },
      { name: 'canary', clusters: ['c002'] },
      { name: '', clusters: ['c003', 'c004'] },
      { name: '', clusters: ['c005', 'c006'] },
    ]);
  });

  it('PlacementDecisions hold at most 100 decisions, are named -decision-N and labelled with the group', () => {
    const layout = layoutDecisions('p1', [
      { name: 'g', clusters: many(150).map((c) => c.metadata.name as string) },
      { name: '', clusters: ['x'] },
    ]);
    expect(layout.objects.map((o) => [o.name, o.decisions.length, o.labels])).toEqual([
      [
        'p1-decision-1',
        100,
        {
          'cluster.open-cluster-management.io/placement': 'p1',
          'cluster.open-cluster-management.io/decision-group-name': 'g',
          'cluster.open-cluster-management.io/decision-group-index': '0',
        },
      ],
      [
        'p1-decision-2',
        50,
        {
          'cluster.open-cluster-management.io/placement': 'p1',
          'cluster.open-cluster-management.io/decision-group-name': 'g',
          'cluster.open-cluster-management.io/decision-group-index': '0',
        },
      ],
      [
        'p1-decision-3',
        1,
        {
          'cluster.open-cluster-management.io/placement': 'p1',
          'cluster.open-cluster-management.io/decision-group-name': '',
          'cluster.open-cluster-management.io/decision-group-index': '1',
        },
      ],
    ]);
    expect(layout.groups).toEqual([
      {
        decisionGroupIndex: 0,
        decisionGroupName: 'g',
        decisions: ['p1-decision-1', 'p1-decision-2'],
        clusterCount: 150,
      },
      { decisionGroupIndex: 1, decisionGroupName: '', decisions: ['p1-decision-3'], clusterCount: 1 },
    ]);
    expect(layout.objects[0]?.decisions[0]).toEqual({ clusterName: 'c000', reason: '' });
  });

  it('no selected cluster still lays out one empty decision', () => {
    const result = schedule(placement({}), inputs([]));
    expect(result.layout.objects).toEqual([
      {
        name: 'p1-decision-1',
        labels: {
          'cluster.open-cluster-management.io/placement': 'p1',
          'cluster.open-cluster-management.io/decision-group-name': '',
          'cluster.open-cluster-management.io/decision-group-index': '0',
        },
        decisions: [],
      },
    ]);
  });

  it('a bad clustersPerDecisionGroup misconfigures the placement', () => {
    const result = schedule(
      placement({ decisionStrategy: { groupStrategy: { clustersPerDecisionGroup: 'ten' } } }),
      inputs([cluster('a')]),
    );
    expect(result.conditions[0]).toMatchObject({ status: 'True', reason: 'Misconfigured' });
  });
});
