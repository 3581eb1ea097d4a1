// `tether hub`: every hub controller in one process ("singleton mode"): registration (accept, CSR
// approval, lease watchdog, taints, cleanup), the ManagedServiceAccount hub controller, the
// ManifestWork ttlSecondsAfterFinished collector, the placement hub (cluster sets, bindings; its own
// leader Lease placement-controller-lock), the add-on manager (install strategies and config
// references of every ClusterManagementAddOn; its own Lease addon-manager-controller-lock), with
// --addon-image tether's built-in addons (managed-serviceaccount, cluster-gateway, and with
// --cluster-proxy-* cluster-proxy: hub-addons.ts), and (with --webhook-tls-*) the addon group's
// v1alpha1 ⇄ v1beta1 CRD conversion webhook.
import { type Command, Option } from 'commander';
import { addonManagerLeaderLeaseName, startAddonHub } from '../addon/hub/index.ts';
import { startTemplateAddons } from '../addon/hub/template/controller.ts';
import type { AddonConversionWebhookServer } from '../addon/index.ts';
import { defaultClusterProfileNamespace } from '../api/clusterprofile.ts';
import { InvalidArgumentError } from '../errors.ts';
import { controllerMetricsRegistry } from '../kube/index.ts';
import { pullPolicies } from '../kube/workload.ts';
import { logger } from '../log.ts';
import { processMetrics, startOpsServer } from '../ops.ts';
import { placementLeaderLeaseName, startPlacementHub } from '../placement/hub/index.ts';
import {
  hubLeaderLeaseName,
  hubLeaderLeaseNamespace,
  startRegistrationHub,
} from '../registration/hub/index.ts';
import { startServiceAccountHub } from '../serviceaccount/index.ts';
import { startWorkGarbageCollector } from '../work/hub/index.ts';
import { readPemFlag } from './files.ts';
import { type BuiltinAddonFlags, builtinAddonOptions, startBuiltinAddons } from './hub-addons.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { opsBindOption, positiveInt } from './options.ts';
import { untilSignal } from './until-signal.ts';

interface HubFlags extends BuiltinAddonFlags {
  kubeconfig?: string;
  autoApprovedCsrUsers?: string;
  signerCert?: string;
  signerKey?: string;
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionLeaseName: string;
  opsPort: number;
  opsBindAddress: string;
  webhookBindAddress: string;
  webhookPort: number;
  webhookTlsCertFile?: string;
  webhookTlsPrivateKeyFile?: string;
  clusterProfiles: boolean;
  clusterProfileNamespace: string;
  gitopsclusterController: boolean;
}

/** OCM's cluster-manager-addon-webhook port; the CRDs' conversion service points here. */
export const DEFAULT_WEBHOOK_PORT = 9443;

