// A placement's Progressive rollout strategy on a real hub: with maxConcurrency 1 the add-on
// manager gives one cluster's add-on its configs at a time (Configured True there, OCM's
// ConfigurationsNotConfigured elsewhere) and moves on once the deploy controller reports the
// config applied (lastAppliedConfig, written here in its place).
import { afterEach, describe, expect, it } from 'vitest';
import type { ManagedClusterAddOn } from '../../src/api/addon.ts';
import {
  addonAdmin,
  addonClusters,
  createAddon,
  placementClusters,
  startControllers,
} from './fixtures/addon-install.ts';
import { Cleanups, createPlacement, waitFor, waitForDecisions } from './fixtures/placement-scheduling.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const group = 'addon.open-cluster-management.io';
const resource = 'addondeploymentconfigs';

const configured = (m: ManagedClusterAddOn | undefined) =>
  m?.status?.conditions?.find((c) => c.type === 'Configured');

/** Which clusters' add-ons are Configured=True and which wait (reason ConfigurationsNotConfigured). */
async function configuredState(name: string, clusters: readonly string[]) {
  const state: Record<string, string | undefined> = {};
  for (const c of clusters) state[c] = configured(await addonAdmin.mcas.get(name, c))?.reason;
  return state;
}

/** What the deploy controller does once the agent runs with the config: lastAppliedConfig := desiredConfig. */
async function reportApplied(name: string, cluster: string): Promise<void> {
  const m = await addonAdmin.mcas.get(name, cluster);
  if (!m?.status?.configReferences) throw new Error(`${cluster}/${name} has no configReferences`);
  await addonAdmin.mcas.replaceStatus({
    ...m,
    status: {
      ...m.status,
      configReferences: m.status.configReferences.map((r) => ({ ...r, lastAppliedConfig: r.desiredConfig })),
    },
  });
}

describe('add-on config rollout', () => {
  it('Progressive, maxConcurrency 1: one cluster at a time, the next once the config is applied', async () => {
    const { ns, clusters } = await placementClusters(cleanups, 'addon-rollout', 3);
    const [c0, c1, c2] = clusters as [string, string, string];
    await addonAdmin.deploymentConfigs.create({
      metadata: { name: 'defaults', namespace: ns },
      spec: { agentInstallNamespace: 'agents' },
    });
    const placement = await createPlacement(ns, {});
    await startControllers(cleanups, ns);
    await waitForDecisions(ns, placement, clusters);
    const name = await createAddon(cleanups, {
      supportedConfigs: [{ group, resource, defaultConfig: { name: 'defaults', namespace: ns } }],
      installStrategy: {
        type: 'Placements',
        placements: [
          {
            name: placement,
            namespace: ns,
            rolloutStrategy: { type: 'Progressive', progressive: { maxConcurrency: 1 } },
          },
        ],
      },
    });
    await waitFor(async () => (await addonClusters(name)).length === 3 || undefined, 'three add-ons');

    const first = {
      [c0]: 'ConfigurationsConfigured',
      [c1]: 'ConfigurationsNotConfigured',
      [c2]: 'ConfigurationsNotConfigured',
    };
    await waitFor(
      async () =>
        JSON.stringify(await configuredState(name, clusters)) === JSON.stringify(first) || undefined,
      `only ${c0} configured`,
    );
    expect((await addonAdmin.mcas.get(name, c1))?.status?.configReferences ?? []).toEqual([]);
    await waitFor(async () => {
      const p = (await addonAdmin.cmas.get(name))?.status?.installProgressions?.[0];
      const condition = (p?.['conditions'] as { message: string }[] | undefined)?.[0];
      return condition?.message === '1/3 progressing..., 0 failed 0 timeout.' || undefined;
    }, 'install progression 1/3 progressing');

    await reportApplied(name, c0);
    await waitFor(
      async () => (await configuredState(name, clusters))[c1] === 'ConfigurationsConfigured' || undefined,
      `${c1} configured after ${c0} applied`,
    );
    expect((await configuredState(name, clusters))[c2]).toBe('ConfigurationsNotConfigured');
    await reportApplied(name, c1);
    await waitFor(
      async () => (await configuredState(name, clusters))[c2] === 'ConfigurationsConfigured' || undefined,
      `${c2} configured after ${c1} applied`,
    );
    await reportApplied(name, c2);
    const done = await waitFor(async () => {
      const p = (await addonAdmin.cmas.get(name))?.status?.installProgressions?.[0];
      const condition = (p?.['conditions'] as { reason: string; message: string }[] | undefined)?.[0];
      return condition?.reason === 'Completed' ? { p, condition } : undefined;
    }, 'install progression Completed');
    expect(done.condition.message).toBe('3/3 completed with no errors, 0 failed 0 timeout.');
    const refs = done.p?.['configReferences'] as { desiredConfig: unknown; lastAppliedConfig: unknown }[];
    expect(refs[0]?.lastAppliedConfig).toEqual(refs[0]?.desiredConfig);
  });
});
