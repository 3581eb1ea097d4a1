// The add-on manager's config references on a real hub: a ManagedClusterAddOn gets the config of
// its placement (over the ClusterManagementAddOn's default) unless it names its own, each with the
// spec hash OCM computes; editing an AddOnDeploymentConfig changes the hash (keeping the
// lastAppliedConfig the deploy controller wrote); a config kind the add-on does not support is
// refused through Configured.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigReference, ManagedClusterAddOn } from '../../src/api/addon.ts';
import { type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import {
  addonAdmin,
  addonClusters,
  createAddon,
  placementClusters,
  startControllers,
} from './fixtures/addon-install.ts';
import {
  Cleanups,
  createPlacement,
  hub,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';

const cleanups = new Cleanups();
const configMaps = new ResourceClient<KubeObject & { data?: Record<string, string> }>(hub, {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
});
afterEach(() => cleanups.run());

const group = 'addon.open-cluster-management.io';
const resource = 'addondeploymentconfigs';

/** OCM's hash of an AddOnDeploymentConfig holding one variable (as stored: the CRD's default namespace included). */
function expectedHash(level: string): string {
  const goJson = `{"spec":{"agentInstallNamespace":"open-cluster-management-agent-addon","customizedVariables":[{"name":"LEVEL","value":"${level}"}]}}`;
  return createHash('sha256').update(goJson).digest('hex');
}

async function createDeploymentConfig(namespace: string, name: string, level: string): Promise<void> {
  await addonAdmin.deploymentConfigs.create({
    metadata: { name, namespace },
    spec: { customizedVariables: [{ name: 'LEVEL', value: level }] },
  });
}

async function configReferences(name: string, cluster: string, specHash: string): Promise<ConfigReference[]> {
  return waitFor(async () => {
    const refs = (await addonAdmin.mcas.get(name, cluster))?.status?.configReferences;
    return refs?.[0]?.desiredConfig?.specHash === specHash ? refs : undefined;
  }, `${cluster}/${name} configReferences with hash ${specHash}`);
}

const condition = (m: ManagedClusterAddOn | undefined, type: string) =>
  m?.status?.conditions?.find((c) => c.type === type);

describe('add-on config references', () => {
  it('placement config over the default, the add-on its own over both, hashes follow edits', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-configs', 2);
    const [c0, c1] = clusters as [string, string];
    await createDeploymentConfig(ns, 'defaults', 'default');
    await createDeploymentConfig(ns, 'canary', 'canary');
    await createDeploymentConfig(c1, 'mine', 'mine');
    const placement = await createPlacement(ns, {});
    await startControllers(cleanups, ns);
    await waitForDecisions(ns, placement, clusters);
    const name = await createAddon(cleanups, {
      supportedConfigs: [{ group, resource, defaultConfig: { name: 'defaults', namespace: ns } }],
      installStrategy: {
        type: 'Placements',
        placements: [
          { name: placement, namespace: ns, configs: [{ group, resource, name: 'canary', namespace: ns }] },
        ],
      },
    });
    await waitFor(
      async () => (await addonClusters(name)).join() === [c0, c1].join() || undefined,
      'two add-ons',
    );

    // c0 follows its placement; c1 names its own config
    await addonAdmin.mcas.patchMerge(
      name,
      { spec: { configs: [{ group, resource, name: 'mine', namespace: c1 }] } },
      c1,
    );
    const canary = await configReferences(name, c0, expectedHash('canary'));
    expect(canary).toEqual([
      {
        group,
        resource,
        name: 'canary',
        namespace: ns,
        desiredConfig: { name: 'canary', namespace: ns, specHash: expectedHash('canary') },
        lastObservedGeneration: 1,
      },
    ]);
    const mine = await configReferences(name, c1, expectedHash('mine'));
    expect(mine[0]?.desiredConfig).toEqual({ name: 'mine', namespace: c1, specHash: expectedHash('mine') });
    expect(condition(await addonAdmin.mcas.get(name, c1), 'Configured')).toMatchObject({
      status: 'True',
      reason: 'ConfigurationsConfigured',
      message: 'Configurations configured',
    });
    const cma = await waitFor(async () => {
      const c = await addonAdmin.cmas.get(name);
      return c?.status?.defaultconfigReferences?.[0]?.desiredConfig?.specHash ? c : undefined;
    }, 'defaultconfigReferences with a hash');
    expect(cma.status?.defaultconfigReferences).toEqual([
      {
        group,
        resource,
        desiredConfig: { name: 'defaults', namespace: ns, specHash: expectedHash('default') },
      },
    ]);
    expect(cma.status?.installProgressions?.[0]).toMatchObject({
      name: placement,
      namespace: ns,
      configReferences: [
        {
          group,
          resource,
          desiredConfig: { name: 'canary', namespace: ns, specHash: expectedHash('canary') },
        },
      ],
    });

    // The deploy controller applied the canary config on c0; then the config is edited.
    const applied = { name: 'canary', namespace: ns, specHash: expectedHash('canary') };
    const current = await addonAdmin.mcas.get(name, c0);
    if (!current?.status?.configReferences?.[0]) throw new Error('no configReferences on c0');
    await addonAdmin.mcas.replaceStatus({
      ...current,
      status: {
        ...current.status,
        configReferences: [{ ...current.status.configReferences[0], lastAppliedConfig: applied }],
      },
    });
    await addonAdmin.deploymentConfigs.patchMerge(
      'canary',
      { spec: { customizedVariables: [{ name: 'LEVEL', value: 'canary-2' }] } },
      ns,
    );
    const edited = await configReferences(name, c0, expectedHash('canary-2'));
    expect(edited[0]).toMatchObject({ lastAppliedConfig: applied, lastObservedGeneration: 2 });
    // c1 does not use the canary config: its hash stays
    expect(
      (await addonAdmin.mcas.get(name, c1))?.status?.configReferences?.[0]?.desiredConfig?.specHash,
    ).toBe(expectedHash('mine'));
  });

  it('a config kind the add-on does not support is refused through Configured', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-configs', 1);
    const [c0] = clusters as [string];
    await createDeploymentConfig(ns, 'defaults', 'default');
    await startControllers(cleanups, ns);
    const name = await createAddon(cleanups, {
      supportedConfigs: [{ group, resource, defaultConfig: { name: 'defaults', namespace: ns } }],
    });
    await addonAdmin.mcas.create({
      metadata: { name, namespace: c0 },
      spec: { configs: [{ group: 'example.io', resource: 'widgets', name: 'w' }] },
    });
    const refused = await waitFor(async () => {
      const m = await addonAdmin.mcas.get(name, c0);
      return condition(m, 'Configured')?.reason === 'ConfigurationUnsupported' ? m : undefined;
    }, 'Configured ConfigurationUnsupported');
    expect(condition(refused, 'Configured')).toMatchObject({
      status: 'False',
      message: 'Configuration with gvr example.io/widgets is not supported for this addon',
    });
    // the refused kind is not referenced; the supported default still is
    expect(refused?.status?.configReferences?.map((r) => [r.resource, r.name])).toEqual([
      [resource, 'defaults'],
    ]);

    // dropping the refused config clears the refusal
    await addonAdmin.mcas.patchMerge(name, { spec: { configs: null } }, c0);
    await waitFor(
      async () =>
        condition(await addonAdmin.mcas.get(name, c0), 'Configured')?.status === 'True' || undefined,
      'Configured True',
    );
  });
  it('any supported kind is hashed and watched: a ConfigMap edit changes the hash at once', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-configs', 1);
    const [c0] = clusters as [string];
    await configMaps.create({ metadata: { name: 'settings', namespace: ns }, data: { level: 'one' } });
    await startControllers(cleanups, ns);
    const name = await createAddon(cleanups, {
      supportedConfigs: [
        { group: '', resource: 'configmaps', defaultConfig: { name: 'settings', namespace: ns } },
      ],
    });
    await addonAdmin.mcas.create({ metadata: { name, namespace: c0 }, spec: {} });
    // A ConfigMap has no spec: everything but apiVersion, kind, metadata and status is hashed.
    const hashOf = (level: string) =>
      createHash('sha256').update(`{"data":{"level":"${level}"}}`).digest('hex');
    const refs = await configReferences(name, c0, hashOf('one'));
    expect(refs[0]).toMatchObject({ group: '', resource: 'configmaps', name: 'settings', namespace: ns });

    await configMaps.patchMerge('settings', { data: { level: 'two' } }, ns);
    // well within the informers' resync period: the edit itself re-queued the add-on
    await configReferences(name, c0, hashOf('two'));
  });
});