/** Starts the conversion webhook when its certificate is given; a flag that cannot work stops startup. */
async function startWebhook(flags: HubFlags): Promise<AddonConversionWebhookServer | undefined> {
  if (Boolean(flags.webhookTlsCertFile) !== Boolean(flags.webhookTlsPrivateKeyFile))
    throw new InvalidArgumentError('--webhook-tls-cert-file and --webhook-tls-private-key-file go together');
  if (!flags.webhookTlsCertFile) return undefined;
  const certPem = readPemFlag('--webhook-tls-cert-file', flags.webhookTlsCertFile, 'CERTIFICATE');
  const keyPem = readPemFlag('--webhook-tls-private-key-file', flags.webhookTlsPrivateKeyFile, 'PRIVATE KEY');
  // Loaded only with a certificate: the webhook brings the X.509 library the controllers do without.
  const { startAddonConversionWebhook } = await import('../addon/index.ts');
  try {
    return await startAddonConversionWebhook({
      host: flags.webhookBindAddress,
      port: flags.webhookPort,
      certPem,
      keyPem,
      log: logger('addon-conversion-webhook'),
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
      throw new InvalidArgumentError(
        `--webhook-bind-address ${flags.webhookBindAddress} --webhook-port ${flags.webhookPort}: cannot listen (${code})`,
      );
    throw new InvalidArgumentError(
      `--webhook-tls-cert-file / --webhook-tls-private-key-file: not a usable certificate and key (${(err as Error).message})`,
    );
  }
}

export function registerHubCommand(program: Command): void {
  program
    .command('hub')
    .description(
      'run the hub controllers: registration, managed service accounts, finished-work collection, placement, the add-on manager, and the addon conversion webhook',
    )
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
    .addOption(
      new Option(
        '--cluster-profile-namespace <ns>',
        'namespace of the ClusterProfiles (multicluster.x-k8s.io) kept per ManagedCluster',
      )
        .env('TETHER_CLUSTER_PROFILE_NAMESPACE')
        .default(defaultClusterProfileNamespace),
    )
    .option('--no-cluster-profiles', 'keep no ClusterProfiles')
    .addOption(
      new Option(
        '--gitopscluster-controller',
        'register the clusters of GitOpsClusters with Argo CD (writes Secrets in the Argo CD namespace: grant the hub identity that first)',
      ).env('TETHER_GITOPSCLUSTER_CONTROLLER'),
    )
    .option('--no-leader-elect', 'run without leader election (one replica only)')
    .addOption(
      new Option('--leader-election-namespace <ns>', "namespace of the leader Lease (OCM's)")
        .env('TETHER_LEADER_ELECTION_NAMESPACE')
        .default(hubLeaderLeaseNamespace),
    )
    .addOption(
      new Option(
        '--leader-election-lease-name <name>',
        "name of the leader Lease (OCM's registration controller)",
      )
        .env('TETHER_LEADER_ELECTION_LEASE_NAME')
        .default(hubLeaderLeaseName),
    )
    .addOption(
      new Option('--ops-port <port>', '/healthz, /readyz, /metrics (0 = random)')
        .env('TETHER_OPS_PORT')
        .default(8096)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(opsBindOption())
    .addOption(
      new Option('--webhook-bind-address <ip>', 'address the addon conversion webhook listens on')
        .env('TETHER_WEBHOOK_BIND_ADDRESS')
        .default('0.0.0.0'),
    )
    .addOption(
      new Option('--webhook-port <port>', 'port of the addon conversion webhook (0 = random)')
        .env('TETHER_WEBHOOK_PORT')
        .default(DEFAULT_WEBHOOK_PORT)
        .argParser(positiveInt('--webhook-port', 65535)),
    )
    .addOption(
      new Option(
        '--webhook-tls-cert-file <path>',
        'serving certificate of the addon conversion webhook (POST /convert); without it no webhook is served',
      ).env('TETHER_WEBHOOK_TLS_CERT_FILE'),
    )
    .addOption(
      new Option('--webhook-tls-private-key-file <path>', 'key of --webhook-tls-cert-file').env(
        'TETHER_WEBHOOK_TLS_PRIVATE_KEY_FILE',
      ),
    )
    .addOption(
      new Option(
        '--addon-image <ref>',
        "tether image the built-in addons' agents run on managed clusters; without it the built-in addons are not offered",
      ).env('TETHER_ADDON_IMAGE'),
    )
    .addOption(
      new Option('--addon-image-pull-policy <policy>', "imagePullPolicy of the addon agents' Deployments")
        .env('TETHER_ADDON_IMAGE_PULL_POLICY')
        .choices(pullPolicies),
    )
    .addOption(
      new Option(
        '--cluster-proxy-server <host:port>',
        "the proxy-server's agent endpoint as managed clusters reach it (the cluster-proxy addon's agents dial it)",
      ).env('TETHER_CLUSTER_PROXY_SERVER'),
    )
    .addOption(
      new Option(
        '--cluster-proxy-ca-file <path>',
        "CA that verifies the proxy-server's certificate (tether-proxy-server-ca); cluster-proxy is offered only with it and --cluster-proxy-server",
      ).env('TETHER_CLUSTER_PROXY_CA_FILE'),
    )
    .addOption(
      new Option(
        '--user-server-url <url>',
        "cluster-proxy's user-server as hub clients reach it (https://host:port): ManagedServiceAccount token Secrets get a kubeconfig for <url>/<cluster>",
      ).env('TETHER_USER_SERVER_URL'),
    )
    .addOption(
      new Option(
        '--user-server-ca-file <path>',
        "CA that verifies the user-server (the gateway's serving CA); goes with --user-server-url",
      ).env('TETHER_USER_SERVER_CA_FILE'),
    )
    .action(async (flags: HubFlags) => {
      if (Boolean(flags.signerCert) !== Boolean(flags.signerKey))
        throw new InvalidArgumentError('--signer-cert and --signer-key go together');
      const addonOptions = builtinAddonOptions(flags);
      const hub = kubeconfigFlag(flags.kubeconfig, 'hub');
      const log = logger('hub');
      const webhook = await startWebhook(flags);
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
        leaderElection: flags.leaderElect
          ? { namespace: flags.leaderElectionNamespace, name: flags.leaderElectionLeaseName }
          : false,
        log: logger('registration-hub'),
      });
      // Its own Lease, so its leader can differ from the registration hub's (as OCM's two Deployments).
      const placement = await startPlacementHub({
        hubKubeConfig: hub,
        leaderElection: flags.leaderElect
          ? { namespace: flags.leaderElectionNamespace, name: placementLeaderLeaseName }
          : false,
        clusterProfiles: flags.clusterProfiles ? { namespace: flags.clusterProfileNamespace } : false,
        gitOpsClusters: flags.gitopsclusterController ?? false,
        log: logger('placement-hub'),
      });
      const addons = await startAddonHub({
        hubKubeConfig: hub,
        leaderElection: flags.leaderElect
          ? { namespace: flags.leaderElectionNamespace, name: addonManagerLeaderLeaseName }
          : false,
        log: logger('addon-hub'),
      });
      const builtinAddons = addonOptions
        ? await startBuiltinAddons({
            hubKubeConfig: hub,
            options: addonOptions,
            leaderElection: flags.leaderElect ? { namespace: flags.leaderElectionNamespace } : false,
            log: logger('builtin-addons'),
          })
        : undefined;
      // add-ons defined by an AddOnTemplate (`clusteradm addon create`)
      const templateAddons = startTemplateAddons({
        hubKubeConfig: hub,
        leaderElection: flags.leaderElect ? { namespace: flags.leaderElectionNamespace } : false,
        log: logger('addon-template'),
      });
      if (!builtinAddons)
        log.info('built-in addons not offered: --addon-image (the image their agents run) is not given');
      const serviceaccounts = await startServiceAccountHub({
        hubKubeConfig: hub,
        log: logger('serviceaccount-hub'),
      });
      // Deleting a finished work is idempotent, so every replica runs the collector (no leader needed).
      const workCollector = startWorkGarbageCollector({ hubKubeConfig: hub, log: logger('work-gc') });
      const ops = await startOpsServer({
        host: flags.opsBindAddress,
        port: flags.opsPort,
        // per controller: queue depth, adds, retries, reconcile count/errors/latency, active workers
        registries: [processMetrics(), controllerMetricsRegistry],
        ready: () => ({
          ok: true,
          detail: registration.isLeader() ? 'leading' : 'standing by (another replica leads)',
        }),
      });
      log.info(
        {
          opsPort: ops.port,
          webhookPort: webhook?.port,
          identity: registration.identity,
          builtinAddons: builtinAddons?.names ?? [],
        },
        webhook
          ? 'hub started'
          : 'hub started (no addon conversion webhook: --webhook-tls-cert-file not given)',
      );
      await untilSignal();
      await Promise.all([
        registration.stop(),
        placement.stop(),
        addons.stop(),
        builtinAddons?.stop(),
        templateAddons.stop(),
        serviceaccounts.stop(),
        workCollector.stop(),
        webhook?.close(),
      ]);
      await ops.close();
    });
}
