// Which configs an add-on gets on a cluster and how they land in status.configReferences: OCM's
// spec hash (Go's JSON, so hashes match OCM's addon-manager), MCA configs over placement configs
// over the ClusterManagementAddOn's defaults, refused kinds, lastAppliedConfig kept.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  configSpecHash,
  defaultConfigs,
  mergeConfigReferences,
  overrideConfigs,
  type ResolvedSelection,
  sortedSelections,
  unsupportedKinds,
  withoutKinds,
} from '../../src/addon/hub/config/references.ts';
import type { ClusterManagementAddOn } from '../../src/api/addon.ts';

const group = 'addon.open-cluster-management.io';
const adc = 'addondeploymentconfigs';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function cma(
  supportedConfigs: NonNullable<ClusterManagementAddOn['spec']['supportedConfigs']>,
): ClusterManagementAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ClusterManagementAddOn',
    metadata: { name: 'helloworld' },
    spec: { supportedConfigs },
  };
}

describe('spec hash', () => {
  it('hashes everything but apiVersion, kind, metadata and status, as Go encodes it', () => {
    const obj = {
      apiVersion: `${group}/v1alpha1`,
      kind: 'AddOnDeploymentConfig',
      metadata: { name: 'c', namespace: 'ns', resourceVersion: '7', generation: 2 },
      spec: {
        customizedVariables: [{ value: 'a<b&c>', name: 'LOG' }],
        agentInstallNamespace: 'agents',
      },
      status: { anything: true },
    };
    // keys sorted at every level, <, & and > escaped as Go's encoding/json does
    const goText =
      '{"spec":{"agentInstallNamespace":"agents","customizedVariables":[{"name":"LOG","value":"a\\u003cb\\u0026c\\u003e"}]}}';
    expect(configSpecHash(obj)).toBe(sha256(goText));
    expect(configSpecHash({ ...obj, metadata: { name: 'other' }, status: {} })).toBe(sha256(goText));
  });

  it('changes with the spec', () => {
    const a = configSpecHash({ spec: { agentInstallNamespace: 'a' } });
    const b = configSpecHash({ spec: { agentInstallNamespace: 'b' } });
    expect(a).not.toBe(b);
  });
});

describe('desired configs', () => {
  const addon = cma([
    { group, resource: adc, defaultConfig: { name: 'default', namespace: 'hub' } },
    { group: 'example.io', resource: 'widgets', defaultConfig: { name: 'w' } },
    { group: 'example.io', resource: 'gadgets', defaultConfig: { name: '__reserved_no_default__' } },
  ]);

  it('the MCA overrides the placement, which overrides the defaults, per group/resource', () => {
    const placement = overrideConfigs(defaultConfigs(addon), [
      { group, resource: adc, name: 'canary', namespace: 'hub' },
    ]);
    const mca = overrideConfigs(placement, [{ group, resource: adc, name: 'mine', namespace: 'cluster1' }]);
    expect(sortedSelections(placement).map((s) => [s.resource, s.referent])).toEqual([
      [adc, { name: 'canary', namespace: 'hub' }],
      ['widgets', { name: 'w' }],
    ]);
    expect(sortedSelections(mca).map((s) => [s.resource, s.referent])).toEqual([
      [adc, { name: 'mine', namespace: 'cluster1' }],
      ['widgets', { name: 'w' }],
    ]);
  });

  it('the no-default sentinel is no default', () => {
    expect([...defaultConfigs(addon).keys()].sort()).toEqual([`${group}/${adc}`, 'example.io/widgets']);
  });

  it('a kind the add-on does not support is refused, not used', () => {
    const configs = [
      { group, resource: adc, name: 'mine', namespace: 'cluster1' },
      { group: 'other.io', resource: 'things', name: 't' },
    ];
    const refused = unsupportedKinds(addon, configs);
    expect(refused).toEqual([{ group: 'other.io', resource: 'things' }]);
    expect(withoutKinds(configs, refused)).toEqual([configs[0]]);
  });
});

describe('status.configReferences', () => {
  const selection = (name: string, specHash: string, generation?: number): ResolvedSelection => ({
    group,
    resource: adc,
    referent: { name, namespace: 'hub' },
    specHash,
    ...(generation !== undefined ? { generation } : {}),
  });

  it('writes desiredConfig and keeps the lastAppliedConfig the deploy controller wrote', () => {
    const existing = [
      {
        group,
        resource: adc,
        name: 'c',
        namespace: 'hub',
        desiredConfig: { name: 'c', namespace: 'hub', specHash: 'old' },
        lastAppliedConfig: { name: 'c', namespace: 'hub', specHash: 'old' },
        lastObservedGeneration: 1,
      },
    ];
    expect(mergeConfigReferences(existing, [selection('c', 'new', 2)])).toEqual([
      {
        group,
        resource: adc,
        name: 'c',
        namespace: 'hub',
        desiredConfig: { name: 'c', namespace: 'hub', specHash: 'new' },
        lastAppliedConfig: { name: 'c', namespace: 'hub', specHash: 'old' },
        lastObservedGeneration: 2,
      },
    ]);
  });

  it('a config no longer desired is dropped; a new one starts without lastAppliedConfig', () => {
    const existing = [
      {
        group,
        resource: adc,
        name: 'c',
        namespace: 'hub',
        desiredConfig: { name: 'c', namespace: 'hub', specHash: 'h' },
        lastAppliedConfig: { name: 'c', namespace: 'hub', specHash: 'h' },
      },
    ];
    expect(mergeConfigReferences(existing, [selection('d', '')])).toEqual([
      {
        group,
        resource: adc,
        name: 'd',
        namespace: 'hub',
        desiredConfig: { name: 'd', namespace: 'hub', specHash: '' },
      },
    ]);
  });
});
