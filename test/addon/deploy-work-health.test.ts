// Health from the deploy works, as OCM's addon framework reads it: the feedback rules the probes put
// in the work, ManifestApplied from the works' Applied, and Available for DeploymentAvailability and
// WorkField probes from the status feedback (no pods run on process-mode clusters, so this is where
// the probe evaluation is proven).
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  availableCondition,
  healthCheckMode,
  manifestAppliedCondition,
  probeManifestConfigs,
} from '../../src/addon/hub/deploy/work-health.ts';
import type { AddonHealthProber } from '../../src/addon/sdk/types.ts';
import type { ManifestCondition, ManifestWork } from '../../src/api/work.ts';

const deployment = (name: string, replicas?: number): KubernetesObject =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'addon-ns' },
    spec: replicas === undefined ? {} : { replicas },
  }) as KubernetesObject;

function work(opts: {
  applied?: 'True' | 'False';
  available?: 'True' | 'False';
  availableMessage?: string;
  manifests?: ManifestCondition[];
}): ManifestWork {
  const conditions = [];
  if (opts.applied)
    conditions.push({
      type: 'Applied',
      status: opts.applied,
      reason: 'x',
      message: '',
      lastTransitionTime: '',
    });
  if (opts.available)
    conditions.push({
      type: 'Available',
      status: opts.available,
      reason: 'x',
      message: opts.availableMessage ?? '',
      lastTransitionTime: '',
    });
  return {
    apiVersion: 'work.open-cluster-management.io/v1',
    kind: 'ManifestWork',
    metadata: { name: 'addon-a-deploy-0', namespace: 'c1' },
    spec: {},
    status: { conditions, resourceStatus: { manifests: opts.manifests ?? [] } },
  };
}

const feedback = (name: string, readyReplicas?: number): ManifestCondition => ({
  resourceMeta: {
    ordinal: 0,
    group: 'apps',
    resource: 'deployments',
    name,
    namespace: 'addon-ns',
    kind: 'Deployment',
    version: 'v1',
  },
  statusFeedback: {
    values:
      readyReplicas === undefined
        ? []
        : [{ name: 'ReadyReplicas', fieldValue: { type: 'Integer', integer: readyReplicas } }],
  },
  conditions: [],
});

const deploymentProbe: AddonHealthProber = { type: 'DeploymentAvailability' };

describe('probe feedback rules in the work', () => {
  it('DeploymentAvailability: WellKnownStatus on every Deployment not scaled to 0', () => {
    const configs = probeManifestConfigs(deploymentProbe, [
      deployment('a'),
      deployment('off', 0),
      deployment('b', 2),
    ]);
    expect(configs).toEqual([
      {
        resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'a', namespace: 'addon-ns' },
        feedbackRules: [{ type: 'WellKnownStatus' }],
      },
      {
        resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'b', namespace: 'addon-ns' },
        feedbackRules: [{ type: 'WellKnownStatus' }],
      },
    ]);
  });

  it('WorkField: the probes as given; Lease, Customized and None ask for nothing', () => {
    const rules = [{ type: 'JSONPaths' as const, jsonPaths: [{ name: 'phase', path: '.status.phase' }] }];
    const resource = { group: '', resource: 'pods', name: 'p', namespace: 'ns' };
    expect(
      probeManifestConfigs(
        { type: 'WorkField', probes: [{ resource, rules }], healthy: () => undefined },
        [],
      ),
    ).toEqual([{ resourceIdentifier: resource, feedbackRules: rules }]);
    for (const type of ['Lease', 'Customized', 'None'] as const)
      expect(probeManifestConfigs({ type }, [deployment('a')])).toEqual([]);
    expect(healthCheckMode(undefined)).toBe('Lease');
    expect(healthCheckMode(deploymentProbe)).toBe('Customized');
  });
});

describe('ManifestApplied', () => {
  it('True when every work is Applied, False when one is not, unset while one has not reported', () => {
    expect(manifestAppliedCondition([work({ applied: 'True' }), work({ applied: 'True' })])).toMatchObject({
      status: 'True',
      reason: 'AddonManifestApplied',
      message: 'manifests of addon are applied successfully',
    });
    expect(manifestAppliedCondition([work({ applied: 'True' }), work({ applied: 'False' })])).toMatchObject({
      status: 'False',
      reason: 'AddonManifestAppliedFailed',
    });
    expect(manifestAppliedCondition([work({})])).toBeUndefined();
    expect(manifestAppliedCondition([])).toMatchObject({ status: 'True' });
  });
});

