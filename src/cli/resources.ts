// `tether create|get|delete` for ManifestWorks and ManagedServiceAccounts (clusteradm's habits):
// thin wrappers over the hub helpers in src/work/hub and src/serviceaccount/hub; `create work
// --placement` (clusteradm's, also -r/--replicaset) over src/placement/cli/work-by-placement.ts.
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { createManagedServiceAccount, listManagedServiceAccounts } from '../serviceaccount/index.ts';
import {
  createManifestWork,
  deleteManifestWork,
  listManifestWorks,
  loadManifests,
} from '../work/hub/index.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { clusterList } from './options.ts';
import { formatTable } from './table.ts';

export function registerResourceCommands(create: Command, get: Command, del: Command): void {
  create
    .command('work <name>')
    .description(
      'create a ManifestWork from files in the namespaces of the given clusters, or of the clusters a Placement selects',
    )
    .requiredOption('-f, --file <fileOrDir>', 'YAML/JSON manifests (a file or a directory)')
    .option('--clusters <c1,c2>', 'target clusters', clusterList)
    .option('--placement <ns/name>', 'target the clusters this Placement decided (instead of --clusters)')
    .option(
      '-r, --replicaset',
      'with --placement: create a ManifestWorkReplicaSet in the Placement namespace instead',
      false,
    )
    .option('--overwrite', 'replace the manifests of an existing work', false)
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .action(
      async (
        name: string,
        opts: {
          file: string;
          clusters?: string[];
          placement?: string;
          replicaset: boolean;
          overwrite: boolean;
          kubeconfig?: string;
        },
      ) => {
        if ((opts.clusters === undefined) === (opts.placement === undefined)) {
          throw new InvalidArgumentError('name the target: either --clusters or --placement');
        }
        if (opts.replicaset && opts.placement === undefined) {
          throw new InvalidArgumentError('--replicaset needs --placement');
        }
        const manifests = loadManifests(opts.file);
        const hubKc = kubeconfigFlag(opts.kubeconfig, 'hub');
        if (opts.placement !== undefined) {
          const byPlacement = await import('../placement/cli/work-by-placement.ts');
          const placement = byPlacement.parsePlacementRef(opts.placement);
          if (opts.replicaset) {
            const action = await byPlacement.createManifestWorkReplicaSet(hubKc, {
              name,
              placement,
              manifests,
              overwrite: opts.overwrite,
            });
            process.stdout.write(
              `manifestworkreplicaset ${placement.namespace}/${name} ${action} (${manifests.length} manifests)\n`,
            );
            return;
          }
          const results = await byPlacement.createWorkByPlacement(hubKc, {
            name,
            placement,
            manifests,
            overwrite: opts.overwrite,
          });
          if (results.length === 0) {
            process.stdout.write(
              `manifestwork ${name}: nothing to create (no cluster placement ${opts.placement} decided is without it)\n`,
            );
          }
          for (const r of results)
            process.stdout.write(
              r.action === 'deleted'
                ? `manifestwork ${r.cluster}/${name} deleted (no longer decided)\n`
                : `manifestwork ${r.cluster}/${name} ${r.action} (${manifests.length} manifests)\n`,
            );
          return;
        }
        const results = await createManifestWork(hubKc, {
          name,
          clusters: opts.clusters ?? [],
          manifests,
          overwrite: opts.overwrite,
        });
        for (const r of results)
          process.stdout.write(
            `manifestwork ${r.cluster}/${name} ${r.action} (${manifests.length} manifests)\n`,
          );
      },
    );

  create
    .command('serviceaccount <name>')
    .description('create a ManagedServiceAccount in the namespaces of the given clusters')
    .requiredOption('--clusters <c1,c2>', 'target clusters', clusterList)
    .option('--validity <duration>', 'token lifetime (Go duration, e.g. 24h; default 8640h0m0s)')
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .action(async (name: string, opts: { clusters: string[]; validity?: string; kubeconfig?: string }) => {
      const results = await createManagedServiceAccount(kubeconfigFlag(opts.kubeconfig, 'hub'), {
        name,
        clusters: opts.clusters,
        validity: opts.validity,
      });
      let failed = false;
      for (const r of results) {
        if (r.error) {
          failed = true;
          process.stderr.write(`managedserviceaccount ${r.cluster}/${name}: ${r.error}\n`);
        } else process.stdout.write(`managedserviceaccount ${r.cluster}/${name} created\n`);
      }
      if (failed) process.exitCode = 1;
    });

  get
    .command('works')
    .description('list the ManifestWorks of a cluster')
    .requiredOption('--cluster <name>', 'managed cluster (its namespace on the hub)')
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .action(async (opts: { cluster: string; kubeconfig?: string }) => {
      const rows = await listManifestWorks(kubeconfigFlag(opts.kubeconfig, 'hub'), opts.cluster);
      process.stdout.write(
        formatTable(
          ['NAME', 'APPLIED', 'AVAILABLE', 'AGE'],
          rows.map((r) => [r.name, r.applied, r.available, r.age]),
        ),
      );
    });

  get
    .command('serviceaccounts')
    .description('list ManagedServiceAccounts')
    .option('--cluster <name>', 'only this cluster')
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .action(async (opts: { cluster?: string; kubeconfig?: string }) => {
      const rows = await listManagedServiceAccounts(kubeconfigFlag(opts.kubeconfig, 'hub'), {
        cluster: opts.cluster,
      });
      process.stdout.write(
        formatTable(
          ['CLUSTER', 'NAME', 'TOKEN REPORTED', 'EXPIRATION', 'AGE'],
          rows.map((r) => [r.cluster, r.name, r.tokenReported, r.expiration, r.age]),
        ),
      );
    });

  del
    .command('work <name>')
    .description('delete a ManifestWork from the given clusters (the agents remove what it applied)')
    .requiredOption('--clusters <c1,c2>', 'clusters', clusterList)
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .action(async (name: string, opts: { clusters: string[]; kubeconfig?: string }) => {
      const results = await deleteManifestWork(kubeconfigFlag(opts.kubeconfig, 'hub'), name, opts.clusters);
      for (const r of results)
        process.stdout.write(`manifestwork ${r.cluster}/${name} ${r.deleted ? 'deleted' : 'not found'}\n`);
    });
}
