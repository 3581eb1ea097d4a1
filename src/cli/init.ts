// `tether init`: prepares a hub cluster like `clusteradm init` — installs the OCM hub CRDs, creates
// the bootstrap ServiceAccount with its narrow RBAC, and prints the `tether join` line (with a fresh
// bootstrap token) that managed clusters run.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { hubCrds } from '../api/index.ts';
import { loadKubeconfig } from '../kube/kubeconfig.ts';
import { installCrds } from '../localenv/crds.ts';
import { createBootstrapToken, ensureBootstrapIdentity } from '../registration/bootstrap.ts';
import { hubAdmissionPolicyNames, installHubAdmission } from '../registration/hub/admission-policies.ts';
import { parseDurationSeconds } from './options.ts';

export function clusterCaPem(kc: ReturnType<typeof loadKubeconfig>): string {
  const cluster = kc.getCurrentCluster();
  if (cluster?.caData) return Buffer.from(cluster.caData, 'base64').toString();
  throw new Error(
    'the hub kubeconfig has no certificate-authority-data; pass a kubeconfig with an embedded CA',
  );
}

export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description('prepare a hub: install the OCM CRDs, create the bootstrap identity, print the join command')
    .requiredOption('--kubeconfig <path>', 'kubeconfig of the hub cluster', process.env.KUBECONFIG)
    .option(
      '--bootstrap-token-expiration <duration>',
      'lifetime of the printed bootstrap token (e.g. 24h, 90m)',
      '24h',
    )
    .option(
      '--hub-apiserver <url>',
      'hub apiserver URL managed clusters use (default: the kubeconfig server)',
    )
    .option('--ca-out <path>', 'where to write the hub CA for `tether join --ca-file`', 'hub-ca.crt')
    .action(
      async (opts: {
        kubeconfig: string;
        bootstrapTokenExpiration: string;
        hubApiserver?: string;
        caOut: string;
      }) => {
        const expiration = parseDurationSeconds(
          '--bootstrap-token-expiration',
          opts.bootstrapTokenExpiration,
        );
        const kc = loadKubeconfig(opts.kubeconfig, { proxyEnv: false });
        const crds = hubCrds();
        await installCrds(kc, crds);
        process.stdout.write(
          `Installed ${crds.length} CRDs: ${crds.map((c) => c.metadata?.name).join(', ')}\n`,
        );
        await installHubAdmission(kc);
        process.stdout.write(
          `Installed the hub admission policies: ${hubAdmissionPolicyNames().join(', ')}\n`,
        );
        await ensureBootstrapIdentity(kc);
        const { token } = await createBootstrapToken(kc, expiration);
        const caPath = resolve(opts.caOut);
        writeFileSync(caPath, clusterCaPem(kc), { mode: 0o644 });
        const server = opts.hubApiserver ?? kc.getCurrentCluster()?.server ?? '';
        process.stdout.write(
          [
            `Hub is ready. The bootstrap token expires in ${opts.bootstrapTokenExpiration}. On each managed cluster run:`,
            '',
            `  tether join --hub-token ${token} --hub-apiserver ${server} --ca-file ${caPath} --cluster-name <cluster_name> --kubeconfig <managed.kubeconfig>`,
            '',
            'Then accept it here:  tether accept --clusters <cluster_name> --kubeconfig ' + opts.kubeconfig,
            '',
          ].join('\n'),
        );
      },
    );
}
