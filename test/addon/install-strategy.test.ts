// A ClusterManagementAddOn's install strategy and config rollout as OCM's addon-manager runs them:
// which ManagedClusterAddOns to create and delete (never one a user made), which placement a
// cluster falls under, the rollout status of an add-on, and a Progressive rollout configuring one
// add-on at a time with OCM's install progression wording.
import { describe, expect, it } from 'vitest';
import type { ResolvedSelection } from '../../src/addon/hub/config/references.ts';
import {
  adoptionOwnerRef,
  controllerOwnerRef,
  installPlan,
  managedByAddonManager,
  nodeOfCluster,
  placementNodes,
} from '../../src/addon/hub/install-strategy/index.ts';
import {
  addonRolloutStatus,
  placementSelections,
  progressionCondition,
  rolloutPlacement,
  verdicts,
} from '../../src/addon/hub/install-strategy/progression.ts';
import type { ClusterManagementAddOn, ManagedClusterAddOn } from '../../src/api/addon.ts';
import { type Placement, type PlacementDecision, placementLabel } from '../../src/api/placement.ts';

const group = 'addon.open-cluster-management.io';
const adc = 'addondeploymentconfigs';

function cma(
  placements?: Record<string, unknown>[],
  annotations?: Record<string, string>,
): ClusterManagementAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ClusterManagementAddOn',
    metadata: { name: 'hello', uid: 'cma-uid', ...(annotations ? { annotations } : {}) },
    spec: { installStrategy: placements ? { type: 'Placements', placements } : { type: 'Manual' } },
  };
}

function mca(cluster: string, extra: Partial<ManagedClusterAddOn> = {}): ManagedClusterAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ManagedClusterAddOn',
    metadata: { name: 'hello', namespace: cluster, ...(extra.metadata ?? {}) },
    spec: {},
    ...(extra.status ? { status: extra.status } : {}),
  };
}

function placement(name: string, spec: Placement['spec'] = {}): Placement {
  return {
    apiVersion: 'cluster.open-cluster-management.io/v1beta1',
    kind: 'Placement',
    metadata: { name, namespace: 'ns' },
    spec,
  };
}

function decision(p: string, clusters: string[]): PlacementDecision {
  return {
    apiVersion: 'cluster.open-cluster-management.io/v1beta1',
    kind: 'PlacementDecision',
    metadata: { name: `${p}-decision-1`, namespace: 'ns', labels: { [placementLabel]: p } },
    status: { decisions: clusters.map((clusterName) => ({ clusterName, reason: '' })) },
  };
}

const lookup =
  (...ps: Placement[]) =>
  (ns: string, n: string) =>
    ps.find((p) => p.metadata.namespace === ns && p.metadata.name === n);

describe('install plan', () => {
  const addon = cma([{ name: 'a', namespace: 'ns' }]);
  const nodes = placementNodes(addon, lookup(placement('a')), [decision('a', ['c1', 'c2'])]);

  it('creates an add-on in every decided cluster that has none', () => {
    expect(installPlan(addon, nodes, [mca('c2')]).create).toEqual(['c1']);
  });

  it('deletes only the add-ons it created of clusters no placement decides', () => {
    const created = mca('gone', { metadata: { ownerReferences: [controllerOwnerRef(addon)] } });
    const adopted = mca('mine', { metadata: { ownerReferences: [adoptionOwnerRef(addon)] } });
    const handMade = mca('hand');
    const plan = installPlan(addon, nodes, [created, adopted, handMade, mca('c1'), mca('c2')]);
    expect(plan.delete).toEqual([created]);
  });

  it('Manual creates and deletes nothing', () => {
    const manual = cma();
    const created = mca('gone', { metadata: { ownerReferences: [controllerOwnerRef(manual)] } });
    expect(installPlan(manual, placementNodes(manual, lookup(), []), [created])).toEqual({
      create: [],
      delete: [],
    });
  });

  it('a missing Placement decides nothing; lifecycle self is left alone', () => {
    expect(placementNodes(addon, lookup(), [decision('a', ['c1'])])[0]?.clusters.size).toBe(0);
    expect(managedByAddonManager(cma([], { 'addon.open-cluster-management.io/lifecycle': 'self' }))).toBe(
      false,
    );
    expect(managedByAddonManager(cma([]))).toBe(true);
  });

  it('a cluster falls under the last placement deciding it', () => {
    const two = cma([
      { name: 'a', namespace: 'ns' },
      { name: 'b', namespace: 'ns' },
    ]);
    const n = placementNodes(two, lookup(placement('a'), placement('b')), [
      decision('a', ['c1', 'c2']),
      decision('b', ['c2']),
    ]);
    expect(nodeOfCluster(n, 'c1')?.name).toBe('a');
    expect(nodeOfCluster(n, 'c2')?.name).toBe('b');
    expect(nodeOfCluster(n, 'c3')).toBeUndefined();
  });
});

