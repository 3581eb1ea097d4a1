// `tether accept` and `tether get clusters`: the hub admin's side of joining.
import type { Command } from 'commander';
import {
  clusterSetLabel,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../api/index.ts';
import { TetherError } from '../errors.ts';
import { findCondition, ResourceClient } from '../kube/index.ts';
import { approveClusterCsrs } from '../registration/hub/index.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { clusterList } from './options.ts';
import { formatTable } from './table.ts';

export function registerClusterCommands(program: Command, get: Command): void {
  // get is the `tether get` verb group; its `clusters` resource lives here.
  program
    .command('accept')
    .description('accept managed clusters: approve their pending CSRs and set hubAcceptsClient')
    .requiredOption('--clusters <c1,c2>', 'comma-separated cluster names', clusterList)
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .option(
      '--skip-approve-check',
      'also approve bootstrap requests of a cluster that has joined already (rebootstrap: its agent lost its certificate); requests by another cluster identity stay refused',
      false,
    )
    .action(async (opts: { clusters: string[]; kubeconfig?: string; skipApproveCheck: boolean }) => {
      const hub = kubeconfigFlag(opts.kubeconfig, 'hub');
      const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
      for (const name of opts.clusters) {
        if (!(await clusters.get(name))) {
          throw new TetherError(
            'TETHER_INVALID_ARGUMENT',
            `no ManagedCluster named ${name}: has its agent run (tether join, then tether agent)?`,
          );
        }
      }
      const unapproved: string[] = [];
      for (const name of opts.clusters) {
        const result = await approveClusterCsrs(hub, name, { skipApproveCheck: opts.skipApproveCheck });
        const n = result.approved.length;
        process.stdout.write(`accepted ${name}${n > 0 ? ` (approved ${n} CSR${n === 1 ? '' : 's'})` : ''}\n`);
        if (result.ambiguous) process.stdout.write(`  no CSR approved: ${result.ambiguous}\n`);
        for (const s of result.skipped) process.stdout.write(`  not approved: CSR ${s.name}: ${s.problem}\n`);
        if (n + result.alreadyApproved.length === 0) unapproved.push(name);
      }
      // As clusteradm's accept (without --wait): hubAcceptsClient is set, but it is an error that
      // no certificate was approved for the cluster yet; run accept again once its agent asked.
      for (const name of unapproved) process.stderr.write(`no csr is approved yet for cluster ${name}\n`);
      if (unapproved.length > 0) process.exitCode = 1;
    });

  get
    .command('clusters')
    .description('list managed clusters')
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .action(async (opts: { kubeconfig?: string }) => {
      const hub = kubeconfigFlag(opts.kubeconfig, 'hub');
      const { items } = await new ResourceClient<ManagedCluster>(hub, managedClusterResource).list();
      const rows = items
        .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
        .map((mc) => {
          const available = findCondition(mc.status?.conditions ?? [], ManagedClusterCondition.Available);
          return [
            mc.metadata?.name ?? '',
            String(mc.spec?.hubAcceptsClient ?? false),
            available?.status ?? 'Unknown',
            mc.metadata?.labels?.[clusterSetLabel] ?? '',
            String(mc.status?.capacity?.cpu ?? ''),
            String(mc.status?.capacity?.memory ?? ''),
            mc.status?.version?.kubernetes ?? '',
          ];
        });
      process.stdout.write(
        formatTable(
          ['NAME', 'ACCEPTED', 'AVAILABLE', 'CLUSTERSET', 'CPU', 'MEMORY', 'KUBERNETES VERSION'],
          rows,
        ),
      );
    });
}
