// `tether addon enable|disable --clusters` against the real hub, as clusteradm's: enable writes
// ManagedClusterAddOn `<addon>` in each cluster namespace with the install namespace, labels,
// annotations and configs of the flags; enabling again replaces labels and annotations; --dry-run
// writes nothing; an unknown addon, cluster or config stops before any write; disable deletes the
// ManagedClusterAddOns and reports the ones that were not there.
import { afterEach, describe, expect, it } from 'vitest';
import {
  addonAdmin,
  cleanUpAddon,
  createAcceptedCluster,
  createClusterManagementAddOn,
  deploymentConfigKind,
  tether,
} from './fixtures/addon-cli.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { Cleanups, createNamespace } from './fixtures/placement.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

describe('tether addon enable --clusters', () => {
  it('creates the ManagedClusterAddOn with the flags’ fields, then replaces labels and annotations', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const [c1, c2] = [await createAcceptedCluster(cleanups), await createAcceptedCluster(cleanups)];
    for (const c of [c1, c2]) cleanUpAddon(cleanups, c ?? '', addon);
    const adcNamespace = await createNamespace(cleanups);
    await addonAdmin.deploymentConfigs.create({
      metadata: { name: 'proxy', namespace: adcNamespace },
      spec: { proxyConfig: { httpProxy: 'http://squid:3128' } },
    });
    const config = `${deploymentConfigKind.group}/${deploymentConfigKind.resource}:${adcNamespace}/proxy`;

    const enabled = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      `${c1},${c2}`,
      '-n',
      'addons-here',
      '--labels',
      'team=a,tier=web',
      '--annotate',
      'addon.open-cluster-management.io/values={"global":{"imagePullPolicy":"Never"}}',
      '--config',
      config,
    ]);
    expect(enabled).toMatchObject({ code: 0, stderr: '' });
    expect(enabled.stdout).toBe(
      [c1, c2]
        .map((c) => `managedclusteraddon ${c}/${addon} created: install namespace addons-here\n`)
        .join(''),
    );
    const mca = await addonAdmin.mcas.get(addon, c1);
    expect(mca?.metadata.labels).toEqual({ team: 'a', tier: 'web' });
    expect(mca?.metadata.annotations).toEqual({
      'addon.open-cluster-management.io/values': '{"global":{"imagePullPolicy":"Never"}}',
    });
    expect(mca?.spec).toEqual({
      installNamespace: 'addons-here',
      configs: [{ ...deploymentConfigKind, namespace: adcNamespace, name: 'proxy' }],
    });

    // Again with other labels and no annotation or config: labels and annotations are replaced
    // wholesale (clusteradm's), the configs stay, the install namespace goes back to the default.
    const again = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      c1 ?? '',
      '--labels',
      'team=b',
    ]);
    expect(again).toMatchObject({
      code: 0,
      stdout: `managedclusteraddon ${c1}/${addon} updated: install namespace open-cluster-management-agent-addon\n`,
    });
    const replaced = await addonAdmin.mcas.get(addon, c1);
    expect(replaced?.metadata.labels).toEqual({ team: 'b' });
    expect(replaced?.metadata.annotations ?? {}).toEqual({});
    expect(replaced?.spec.installNamespace).toBe('open-cluster-management-agent-addon');
    expect(replaced?.spec.configs).toEqual(mca?.spec.configs);

    const same = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      c1 ?? '',
      '--labels',
      'team=b',
    ]);
    expect(same.stdout).toBe(
      `managedclusteraddon ${c1}/${addon} unchanged: install namespace open-cluster-management-agent-addon\n`,
    );
    expect((await addonAdmin.mcas.get(addon, c1))?.metadata.resourceVersion).toBe(
      replaced?.metadata.resourceVersion,
    );
  });

  it('--dry-run prints what would change and writes nothing', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const cluster = await createAcceptedCluster(cleanups);
    cleanUpAddon(cleanups, cluster, addon);
    const run = await tether(['addon', 'enable', '--names', addon, '--clusters', cluster, '--dry-run']);
    expect(run).toMatchObject({
      code: 0,
      stdout: `managedclusteraddon ${cluster}/${addon} created (dry run): install namespace open-cluster-management-agent-addon\n`,
    });
    expect(await addonAdmin.mcas.get(addon, cluster)).toBeUndefined();

    await tether(['addon', 'enable', '--names', addon, '--clusters', cluster]);
    const before = await addonAdmin.mcas.get(addon, cluster);
    const relabel = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      cluster,
      '--labels',
      'x=y',
      '--dry-run',
    ]);
    expect(relabel.stdout).toContain(`managedclusteraddon ${cluster}/${addon} updated (dry run)`);
    expect((await addonAdmin.mcas.get(addon, cluster))?.metadata).toEqual(before?.metadata);

    const disable = await tether(['addon', 'disable', '--names', addon, '--clusters', cluster, '--dry-run']);
    expect(disable.stdout).toBe(`managedclusteraddon ${cluster}/${addon} deleted (dry run)\n`);
    expect(await addonAdmin.mcas.get(addon, cluster)).toBeDefined();
  });

  it('refuses an unknown addon, cluster, unsupported config kind or missing config before writing', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const cluster = await createAcceptedCluster(cleanups);
    cleanUpAddon(cleanups, cluster, addon);
    const unknown = uniqueName('no-such-addon');

    const run = await tether(['addon', 'enable', '--names', `${addon},${unknown}`, '--clusters', cluster]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`enabling the unknown addon ${unknown} is not supported`);
    expect(run.stderr).toContain(addon);
    expect(await addonAdmin.mcas.get(addon, cluster)).toBeUndefined();

    const noCluster = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      `${cluster},nowhere-x`,
    ]);
    expect(noCluster).toMatchObject({ code: 1 });
    expect(noCluster.stderr).toContain('no ManagedCluster named nowhere-x');

    const unsupported = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      cluster,
      '--config',
      'example.io/widgets:ns/w',
    ]);
    expect(unsupported.code).toBe(1);
    expect(unsupported.stderr).toContain(
      `addon ${addon} takes no config of kind example.io/widgets (its ClusterManagementAddOn supports: ${deploymentConfigKind.group}/${deploymentConfigKind.resource})`,
    );

    const missing = await tether([
      'addon',
      'enable',
      '--names',
      addon,
      '--clusters',
      cluster,
      '--config',
      `${deploymentConfigKind.group}/${deploymentConfigKind.resource}:default/absent`,
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('AddOnDeploymentConfig default/absent not found');
    expect(await addonAdmin.mcas.get(addon, cluster)).toBeUndefined();
  });
});

