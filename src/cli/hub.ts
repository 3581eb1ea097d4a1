// `tether hub`: every hub controller in one process ("singleton mode"): registration (accept, CSR
// approval, lease watchdog, taints, cleanup) and the ManagedServiceAccount hub controller.
import { type Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { logger } from '../log.ts';
import { startOpsServer } from '../ops.ts';
import { startRegistrationHub } from '../registration/hub/index.ts';
import { startServiceAccountHub } from '../serviceaccount/index.ts';
import { readPemFlag } from './files.ts';
import { kubeconfigFlag, opsBindOption, positiveInt } from './options.ts';
import { untilSignal } from './until-signal.ts';

interface HubFlags {
  kubeconfig?: string;
  autoApprovedCsrUsers?: string;
  signerCert?: string;
  signerKey?: string;
  leaderElect: boolean;
  opsPort: number;
  opsBindAddress: string;
}

export function registerHubCommand(program: Command): void {
  program
    .command('hub')
    .description('run the hub controllers: registration and managed service accounts')
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig of the hub').env('KUBECONFIG'))
    .addOption(
      new Option(
        '--auto-approved-csr-users <users>',
        'comma-separated users whose bootstrap CSRs are approved without `tether accept`',
      ).env('TETHER_AUTO_APPROVED_CSR_USERS'),
    )
    .addOption(
      new Option(
        '--signer-cert <path>',
        'built-in signer CA certificate (for distributions without a kube-apiserver-client signer)',
      ).env('TETHER_SIGNER_CERT'),
    )
    .addOption(new Option('--signer-key <path>', 'built-in signer CA key').env('TETHER_SIGNER_KEY'))
    .option('--no-leader-elect', 'run without leader election (one replica only)')
    .addOption(
      new Option('--ops-port <port>', '/healthz, /readyz, /metrics (0 = random)')
        .env('TETHER_OPS_PORT')
        .default(8096)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(opsBindOption())
    .action(async (flags: HubFlags) => {
      if (Boolean(flags.signerCert) !== Boolean(flags.signerKey))
        throw new InvalidArgumentError('--signer-cert and --signer-key go together');
      const hub = kubeconfigFlag(flags.kubeconfig, 'hub');
      const log = logger('hub');
      const registration = await startRegistrationHub({
        hubKubeConfig: hub,
        autoApprovedCsrUsers: (flags.autoApprovedCsrUsers ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        signer: flags.signerCert
          ? {
              certPem: readPemFlag('--signer-cert', flags.signerCert, 'CERTIFICATE'),
              keyPem: readPemFlag('--signer-key', flags.signerKey, 'PRIVATE KEY'),
            }
          : undefined,
        leaderElection: flags.leaderElect ? {} : false,
        log: logger('registration-hub'),
      });
      const serviceaccounts = await startServiceAccountHub({
        hubKubeConfig: hub,
        log: logger('serviceaccount-hub'),
      });
      const ops = await startOpsServer({
        host: flags.opsBindAddress,
        port: flags.opsPort,
        registries: [],
        ready: () => ({
          ok: true,
          detail: registration.isLeader() ? 'leading' : 'standing by (another replica leads)',
        }),
      });
      log.info({ opsPort: ops.port, identity: registration.identity }, 'hub started');
      await untilSignal();
      await Promise.all([registration.stop(), serviceaccounts.stop()]);
      await ops.close();
    });
}
