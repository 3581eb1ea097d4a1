// `tether addon enable|disable --placement`, `tether install hub-addon` and `tether get addon`
// against the real hub: a Placement goes into the ClusterManagementAddOn's installStrategy
// (Placements, once, with its configs) and comes out again; install hub-addon creates tether's
// built-in ClusterManagementAddOns with installStrategy Manual and refuses unknown names;
// get addon shows the conditions of real ManagedClusterAddOns, set here as the hub's controllers would.
import { afterEach, describe, expect, it } from 'vitest';
import { builtinAddonMetas } from '../../src/addon/builtin/index.ts';
import {
  addonAdmin,
  cleanUpAddon,
  createAcceptedCluster,
  createClusterManagementAddOn,
  deploymentConfigKind,
  tether,
} from './fixtures/addon-cli.ts';
import { Cleanups, createNamespace } from './fixtures/placement.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

async function createPlacement(namespace: string, name: string): Promise<void> {
  await addonAdmin.placements.create({ metadata: { name, namespace }, spec: {} });
}

describe('tether addon enable|disable --placement', () => {
  it('adds the Placement to the installStrategy once, with its configs, and removes it again', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const namespace = await createNamespace(cleanups);
    await createPlacement(namespace, 'edge');
    await addonAdmin.deploymentConfigs.create({ metadata: { name: 'adc', namespace }, spec: {} });

    const enabled = await tether(['addon', 'enable', '--names', addon, '--placement', `${namespace}/edge`]);
    expect(enabled).toMatchObject({
      code: 0,
      stdout: `clustermanagementaddon ${addon} updated: installs on the clusters placement ${namespace}/edge selects (installStrategy Placements)\n`,
    });
    expect((await addonAdmin.cmas.get(addon))?.spec.installStrategy).toEqual({
      type: 'Placements',
      // rolloutStrategy All is the CRD's default
      placements: [{ namespace, name: 'edge', rolloutStrategy: { type: 'All' } }],
    });

    const again = await tether(['addon', 'enable', '--names', addon, '--placement', `${namespace}/edge`]);
    expect(again.stdout).toBe(
      `clustermanagementaddon ${addon} unchanged: already installs on the clusters placement ${namespace}/edge selects\n`,
    );

    const config = `${deploymentConfigKind.group}/${deploymentConfigKind.resource}:${namespace}/adc`;
    const withConfig = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--placement',
      `${namespace}/edge`,
      '--config',
      config,
    ]);
    expect(withConfig.stdout).toContain(`clustermanagementaddon ${addon} updated`);
    expect((await addonAdmin.cmas.get(addon))?.spec.installStrategy?.placements).toEqual([
      {
        namespace,
        name: 'edge',
        rolloutStrategy: { type: 'All' },
        configs: [{ ...deploymentConfigKind, namespace, name: 'adc' }],
      },
    ]);

    const dry = await tether([
      'addon',
      'disable',
      '--names',
      addon,
      '--placement',
      `${namespace}/edge`,
      '--dry-run',
    ]);
    expect(dry.stdout).toContain(
      `clustermanagementaddon ${addon} updated (dry run): placement ${namespace}/edge removed`,
    );
    expect((await addonAdmin.cmas.get(addon))?.spec.installStrategy?.placements).toHaveLength(1);

    const disabled = await tether(['addon', 'disable', '--names', addon, '--placement', `${namespace}/edge`]);
    expect(disabled.code).toBe(0);
    expect((await addonAdmin.cmas.get(addon))?.spec.installStrategy).toEqual({
      type: 'Placements',
      placements: [],
    });

    const notThere = await tether(['addon', 'disable', '--names', addon, '--placement', `${namespace}/edge`]);
    expect(notThere).toMatchObject({
      code: 0,
      stdout: `clustermanagementaddon ${addon} unchanged: placement ${namespace}/edge is not in its installStrategy\n`,
    });
  });

  it('refuses a Placement that does not exist, and notes the clusters that have it enabled by hand', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const namespace = await createNamespace(cleanups);
    const missing = await tether(['addon', 'enable', '--names', addon, '--placement', `${namespace}/absent`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`Placement ${namespace}/absent not found`);
    expect((await addonAdmin.cmas.get(addon))?.spec.installStrategy?.type ?? 'Manual').toBe('Manual');

    const cluster = await createAcceptedCluster(cleanups);
    cleanUpAddon(cleanups, cluster, addon);
    await tether(['addon', 'enable', '--names', addon, '--clusters', cluster]);
    await createPlacement(namespace, 'all');
    const run = await tether(['addon', 'enable', '--names', addon, '--placement', `${namespace}/all`]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      `note: addon ${addon} is also enabled by hand on ${cluster}: it stays there whatever the placements select`,
    );

    // An addon that installs itself (lifecycle self) gets the placement, and a word that the hub's
    // addon manager will not act on it.
    const cma = await addonAdmin.cmas.get(addon);
    if (!cma) throw new Error(`ClusterManagementAddOn ${addon} is gone`);
    await addonAdmin.cmas.replace({
      ...cma,
      metadata: { ...cma.metadata, annotations: { 'addon.open-cluster-management.io/lifecycle': 'self' } },
    });
    await createPlacement(namespace, 'self');
    const self = await tether(['addon', 'enable', '--names', addon, '--placement', `${namespace}/self`]);
    expect(self.code).toBe(0);
    expect(self.stderr).toContain(`note: addon ${addon} installs itself`);
  });
});

