// `tether addon enable|disable`, `tether install hub-addon` and `tether get addon`: clusteradm's
// addon verbs over the hub's addon kinds (the work is in addon-enable.ts, addon-disable.ts,
// addon-install.ts and addon-list.ts; flag checks in addon-flags.ts). Beyond clusteradm: enable and
// disable also take a Placement (the ClusterManagementAddOn's installStrategy), and --dry-run is
// honoured: nothing is written.
import { type Command, Option } from 'commander';
import { kubeconfigFlag } from '../kubeconfig-flag.ts';
import { clusterList, collect } from '../options.ts';
import { disableAddons } from './disable.ts';
import { enableAddons } from './enable.ts';
import { addonNameList, disableTarget, enableTarget, parseConfigRefs } from './flags.ts';
import { type AddonResult, formatChange } from './hub.ts';
import { type AddonOutput, formatAddons, listManagedClusterAddOns } from './list.ts';

const kubeconfigOption = () => new Option('--kubeconfig <path>', 'kubeconfig of the hub').env('KUBECONFIG');
const dryRunOption = () =>
  new Option(
    '--dry-run',
    'print what would change and write nothing (the apiserver still validates each write); clusteradm writes anyway',
  );

function print(result: AddonResult, dryRun: boolean): void {
  for (const change of result.changes) process.stdout.write(formatChange(change, dryRun));
  for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
}

export function registerAddonCommands(program: Command, get: Command): void {
  const addon = program
    .command('addon')
    .description('enable or disable addons on managed clusters (ManagedClusterAddOns, install strategies)');

  addon
    .command('enable')
    .description(
      'enable addons on clusters (a ManagedClusterAddOn in each cluster namespace; labels and annotations of an existing one are replaced, as clusteradm does) or on the clusters a Placement selects (the ClusterManagementAddOn installStrategy)',
    )
    .requiredOption('--names <a,b>', 'addons (ClusterManagementAddOn names)', addonNameList)
    .option('--clusters <c1,c2>', 'managed clusters to enable the addons on', clusterList)
    .option(
      '--placement <ns/name>',
      'enable on the clusters this Placement selects, now and later (instead of --clusters)',
    )
    .option(
      '-n, --namespace <ns>',
      'with --clusters: namespace the agent is installed in on the managed cluster (default open-cluster-management-agent-addon)',
    )
    .option(
      '--labels <k=v>',
      'with --clusters: labels of the ManagedClusterAddOn (repeatable, or k=v,k2=v2)',
      collect,
    )
    .option(
      '--annotate <k=v>',
      'with --clusters: an annotation of the ManagedClusterAddOn (repeatable)',
      collect,
    )
    .option(
      '--config <group/resource:ns/name>',
      'a config the addon uses, e.g. addon.open-cluster-management.io/addondeploymentconfigs:ns/name (repeatable)',
      collect,
    )
    .addOption(dryRunOption())
    .addOption(kubeconfigOption())
    .action(
      async (opts: {
        names: string[];
        clusters?: string[];
        placement?: string;
        namespace?: string;
        labels?: string[];
        annotate?: string[];
        config?: string[];
        dryRun?: boolean;
        kubeconfig?: string;
      }) => {
        const target = enableTarget(opts);
        const configs = parseConfigRefs(opts.config ?? []);
        const result = await enableAddons(kubeconfigFlag(opts.kubeconfig, 'hub'), {
          names: opts.names,
          target,
          configs,
          dryRun: opts.dryRun === true,
        });
        print(result, opts.dryRun === true);
      },
    );

  addon
    .command('disable')
    .description(
      'disable addons: delete their ManagedClusterAddOns from clusters, or take a Placement out of the installStrategy',
    )
    .requiredOption('--names <a,b>', 'addons (ClusterManagementAddOn names)', addonNameList)
    .option('--clusters <c1,c2>', 'managed clusters to disable the addons on', clusterList)
    .option('--all-clusters', 'every cluster the addons are enabled on')
    .option('--placement <ns/name>', 'stop installing on the clusters this Placement selects')
    .addOption(dryRunOption())
    .addOption(kubeconfigOption())
    .action(
      async (opts: {
        names: string[];
        clusters?: string[];
        allClusters?: boolean;
        placement?: string;
        dryRun?: boolean;
        kubeconfig?: string;
      }) => {
        const target = disableTarget(opts);
        const result = await disableAddons(kubeconfigFlag(opts.kubeconfig, 'hub'), {
          names: opts.names,
          target,
          dryRun: opts.dryRun === true,
        });
        print(result, opts.dryRun === true);
      },
    );

  const install = program.command('install').description('install the hub side of addons tether ships');
  install
    .command('hub-addon')
    .description(
      'register addons tether ships on the hub: a ClusterManagementAddOn each, installStrategy Manual (an unknown name lists the known ones)',
    )
    .requiredOption('--names <a,b>', 'addons to install', addonNameList)
    .addOption(dryRunOption())
    .addOption(kubeconfigOption())
    .action(async (opts: { names: string[]; dryRun?: boolean; kubeconfig?: string }) => {
      // Loaded here: the built-in addon definitions are needed by this verb only, not by every `tether get`.
      const { hubAddonDefinitions, installHubAddons } = await import('./install.ts');
      const definitions = hubAddonDefinitions(opts.names);
      const result = await installHubAddons(kubeconfigFlag(opts.kubeconfig, 'hub'), definitions, {
        dryRun: opts.dryRun === true,
      });
      print(result, opts.dryRun === true);
    });

  get
    .command('addon [names...]')
    .alias('addons')
    .description(
      'list the addons enabled on clusters (ManagedClusterAddOns) with their Available, ManifestApplied and RegistrationApplied conditions',
    )
    .option('--cluster <name>', 'only this cluster')
    .addOption(
      new Option('-o, --output <format>', 'table, wide (more columns), yaml or json')
        .choices(['table', 'wide', 'yaml', 'json'])
        .default('table'),
    )
    .addOption(kubeconfigOption())
    .action(async (names: string[], opts: { cluster?: string; output: AddonOutput; kubeconfig?: string }) => {
      const addons = await listManagedClusterAddOns(kubeconfigFlag(opts.kubeconfig, 'hub'), {
        cluster: opts.cluster,
        names,
      });
      if (addons.length === 0 && (opts.output === 'table' || opts.output === 'wide')) {
        process.stderr.write(
          `No addons enabled${opts.cluster !== undefined ? ` on cluster ${opts.cluster}` : ''} (tether addon enable --names … --clusters …)\n`,
        );
        return;
      }
      process.stdout.write(formatAddons(addons, opts.output));
    });
}