describe('Available from probes', () => {
  const objects = [deployment('agent')];

  it('is not this controller’s for Lease, Customized and None', () => {
    for (const type of ['Lease', 'Customized', 'None'] as const)
      expect(availableCondition('a', { type }, [work({ available: 'True' })], objects)).toBeUndefined();
    expect(availableCondition('a', undefined, [], objects)).toBeUndefined();
  });

  it('Unknown WorkNotFound without works, WorkNotApplied before the work reports, False with the work’s message', () => {
    expect(availableCondition('a', deploymentProbe, [], objects)).toEqual({
      type: 'Available',
      status: 'Unknown',
      reason: 'WorkNotFound',
      message: 'Addon manifestWork is not found',
    });
    expect(availableCondition('a', deploymentProbe, [work({ applied: 'True' })], objects)).toMatchObject({
      status: 'Unknown',
      reason: 'WorkNotApplied',
    });
    expect(
      availableCondition(
        'a',
        deploymentProbe,
        [work({ available: 'False', availableMessage: 'gone' })],
        objects,
      ),
    ).toMatchObject({ status: 'False', reason: 'WorkNotApplied', message: 'gone' });
  });

  it('DeploymentAvailability: NoProbeResult without feedback, ProbeUnavailable at 0 ready, ProbeAvailable at ≥1', () => {
    const noFeedback = work({ available: 'True', manifests: [feedback('agent')] });
    expect(availableCondition('a', deploymentProbe, [noFeedback], objects)).toEqual({
      type: 'Available',
      status: 'Unknown',
      reason: 'NoProbeResult',
      message: 'Probe results are not returned',
    });
    const notReady = work({ available: 'True', manifests: [feedback('agent', 0)] });
    expect(availableCondition('a', deploymentProbe, [notReady], objects)).toEqual({
      type: 'Available',
      status: 'False',
      reason: 'ProbeUnavailable',
      message: 'Probe addon unavailable with err readyReplica is 0 for deployment addon-ns/agent',
    });
    const ready = work({ available: 'True', manifests: [feedback('agent', 1)] });
    expect(availableCondition('hello', deploymentProbe, [ready], objects)).toEqual({
      type: 'Available',
      status: 'True',
      reason: 'ProbeAvailable',
      message: 'hello add-on is available.',
    });
  });

  it('WorkField: the addon’s healthy() decides from the values of the matching (wildcard) resources', () => {
    const seen: unknown[] = [];
    const probe: AddonHealthProber = {
      type: 'WorkField',
      probes: [
        { resource: { group: 'apps', resource: 'deployments', name: 'agent-*', namespace: '*' }, rules: [] },
      ],
      healthy: (values) => {
        seen.push(values);
        const ready = values[0]?.values.find((v) => v.name === 'ReadyReplicas')?.fieldValue['integer'];
        return ready === 3 ? undefined : `want 3 ready, have ${String(ready)}`;
      },
    };
    const w = (n: number) =>
      work({ available: 'True', manifests: [feedback('agent-1', n), feedback('other', 9)] });
    expect(availableCondition('a', probe, [w(3)], [])).toMatchObject({
      status: 'True',
      reason: 'ProbeAvailable',
    });
    expect(availableCondition('a', probe, [w(1)], [])).toMatchObject({
      status: 'False',
      reason: 'ProbeUnavailable',
      message: 'Probe addon unavailable with err want 3 ready, have 1',
    });
    expect(seen[0]).toEqual([
      {
        resource: { group: 'apps', resource: 'deployments', name: 'agent-1', namespace: 'addon-ns' },
        values: [{ name: 'ReadyReplicas', fieldValue: { type: 'Integer', integer: 3 } }],
      },
    ]);
    const throwing: AddonHealthProber = {
      ...probe,
      healthy: () => {
        throw new Error('boom');
      },
    } as AddonHealthProber;
    expect(availableCondition('a', throwing, [w(3)], [])).toMatchObject({
      status: 'False',
      message: 'Probe addon unavailable with err boom',
    });
  });
});
