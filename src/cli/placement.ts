// `tether clusterset bind|unbind|set` and `tether get clustersets|placements`: clusteradm's
// cluster-set and placement verbs, thin wrappers over src/placement/cli. `get placements` prints
// clusteradm's tree by default; `get clustersets` a table like `get clusters`; `-o` picks either.
import { type Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import {
  bindClusterSet,
  listClusterSets,
  listPlacements,
  setClusterSetMembers,
  unbindClusterSet,
} from '../placement/cli/clustersets.ts';
import { formatTree, goValue } from '../placement/cli/tree.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { clusterList } from './options.ts';
import { formatTable } from './table.ts';

type Output = 'table' | 'tree';

function namespaceList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new InvalidArgumentError('--namespaces needs at least one namespace');
  return names;
}

const outputOption = (defaultOutput: Output) =>
  new Option('-o, --output <format>', 'table or tree (clusteradm’s)')
    .choices(['table', 'tree'])
    .default(defaultOutput);

const kubeconfigOption = () => new Option('--kubeconfig <path>', 'kubeconfig of the hub').env('KUBECONFIG');

export function registerPlacementCommands(program: Command, get: Command): void {
  get
    .command('clustersets')
    .description('list ManagedClusterSets with their bound namespaces and clusters')
    .addOption(outputOption('table'))
    .addOption(kubeconfigOption())
    .action(async (opts: { output: Output; kubeconfig?: string }) => {
      const rows = await listClusterSets(kubeconfigFlag(opts.kubeconfig, 'hub'));
      if (opts.output === 'tree') {
        process.stdout.write(
          formatTree(
            'ManagedClusterSet',
            rows.map((r) => ({
              name: r.name,
              fields: {
                '.BoundNamespace': r.boundNamespaces,
                '.Status': r.status,
                '.ManagedNamespaces': r.managedNamespaces,
                '.Clusters': r.clusters,
              },
            })),
          ),
        );
        return;
      }
      process.stdout.write(
        formatTable(
          ['NAME', 'BOUND NAMESPACES', 'STATUS', 'MANAGED NAMESPACES'],
          rows.map((r) => [r.name, r.boundNamespaces.join(','), r.status, r.managedNamespaces.join(',')]),
        ),
      );
    });

  get
    .command('placements [name]')
    .description('list Placements and the clusters their PlacementDecisions selected')
    .option('-n, --namespace <ns>', 'only this namespace (default: all)')
    .addOption(outputOption('tree'))
    .addOption(kubeconfigOption())
    .action(
      async (name: string | undefined, opts: { namespace?: string; output: Output; kubeconfig?: string }) => {
        const rows = await listPlacements(kubeconfigFlag(opts.kubeconfig, 'hub'), opts.namespace, name);
        if (opts.output === 'table') {
          process.stdout.write(
            formatTable(
              ['NAME', 'STATUS', 'REASON', 'SELECTEDCLUSTERS'],
              rows.map((r) => [
                r.name,
                r.firstConditionStatus,
                r.firstConditionReason,
                goValue(r.selectedClusters),
              ]),
            ),
          );
          return;
        }
        process.stdout.write(
          formatTree(
            'Placement',
            rows.map((r) => ({
              name: r.name,
              fields: {
                '.Namespace': r.namespace,
                '.ClusterSet': r.clusterSets,
                '.Status.NumberOfSelectedClusters': r.numberOfSelectedClusters,
                '.Status.Conditions.PlacementConditionSatisfied': r.satisfied,
                '.Status.Conditions.PlacementConditionMisconfigured': r.misconfigured,
                '.PlacementDecision':
                  r.selectedClusters.length > 0 ? r.selectedClusters : ['NoClusterSelected'],
              },
            })),
          ),
        );
      },
    );

  const clusterset = program
    .command('clusterset')
    .description('bind cluster sets to namespaces, put clusters in sets');

  clusterset
    .command('bind <set>')
    .description('let Placements in a namespace select the clusters of a set (a ManagedClusterSetBinding)')
    .option('-n, --namespace <ns>', 'namespace to bind the set to', 'default')
    .addOption(kubeconfigOption())
    .action(async (set: string, opts: { namespace: string; kubeconfig?: string }) => {
      const result = await bindClusterSet(kubeconfigFlag(opts.kubeconfig, 'hub'), set, opts.namespace);
      process.stdout.write(
        result === 'created'
          ? `clusterset ${set} bound to namespace ${opts.namespace}\n`
          : `clusterset ${set} is already bound to namespace ${opts.namespace}\n`,
      );
    });

  clusterset
    .command('unbind <set>')
    .description('remove the ManagedClusterSetBinding of a set from a namespace')
    .option('-n, --namespace <ns>', 'namespace to unbind the set from', 'default')
    .addOption(kubeconfigOption())
    .action(async (set: string, opts: { namespace: string; kubeconfig?: string }) => {
      const removed = await unbindClusterSet(kubeconfigFlag(opts.kubeconfig, 'hub'), set, opts.namespace);
      process.stdout.write(
        removed
          ? `clusterset ${set} unbound from namespace ${opts.namespace}\n`
          : `clusterset ${set} was not bound to namespace ${opts.namespace}\n`,
      );
    });

  clusterset
    .command('set <set>')
    .description('put clusters into a set (their cluster.open-cluster-management.io/clusterset label)')
    .option('--clusters <c1,c2>', 'clusters to move into the set', clusterList)
    .option('--namespaces <n1,n2>', 'namespaces the set asks its clusters to manage', namespaceList)
    .addOption(kubeconfigOption())
    .action(
      async (set: string, opts: { clusters?: string[]; namespaces?: string[]; kubeconfig?: string }) => {
        const result = await setClusterSetMembers(
          kubeconfigFlag(opts.kubeconfig, 'hub'),
          set,
          opts.clusters ?? [],
          opts.namespaces ?? [],
        );
        for (const c of result.moved) process.stdout.write(`cluster ${c} is now in clusterset ${set}\n`);
        for (const c of result.unchanged)
          process.stdout.write(`cluster ${c} is already in clusterset ${set}\n`);
        for (const n of result.addedNamespaces)
          process.stdout.write(`clusterset ${set} manages namespace ${n}\n`);
      },
    );
}
