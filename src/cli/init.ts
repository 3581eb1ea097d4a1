// `tether init`: prepares a hub cluster (installs the OCM hub CRDs and waits until they are served).
import type { Command } from 'commander';
import { hubCrds } from '../api/index.ts';
import { loadKubeconfig } from '../kube/kubeconfig.ts';
import { installCrds } from '../localenv/crds.ts';

export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description('install the OCM hub CRDs into the hub cluster and wait until they are Established')
    .requiredOption('--kubeconfig <path>', 'kubeconfig of the hub cluster', process.env.KUBECONFIG)
    .action(async (opts: { kubeconfig: string }) => {
      const kc = loadKubeconfig(opts.kubeconfig);
      const crds = hubCrds();
      await installCrds(kc, crds);
      process.stdout.write(
        `Installed ${crds.length} CRDs: ${crds.map((c) => c.metadata?.name).join(', ')}\n`,
      );
    });
}
