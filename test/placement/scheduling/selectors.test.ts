import { describe, expect, it } from 'vitest';
import { celClusterMatcher, compareVersions } from '../../../src/placement/scheduling/cel.ts';
import { eligibleClusters } from '../../../src/placement/scheduling/cluster-sets.ts';
import {
  clusterSetMatcher,
  labelAndClaimMatcher,
  labelSelectorMatcher,
  SelectorError,
} from '../../../src/placement/scheduling/selectors.ts';
import { cluster } from './fixtures.ts';

describe('label selectors', () => {
  it('ANDs matchLabels and every operator, and an empty selector matches everything', () => {
    const m = labelSelectorMatcher({
      matchLabels: { env: 'prod' },
      matchExpressions: [
        { key: 'zone', operator: 'In', values: ['a', 'b'] },
        { key: 'tier', operator: 'NotIn', values: ['gold'] },
        { key: 'gpu', operator: 'Exists' },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    });
    expect(m({ env: 'prod', zone: 'a', gpu: '' })).toBe(true);
    expect(m({ env: 'prod', zone: 'c', gpu: '' })).toBe(false);
    expect(m({ env: 'prod', zone: 'a', gpu: '', tier: 'gold' })).toBe(false);
    expect(m({ env: 'prod', zone: 'a' })).toBe(false);
    expect(m({ env: 'prod', zone: 'a', gpu: '', legacy: 'x' })).toBe(false);
    expect(m({ env: 'dev', zone: 'a', gpu: '' })).toBe(false);
    expect(labelSelectorMatcher({})({ any: 'thing' })).toBe(true);
  });

  it('rejects selectors apimachinery rejects', () => {
    expect(() =>
      labelSelectorMatcher({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }),
    ).toThrow(SelectorError);
    expect(() =>
      labelSelectorMatcher({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }),
    ).toThrow(SelectorError);
    expect(() =>
      labelSelectorMatcher({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }),
    ).toThrow(SelectorError);
  });

  it('claim selectors read status.clusterClaims', () => {
    const m = labelAndClaimMatcher(undefined, {
      matchExpressions: [{ key: 'platform.open-cluster-management.io', operator: 'In', values: ['AWS'] }],
    });
    expect(m(cluster('a', { claims: { 'platform.open-cluster-management.io': 'AWS' } }))).toBe(true);
    expect(m(cluster('b', { claims: { 'platform.open-cluster-management.io': 'GCP' } }))).toBe(false);
    expect(m(cluster('c', { labels: { 'platform.open-cluster-management.io': 'AWS' } }))).toBe(false);
  });
});

describe('cluster sets', () => {
  const a = cluster('a', { labels: { 'cluster.open-cluster-management.io/clusterset': 'prod', env: 'x' } });
  const b = cluster('b', { labels: { 'cluster.open-cluster-management.io/clusterset': 'dev' } });
  const c = cluster('c', { labels: { env: 'x' } });

  it('an exclusive set holds the clusters labelled with its name; a LabelSelector set its selector', () => {
    expect(clusterSetMatcher({ metadata: { name: 'prod' } })(a)).toBe(true);
    expect(clusterSetMatcher({ metadata: { name: 'prod' } })(b)).toBe(false);
    const bySelector = clusterSetMatcher({
      metadata: { name: 'x' },
      spec: {
        clusterSelector: { selectorType: 'LabelSelector', labelSelector: { matchLabels: { env: 'x' } } },
      },
    });
    expect([a, b, c].map(bySelector)).toEqual([true, false, true]);
    const global = clusterSetMatcher({
      metadata: { name: 'global' },
      spec: { clusterSelector: { selectorType: 'LabelSelector', labelSelector: {} } },
    });
    expect([a, b, c].map(global)).toEqual([true, true, true]);
  });

  it('a placement sees the bound sets whose set exists, narrowed by spec.clusterSets, without deleting clusters', () => {
    const sets = new Map([
      ['prod', { metadata: { name: 'prod' } }],
      ['dev', { metadata: { name: 'dev' } }],
    ]);
    const deleting = cluster('d', { labels: { 'cluster.open-cluster-management.io/clusterset': 'prod' } });
    deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    const bindings = [
      { metadata: { name: 'prod' } },
      { metadata: { name: 'dev' } },
      { metadata: { name: 'gone' } },
    ];
    const all = eligibleClusters(undefined, bindings, sets, [a, b, c, deleting]);
    expect(all.validBindings).toBe(2);
    expect(all.clusterSets).toEqual(['dev', 'prod']);
    expect(all.clusters.map((x) => x.metadata.name)).toEqual(['a', 'b']);
    const onlyProd = eligibleClusters(['prod', 'other'], bindings, sets, [a, b, c]);
    expect(onlyProd.clusters.map((x) => x.metadata.name)).toEqual(['a']);
    expect(eligibleClusters(['other'], bindings, sets, [a]).clusterSets).toEqual([]);
    expect(eligibleClusters(undefined, [], sets, [a]).validBindings).toBe(0);
  });
});

describe('CEL selector', () => {
  it('evaluates managedCluster fields and OCM library functions; all expressions must hold', () => {
    const m = celClusterMatcher(
      [
        'managedCluster.status.version.kubernetes.versionIsGreaterThan("v1.29.0")',
        'managedCluster.scores("res").exists(s, s.name == "cpu" && s.value > 50)',
        '"2Gi".quantityIsGreaterThan("1000Mi")',
      ],
      (name, resource) => (name === 'a' && resource === 'res' ? [{ name: 'cpu', value: 60 }] : undefined),
    );
    expect(m(cluster('a', { kubernetes: 'v1.30.1' }))).toBe(true);
    expect(m(cluster('b', { kubernetes: 'v1.30.1' }))).toBe(false);
    expect(m(cluster('a', { kubernetes: 'v1.28.0' }))).toBe(false);
  });

  it('a cluster whose evaluation fails is left out; an expression that does not compile is a SelectorError', () => {
    const m = celClusterMatcher(['managedCluster.metadata.labels["missing"] == "x"'], () => undefined);
    expect(m(cluster('a'))).toBe(false);
    expect(() => celClusterMatcher(['managedCluster.(('], () => undefined)).toThrow(SelectorError);
  });

  it('compares semantic versions with and without v', () => {
    expect(compareVersions('1.25.0', 'v1.24.9')).toBe(1);
    expect(compareVersions('v1.2.3', '1.2.3')).toBe(0);
    expect(compareVersions('1.2.3-alpha', '1.2.3')).toBe(-1);
    expect(() => compareVersions('1.2', '1.2.3')).toThrow();
  });
});