describe('tether install hub-addon', () => {
  it('creates the built-in ClusterManagementAddOns with installStrategy Manual, once; unknown names are refused', async () => {
    // The built-in names are fixed: start from a hub without them and leave it so.
    const names = builtinAddonMetas.map((m) => m.name);
    for (const name of names) {
      await addonAdmin.cmas.delete(name, undefined, { ignoreNotFound: true });
      cleanups.add(() => addonAdmin.cmas.delete(name, undefined, { ignoreNotFound: true }));
    }
    const dry = await tether(['install', 'hub-addon', '--names', 'cluster-proxy', '--dry-run']);
    expect(dry.stdout).toContain('clustermanagementaddon cluster-proxy created (dry run)');
    expect(await addonAdmin.cmas.get('cluster-proxy')).toBeUndefined();

    const run = await tether(['install', 'hub-addon', '--names', names.join(',')]);
    expect(run.code).toBe(0);
    for (const meta of builtinAddonMetas) {
      expect(run.stdout).toContain(`clustermanagementaddon ${meta.name} created`);
      expect((await addonAdmin.cmas.get(meta.name))?.spec.addOnMeta).toEqual({
        displayName: meta.displayName,
        description: meta.description,
      });
    }
    const cma = await addonAdmin.cmas.get('managed-serviceaccount');
    expect(cma?.spec.installStrategy).toEqual({ type: 'Manual' });
    expect(cma?.spec.supportedConfigs).toEqual([deploymentConfigKind]);
    expect(cma?.metadata.annotations?.['addon.open-cluster-management.io/lifecycle']).toBe('addon-manager');

    const again = await tether(['install', 'hub-addon', '--names', 'cluster-proxy']);
    expect(again.stdout).toBe('clustermanagementaddon cluster-proxy unchanged: already installed\n');

    const unknown = await tether(['install', 'hub-addon', '--names', 'argocd']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(
      'no hub addon named argocd: tether ships managed-serviceaccount, cluster-proxy, cluster-gateway',
    );
  });
});

describe('tether get addon', () => {
  it('lists each cluster’s addons with the conditions the hub set; --cluster narrows, -o json prints them', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const [c1, c2] = [await createAcceptedCluster(cleanups), await createAcceptedCluster(cleanups)];
    for (const c of [c1, c2]) cleanUpAddon(cleanups, c ?? '', addon);
    expect((await tether(['addon', 'enable', '--names', addon, '--clusters', `${c1},${c2}`])).code).toBe(0);
    const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const condition = (type: string, status: string, reason: string) => ({
      type,
      status,
      reason,
      message: reason,
      lastTransitionTime: at,
    });
    await addonAdmin.mcas.patchStatus(
      addon,
      {
        status: {
          conditions: [
            condition('RegistrationApplied', 'True', 'SetPermissionApplied'),
            condition('ManifestApplied', 'True', 'AddonManifestApplied'),
            condition('Available', 'Unknown', 'ManagedClusterAddOnLeaseNotFound'),
          ],
          healthCheck: { mode: 'Lease' },
        },
      },
      c1,
    );

    const rowsOf = (out: string) =>
      out
        .split('\n')
        .filter((l) => l.includes(addon))
        .map((l) => l.split(/\s{3,}/));
    const all = await tether(['get', 'addon']);
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n')[0]?.split(/\s{3,}/)).toEqual([
      'CLUSTER',
      'NAME',
      'AVAILABLE',
      'MANIFESTAPPLIED',
      'REGISTRATIONAPPLIED',
    ]);
    expect(rowsOf(all.stdout)).toEqual([
      [c1, addon, 'Unknown', 'True', 'True'],
      [c2, addon],
    ]);

    const one = await tether(['get', 'addon', '--cluster', c2 ?? '', '-o', 'wide']);
    expect(rowsOf(one.stdout)).toEqual([
      [c2, addon, 'open-cluster-management-agent-addon', expect.any(String)],
    ]);
    expect(one.stdout).not.toContain(c1);

    const json = JSON.parse(
      (await tether(['get', 'addon', addon, '--cluster', c1 ?? '', '-o', 'json'])).stdout,
    );
    expect(json.items).toHaveLength(1);
    expect(json.items[0].status.healthCheck).toEqual({ mode: 'Lease' });

    const noCluster = await tether(['get', 'addon', '--cluster', 'nowhere-x']);
    expect(noCluster).toMatchObject({ code: 1 });
    expect(noCluster.stderr).toContain('no ManagedCluster named nowhere-x');
  });
});
