import { describe, expect, it } from 'vitest';
import { schedule } from '../../../src/placement/scheduling/schedule.ts';
import { clusterTolerated } from '../../../src/placement/scheduling/taints.ts';
import { cluster, inputs, names, placement } from './fixtures.ts';

const now = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe('predicates', () => {
  it('a cluster passes when it matches any predicate; numberOfClusters takes the best ones by name', () => {
    const clusters = [
      cluster('c', { labels: { env: 'prod' } }),
      cluster('a', { labels: { env: 'prod' } }),
      cluster('b', { claims: { region: 'eu' } }),
      cluster('d', { labels: { env: 'dev' } }),
    ];
    const result = schedule(
      placement({
        numberOfClusters: 2,
        predicates: [
          { requiredClusterSelector: { labelSelector: { matchLabels: { env: 'prod' } } } },
          {
            requiredClusterSelector: {
              claimSelector: { matchExpressions: [{ key: 'region', operator: 'In', values: ['eu'] }] },
            },
          },
        ],
      }),
      inputs(clusters),
    );
    expect(names(result.selected)).toEqual(['a', 'b']);
    expect(result.conditions[1]).toMatchObject({ status: 'True', reason: 'AllDecisionsScheduled' });
  });

  it('reports too few clusters, no match, and misconfigured selectors as OCM does', () => {
    const few = schedule(placement({ numberOfClusters: 3 }), inputs([cluster('a')]));
    expect(few.unscheduled).toBe(2);
    expect(few.conditions[1]).toMatchObject({
      status: 'False',
      reason: 'NotAllDecisionsScheduled',
      message: '2 cluster decisions unscheduled',
    });
    const none = schedule(
      placement({
        predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { env: 'x' } } } }],
      }),
      inputs([cluster('a')]),
    );
    expect(none.conditions[1]).toMatchObject({ status: 'False', reason: 'NoManagedClusterMatched' });
    const bad = schedule(
      placement({ predicates: [{ requiredClusterSelector: { celSelector: { celExpressions: ['(('] } } }] }),
      inputs([cluster('a')]),
    );
    expect(bad.selected).toEqual([]);
    expect(bad.conditions[0]).toMatchObject({
      type: 'PlacementMisconfigured',
      status: 'True',
      reason: 'Misconfigured',
    });
    expect(bad.conditions[0]?.message).toMatch(/^Predicate:compilation failed/);
    const fine = schedule(placement(), inputs([cluster('a')]));
    expect(fine.conditions[0]).toMatchObject({ status: 'False', reason: 'Succeedconfigured' });
  });

  it('says why nothing is eligible: no binding, no intersection, empty sets', () => {
    const p = placement({ clusterSets: ['x', 'y'] });
    const noBinding = schedule(p, {
      ...inputs([]),
      eligible: { validBindings: 0, clusterSets: [], clusters: [] },
    });
    expect(noBinding.conditions[1]?.reason).toBe('NoManagedClusterSetBindings');
    const noIntersection = schedule(p, {
      ...inputs([]),
      eligible: { validBindings: 1, clusterSets: [], clusters: [] },
    });
    expect(noIntersection.conditions[1]).toMatchObject({
      reason: 'NoIntersection',
      message: 'None of ManagedClusterSets [x,y] is bound to placement namespace',
    });
    const empty = schedule(p, {
      ...inputs([]),
      eligible: { validBindings: 1, clusterSets: ['x'], clusters: [] },
    });
    expect(empty.conditions[1]?.reason).toBe('AllManagedClusterSetsEmpty');
  });
});

describe('fields tether does not act on', () => {
  it('spread constraints and sortBy Score misconfigure the placement instead of being ignored', () => {
    const spread = schedule(
      placement({ spreadPolicy: { spreadConstraints: [{ topologyKey: 'zone', topologyKeyType: 'Label' }] } }),
      inputs([cluster('a')]),
    );
    expect(spread.selected).toEqual([]);
    expect(spread.conditions[0]).toMatchObject({ status: 'True', reason: 'Misconfigured' });
    expect(spread.conditions[0]?.message).toMatch(
      /^SpreadPolicy:spreadPolicy.spreadConstraints is not supported/,
    );
    const byScore = schedule(placement({ sortBy: 'Score' }), inputs([cluster('a')]));
    expect(byScore.conditions[0]?.message).toMatch(/^SortBy:sortBy Score is not supported/);
    // the CRD's defaults pass
    const defaults = schedule(
      placement({ sortBy: 'ClusterName', scoreRateLimit: '1m', spreadPolicy: {} }),
      inputs([cluster('a')]),
    );
    expect(defaults.conditions[0]).toMatchObject({ status: 'False', reason: 'Succeedconfigured' });
    expect(names(defaults.selected)).toEqual(['a']);
  });
});