describe('placement configs', () => {
  it('a placement config of a kind the add-on does not support is left out', () => {
    const addon: ClusterManagementAddOn = {
      ...cma([
        {
          name: 'a',
          namespace: 'ns',
          configs: [
            { group, resource: adc, name: 'canary', namespace: 'hub' },
            { group: 'other.io', resource: 'things', name: 't' },
          ],
        },
      ]),
    };
    addon.spec.supportedConfigs = [{ group, resource: adc }];
    const [node] = placementNodes(addon, lookup(placement('a')), []);
    if (!node) throw new Error('no node');
    expect(placementSelections(addon, node)).toEqual([
      { group, resource: adc, referent: { name: 'canary', namespace: 'hub' } },
    ]);
  });
});

describe('config rollout', () => {
  const want: ResolvedSelection[] = [
    { group, resource: adc, referent: { name: 'c', namespace: 'hub' }, specHash: 'h2' },
  ];
  const ref = (desired: string, applied?: string) => ({
    group,
    resource: adc,
    name: 'c',
    namespace: 'hub',
    desiredConfig: { name: 'c', namespace: 'hub', specHash: desired },
    ...(applied ? { lastAppliedConfig: { name: 'c', namespace: 'hub', specHash: applied } } : {}),
  });

  it('an add-on is ToApply, Progressing, then Succeeded', () => {
    expect(addonRolloutStatus(mca('c1'), want).status).toBe('ToApply');
    expect(
      addonRolloutStatus(mca('c1', { status: { configReferences: [ref('h1', 'h1')] } }), want).status,
    ).toBe('ToApply');
    expect(
      addonRolloutStatus(mca('c1', { status: { configReferences: [ref('h2', 'h1')] } }), want).status,
    ).toBe('Progressing');
    expect(
      addonRolloutStatus(mca('c1', { status: { configReferences: [ref('h2', 'h2')] } }), want).status,
    ).toBe('Succeeded');
  });

  it('Progressive with maxConcurrency 1 configures one add-on, the others wait', () => {
    const addon = cma([
      {
        name: 'a',
        namespace: 'ns',
        rolloutStrategy: { type: 'Progressive', progressive: { maxConcurrency: 1 } },
      },
    ]);
    const [node] = placementNodes(addon, lookup(placement('a')), [decision('a', ['c1', 'c2', 'c3'])]);
    if (!node) throw new Error('no node');
    const addons = ['c1', 'c2', 'c3'].map((c) => {
      const m = mca(c);
      return { mca: m, desired: want, status: addonRolloutStatus(m, want) };
    });
    const rollout = rolloutPlacement(node, want, addons);
    expect(Object.fromEntries(verdicts(addons, rollout.toRollout))).toEqual({
      c1: 'configure',
      c2: 'wait',
      c3: 'wait',
    });
    expect(progressionCondition(rollout, 3)).toEqual({
      completed: false,
      condition: {
        type: 'Progressing',
        status: 'True',
        reason: 'Progressing',
        message: '1/3 progressing..., 0 failed 0 timeout.',
      },
    });
  });

  it('every decided cluster succeeded: the progression is Completed', () => {
    const addon = cma([{ name: 'a', namespace: 'ns' }]);
    const [node] = placementNodes(addon, lookup(placement('a')), [decision('a', ['c1', 'c2'])]);
    if (!node) throw new Error('no node');
    const addons = ['c1', 'c2'].map((c) => {
      const m = mca(c, { status: { configReferences: [ref('h2', 'h2')] } });
      return { mca: m, desired: want, status: addonRolloutStatus(m, want) };
    });
    const rollout = rolloutPlacement(node, want, addons);
    expect(Object.fromEntries(verdicts(addons, rollout.toRollout))).toEqual({
      c1: 'configured',
      c2: 'configured',
    });
    expect(progressionCondition(rollout, 2).condition).toEqual({
      type: 'Progressing',
      status: 'False',
      reason: 'Completed',
      message: '2/2 completed with no errors, 0 failed 0 timeout.',
    });
  });
});
