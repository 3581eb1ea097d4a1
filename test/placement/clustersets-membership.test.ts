// Cluster-set membership and the conditions the hub writes from it, as OCM computes them: label sets
// hold the clusters labelled with their name, selector sets the clusters their selector matches
// (`global`'s empty selector: all), and the ClusterSetEmpty / Bound wording OCM's hub uses.
import { describe, expect, it } from 'vitest';
import { clusterSetLabel, type ManagedCluster, type ManagedClusterSet } from '../../src/api/index.ts';
import {
  bindingBoundCondition,
  clusterSetEmptyCondition,
  clusterSetMembers,
  globalClusterSetSpec,
  labelSelectorMatches,
  needsDefaultClusterSetLabel,
} from '../../src/placement/hub/clustersets-membership.ts';

const cluster = (name: string, labels: Record<string, string> = {}): ManagedCluster => ({
  apiVersion: 'cluster.open-cluster-management.io/v1',
  kind: 'ManagedCluster',
  metadata: { name, labels },
  spec: {},
});
const set = (name: string, spec?: ManagedClusterSet['spec']): ManagedClusterSet => ({
  apiVersion: 'cluster.open-cluster-management.io/v1beta2',
  kind: 'ManagedClusterSet',
  metadata: { name },
  ...(spec ? { spec } : {}),
});

const clusters = [
  cluster('a', { [clusterSetLabel]: 'prod', env: 'prod', zone: 'eu' }),
  cluster('b', { [clusterSetLabel]: 'dev', env: 'dev' }),
  cluster('c', { zone: 'us' }),
];

describe('cluster-set membership', () => {
  it('a label set (also without a spec) holds the clusters labelled with its name', () => {
    expect(clusterSetMembers(set('prod'), clusters)).toEqual(['a']);
    expect(
      clusterSetMembers(
        set('dev', { clusterSelector: { selectorType: 'ExclusiveClusterSetLabel' } }),
        clusters,
      ),
    ).toEqual(['b']);
  });

  it('a selector set holds what its selector matches; global holds every cluster', () => {
    const eu = set('eu', {
      clusterSelector: {
        selectorType: 'LabelSelector',
        labelSelector: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['eu', 'ap'] }] },
      },
    });
    expect(clusterSetMembers(eu, clusters)).toEqual(['a']);
    expect(clusterSetMembers(set('global', globalClusterSetSpec), clusters)).toEqual(['a', 'b', 'c']);
    expect(
      clusterSetMembers(set('none', { clusterSelector: { selectorType: 'LabelSelector' } }), clusters),
    ).toEqual([]);
  });

  it('label selectors follow metav1 rules', () => {
    const labels = { env: 'prod', zone: 'eu' };
    expect(labelSelectorMatches({ matchLabels: { env: 'prod' } }, labels)).toBe(true);
    expect(labelSelectorMatches({ matchLabels: { env: 'dev' } }, labels)).toBe(false);
    expect(
      labelSelectorMatches(
        { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] },
        labels,
      ),
    ).toBe(true);
    expect(labelSelectorMatches({ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, labels)).toBe(
      false,
    );
    expect(
      labelSelectorMatches({ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, labels),
    ).toBe(true);
    expect(labelSelectorMatches({ matchExpressions: [{ key: 'env', operator: 'Bogus' }] }, labels)).toBe(
      false,
    );
  });

  it('a cluster with no or an empty set label gets default', () => {
    expect(needsDefaultClusterSetLabel(cluster('x'))).toBe(true);
    expect(needsDefaultClusterSetLabel(cluster('x', { [clusterSetLabel]: '' }))).toBe(true);
    expect(needsDefaultClusterSetLabel(cluster('x', { [clusterSetLabel]: 'prod' }))).toBe(false);
  });
});

describe('conditions', () => {
  it('ClusterSetEmpty says how many clusters a set holds, in OCM’s words', () => {
    expect(clusterSetEmptyCondition(0)).toEqual({
      type: 'ClusterSetEmpty',
      status: 'True',
      reason: 'NoClusterMatched',
      message: 'No ManagedCluster selected',
    });
    expect(clusterSetEmptyCondition(3)).toEqual({
      type: 'ClusterSetEmpty',
      status: 'False',
      reason: 'ClustersSelected',
      message: '3 ManagedClusters selected',
    });
  });

  it('Bound is True only when the set exists', () => {
    expect(bindingBoundCondition('prod', true)).toMatchObject({ status: 'True', reason: 'ClusterSetBound' });
    expect(bindingBoundCondition('prod', false)).toMatchObject({
      status: 'False',
      reason: 'ClusterSetNotFound',
    });
  });
});