describe('acceptance', () => {
  const unaccepted = (name: string, accepted?: boolean) => {
    const c = cluster(name, {
      taints: [{ key: 'cluster.open-cluster-management.io/unreachable', effect: 'NoSelect' }],
    });
    return { ...c, spec: { ...c.spec, hubAcceptsClient: accepted } };
  };

  it('a Placement tolerating every taint never decides a cluster the hub has not accepted', () => {
    const tolerateAll = placement({ tolerations: [{ operator: 'Exists' }] });
    const result = schedule(
      tolerateAll,
      inputs([cluster('accepted'), unaccepted('pending', false), unaccepted('unset')]),
    );
    expect(names(result.selected)).toEqual(['accepted']);
    const none = schedule(tolerateAll, inputs([unaccepted('pending', false)]));
    expect(none.selected).toEqual([]);
    expect(none.conditions[1]).toMatchObject({ status: 'False', reason: 'NoManagedClusterMatched' });
  });

  it('a cluster in the decisions that loses acceptance leaves them', () => {
    const result = schedule(placement({ tolerations: [{ operator: 'Exists' }] }), {
      ...inputs([cluster('a'), unaccepted('b', false)]),
      ownDecisions: new Set(['a', 'b']),
    });
    expect(names(result.selected)).toEqual(['a']);
  });
});

describe('taints and tolerations', () => {
  const taint = (
    key: string,
    effect: 'NoSelect' | 'PreferNoSelect' | 'NoSelectIfNew',
    addedMs = now,
    value?: string,
  ) => ({
    key,
    value,
    effect,
    timeAdded: iso(addedMs),
  });

  it('NoSelect excludes unless tolerated; PreferNoSelect never; NoSelectIfNew only new clusters', () => {
    const noSelect = cluster('a', { taints: [taint('gpu', 'NoSelect', now, 'true')] });
    expect(clusterTolerated(noSelect, [], false, now).tolerated).toBe(false);
    expect(
      clusterTolerated(noSelect, [{ key: 'gpu', operator: 'Equal', value: 'true' }], false, now).tolerated,
    ).toBe(true);
    expect(clusterTolerated(noSelect, [{ key: 'gpu', value: 'false' }], false, now).tolerated).toBe(false);
    expect(clusterTolerated(noSelect, [{ key: 'gpu', operator: 'Exists' }], false, now).tolerated).toBe(true);
    expect(clusterTolerated(noSelect, [{ operator: 'Exists' }], false, now).tolerated).toBe(true);
    expect(
      clusterTolerated(noSelect, [{ operator: 'Exists', effect: 'PreferNoSelect' }], false, now).tolerated,
    ).toBe(false);
    const prefer = cluster('b', { taints: [taint('x', 'PreferNoSelect')] });
    expect(clusterTolerated(prefer, [], false, now).tolerated).toBe(true);
    const ifNew = cluster('c', { taints: [taint('x', 'NoSelectIfNew')] });
    expect(clusterTolerated(ifNew, [], false, now).tolerated).toBe(false);
    expect(clusterTolerated(ifNew, [], true, now).tolerated).toBe(true);
  });

  it('tolerationSeconds holds from timeAdded and tells when it runs out', () => {
    const unreachable = cluster('a', {
      taints: [taint('cluster.open-cluster-management.io/unreachable', 'NoSelect', now - 10_000)],
    });
    const tolerations = [
      {
        key: 'cluster.open-cluster-management.io/unreachable',
        operator: 'Exists' as const,
        tolerationSeconds: 30,
      },
    ];
    expect(clusterTolerated(unreachable, tolerations, true, now)).toEqual({
      tolerated: true,
      expiresAt: now + 20_000,
    });
    expect(clusterTolerated(unreachable, tolerations, true, now + 20_000).tolerated).toBe(false);
    const result = schedule(placement({ tolerations }), inputs([unreachable, cluster('b')]));
    expect(names(result.selected)).toEqual(['a', 'b']);
    expect(result.requeueAt).toBe(now + 20_000);
    const later = schedule(placement({ tolerations }), {
      ...inputs([unreachable, cluster('b')]),
      now: now + 20_000,
    });
    expect(names(later.selected)).toEqual(['b']);
    expect(later.requeueAt).toBeUndefined();
  });

  it('invalid tolerations misconfigure the placement', () => {
    const result = schedule(placement({ tolerations: [{ value: 'x' }] }), inputs([cluster('a')]));
    expect(result.conditions[0]).toMatchObject({
      status: 'True',
      message: 'TaintToleration:If the key is empty, operator must be Exists.',
    });
  });
});