describe('tether addon disable --clusters / --all-clusters', () => {
  it('deletes the ManagedClusterAddOns, and says so where there was none', async () => {
    const addon = await createClusterManagementAddOn(cleanups);
    const [c1, c2, c3] = [
      await createAcceptedCluster(cleanups),
      await createAcceptedCluster(cleanups),
      await createAcceptedCluster(cleanups),
    ];
    for (const c of [c1, c2, c3]) cleanUpAddon(cleanups, c ?? '', addon);
    expect(
      (await tether(['addon', 'enable', '--names', addon, '--clusters', `${c1},${c2},${c3}`])).code,
    ).toBe(0);

    const one = await tether(['addon', 'disable', '--names', addon, '--clusters', `${c1}`]);
    expect(one).toMatchObject({ code: 0, stdout: `managedclusteraddon ${c1}/${addon} deleted\n` });
    expect(await addonAdmin.mcas.get(addon, c1)).toBeUndefined();

    const gone = await tether(['addon', 'disable', '--names', addon, '--clusters', `${c1}`]);
    expect(gone).toMatchObject({
      code: 0,
      stdout: `managedclusteraddon ${c1}/${addon} not found: the addon is not enabled there\n`,
    });

    const all = await tether(['addon', 'disable', '--names', addon, '--all-clusters']);
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n').filter(Boolean).sort()).toEqual(
      [c2, c3].map((c) => `managedclusteraddon ${c}/${addon} deleted`).sort(),
    );
    expect((await addonAdmin.mcas.list({ fieldSelector: `metadata.name=${addon}` })).items).toEqual([]);
  });
});
