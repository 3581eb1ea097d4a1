// Progressing and lastAppliedConfig, as OCM's addon-progressing controller decides them from the
// MCA's configReferences and its deploy works.
import { describe, expect, it } from 'vitest';
import { progressing, workConfigsMatch } from '../../src/addon/hub/deploy/progressing.ts';
import type { ConfigReference, ManagedClusterAddOn } from '../../src/api/addon.ts';
import type { Condition } from '../../src/api/conditions.ts';
import type { ManifestWork } from '../../src/api/work.ts';

const adc = { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' };
const manifestApplied: Condition[] = [
  {
    type: 'ManifestApplied',
    status: 'True',
    reason: 'AddonManifestApplied',
    message: '',
    lastTransitionTime: '',
  },
];

function mca(
  configReferences: ConfigReference[] = [],
  configs = [] as { resource: string; group?: string; name: string }[],
): ManagedClusterAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ManagedClusterAddOn',
    metadata: { name: 'a', namespace: 'c1' },
    spec: { configs },
    status: { configReferences },
  };
}

function ref(hash: string, lastApplied?: string): ConfigReference {
  return {
    ...adc,
    name: 'cfg',
    namespace: 'c1',
    desiredConfig: { name: 'cfg', namespace: 'c1', specHash: hash },
    ...(lastApplied ? { lastAppliedConfig: { name: 'cfg', namespace: 'c1', specHash: lastApplied } } : {}),
  };
}

function work(opts: { hash?: string; ready?: boolean; generation?: number } = {}): ManifestWork {
  const generation = opts.generation ?? 2;
  const cond = (type: string): Condition => ({
    type,
    status: opts.ready === false ? 'False' : 'True',
    reason: type,
    message: '',
    lastTransitionTime: '',
    observedGeneration: 2,
  });
  return {
    apiVersion: 'work.open-cluster-management.io/v1',
    kind: 'ManifestWork',
    metadata: {
      name: 'addon-a-deploy-0',
      namespace: 'c1',
      generation,
      ...(opts.hash
        ? {
            annotations: {
              'open-cluster-management.io/config-spec-hash': JSON.stringify({
                'addondeploymentconfigs.addon.open-cluster-management.io/c1/cfg': opts.hash,
              }),
            },
          }
        : {}),
    },
    spec: {},
    status: { conditions: [cond('Applied'), cond('Available')] },
  };
}

describe('Progressing', () => {
  it('without configs: Installing while the work is not ready at its generation, then InstallSucceed', () => {
    expect(progressing(mca(), manifestApplied, [adc], []).condition).toMatchObject({
      status: 'True',
      reason: 'Installing',
      message: 'installing... no addon works',
    });
    expect(progressing(mca(), manifestApplied, [adc], [work({ generation: 3 })]).condition).toMatchObject({
      reason: 'Installing',
      message: 'installing... work is not ready',
    });
    expect(progressing(mca(), manifestApplied, [adc], [work()])).toEqual({
      condition: {
        type: 'Progressing',
        status: 'False',
        reason: 'InstallSucceed',
        message: 'install completed with no errors.',
      },
    });
  });

  it('waits for ManifestApplied, and refuses configs the addon does not support', () => {
    expect(progressing(mca(), [], [adc], [work()]).condition).toMatchObject({
      status: 'False',
      reason: 'WaitingForManifestApplied',
    });
    const unsupported = mca(
      [],
      [{ group: 'proxy.open-cluster-management.io', resource: 'managedproxyconfigurations', name: 'x' }],
    );
    expect(progressing(unsupported, manifestApplied, [adc], [work()]).condition).toEqual({
      type: 'Progressing',
      status: 'False',
      reason: 'ConfigurationUnsupported',
      message:
        'Configuration with gvr proxy.open-cluster-management.io/managedproxyconfigurations is not supported for this addon',
    });
  });

  it('desired configs: Installing until the work carries their hashes, then InstallSucceed and lastAppliedConfig', () => {
    const addon = mca([ref('h1')]);
    expect(progressing(addon, manifestApplied, [adc], [work()]).condition?.message).toBe(
      'installing... configs mismatch',
    );
    const done = progressing(addon, manifestApplied, [adc], [work({ hash: 'h1' })]);
    expect(done.condition?.reason).toBe('InstallSucceed');
    expect(done.configReferences?.[0]?.lastAppliedConfig).toEqual({
      name: 'cfg',
      namespace: 'c1',
      specHash: 'h1',
    });
  });

  it('a changed config is an upgrade: Upgrading, then UpgradeSucceed; nothing to say once applied', () => {
    const addon = mca([ref('h2', 'h1')]);
    expect(progressing(addon, manifestApplied, [adc], [work({ hash: 'h1' })]).condition).toMatchObject({
      status: 'True',
      reason: 'Upgrading',
      message: 'upgrading... configs mismatch',
    });
    expect(progressing(addon, manifestApplied, [adc], [work({ hash: 'h2' })]).condition).toMatchObject({
      status: 'False',
      reason: 'UpgradeSucceed',
      message: 'upgrade completed with no errors.',
    });
    expect(
      progressing(mca([ref('h2', 'h2')]), manifestApplied, [adc], [work({ hash: 'h2', ready: false })]),
    ).toEqual({});
  });

  it('workConfigsMatch: an unparsable or empty hash never matches', () => {
    const w = work({ hash: 'h1' });
    expect(workConfigsMatch(w, mca([ref('h1')]))).toBe(true);
    expect(workConfigsMatch(work({ hash: '' }), mca([ref('h1')]))).toBe(false);
    const broken = {
      ...w,
      metadata: { ...w.metadata, annotations: { 'open-cluster-management.io/config-spec-hash': '{' } },
    };
    expect(workConfigsMatch(broken, mca([ref('h1')]))).toBe(false);
    expect(workConfigsMatch(w, mca([ref('')]))).toBe(false);
  });
});
