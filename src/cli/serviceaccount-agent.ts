// `tether serviceaccount-agent`: the ManagedServiceAccount agent (src/serviceaccount/agent) alone,
// as the managed-serviceaccount addon runs it: its hub credential is the addon's own kubeconfig
// (`managed-serviceaccount-hub-kubeconfig`, kept fresh by the registration agent; client-node
// re-reads the certificate files it names, so a rotation needs no restart), its managed-cluster
// credential the pod's ServiceAccount. `tether agent` runs the same agent with the cluster's
// registration identity instead. Every flag can also come from a TETHER_* environment variable.
import type { Command } from 'commander';
import { addonAgentNamespace } from '../api/index.ts';
import { InvalidArgumentError } from '../errors.ts';
import { controllerMetricsRegistry, loadKubeconfig, setForwardProxyCa } from '../kube/index.ts';
import { logger } from '../log.ts';
import { processMetrics, startOpsServer } from '../ops.ts';
import {
  checkKubeconfigServerUrl,
  type ServiceAccountAgentOptions,
  startServiceAccountAgent,
} from '../serviceaccount/index.ts';
import { readPemFlag } from './files.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { envOption, opsBindOption, positiveInt } from './options.ts';
import { untilSignal } from './until-signal.ts';

interface ServiceAccountAgentFlags {
  clusterName: string;
  hubKubeconfig: string;
  kubeconfig?: string;
  installNamespace: string;
  kubeconfigServerUrl?: string;
  kubeconfigCaFile?: string;
  proxyCaFile?: string;
  opsPort: number;
  opsBindAddress: string;
}

/**
 * --kubeconfig-server-url / --kubeconfig-ca-file as agent options: the URL https:// without query
 * or fragment, the CA a PEM certificate and only with the URL (it is that server's CA).
 */
export function kubeconfigEndpointFlags(flags: {
  kubeconfigServerUrl?: string;
  kubeconfigCaFile?: string;
}): Pick<ServiceAccountAgentOptions, 'kubeconfigServerUrl' | 'kubeconfigCaPem'> {
  if (!flags.kubeconfigServerUrl) {
    if (flags.kubeconfigCaFile)
      throw new InvalidArgumentError(
        '--kubeconfig-ca-file goes with --kubeconfig-server-url: it is the CA of that server',
      );
    return {};
  }
  try {
    checkKubeconfigServerUrl(flags.kubeconfigServerUrl);
  } catch {
    throw new InvalidArgumentError(
      `--kubeconfig-server-url must be an https:// URL without credentials, query or fragment (e.g. the user-server's https://host:port/<cluster>), got "${flags.kubeconfigServerUrl}"`,
    );
  }
  return {
    kubeconfigServerUrl: flags.kubeconfigServerUrl,
    ...(flags.kubeconfigCaFile
      ? { kubeconfigCaPem: readPemFlag('--kubeconfig-ca-file', flags.kubeconfigCaFile, 'CERTIFICATE') }
      : {}),
  };
}

export function registerServiceAccountAgentCommand(program: Command): void {
  program
    .command('serviceaccount-agent')
    .description(
      'ManagedServiceAccount agent alone (the managed-serviceaccount addon): ServiceAccount tokens to hub Secrets',
    )
    .addOption(
      envOption(
        '--cluster-name <name>',
        'name of this cluster on the hub',
        'TETHER_CLUSTER_NAME',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--hub-kubeconfig <path>',
        "hub kubeconfig (the addon's: <install namespace>/managed-serviceaccount-hub-kubeconfig)",
        'TETHER_HUB_KUBECONFIG',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--kubeconfig <path>',
        'kubeconfig of this managed cluster (default: in a pod, its ServiceAccount)',
        'KUBECONFIG',
      ),
    )
    .addOption(
      envOption(
        '--install-namespace <ns>',
        'namespace of the ServiceAccounts it manages',
        'TETHER_INSTALL_NAMESPACE',
      ).default(addonAgentNamespace),
    )
    .addOption(
      envOption(
        '--kubeconfig-server-url <url>',
        "server of the token Secrets' kubeconfig key (default: this cluster's server as the agent sees it)",
        'TETHER_KUBECONFIG_SERVER_URL',
      ),
    )
    .addOption(
      envOption(
        '--kubeconfig-ca-file <path>',
        "CA the token Secrets' kubeconfig trusts for --kubeconfig-server-url (e.g. the user-server's); default: this cluster's CA",
        'TETHER_KUBECONFIG_CA_FILE',
      ),
    )
    .addOption(
      envOption(
        '--proxy-ca-file <path>',
        'CA bundle for TLS to an https:// forward proxy (the proxy itself: HTTPS_PROXY / NO_PROXY)',
        'TETHER_PROXY_CA_FILE',
      ),
    )
    .addOption(
      envOption(
        '--ops-port <port>',
        '/healthz, /readyz, /metrics (0 = a free port, logged)',
        'TETHER_OPS_PORT',
      )
        .default(0)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(opsBindOption())
    .action(async (flags: ServiceAccountAgentFlags) => {
      const log = logger('serviceaccount-agent', { cluster: flags.clusterName });
      // Flag mistakes fail here, before anything is read from a cluster or listens.
      const kubeconfigEndpoint = kubeconfigEndpointFlags(flags);
      setForwardProxyCa(
        flags.proxyCaFile ? readPemFlag('--proxy-ca-file', flags.proxyCaFile, 'CERTIFICATE') : undefined,
      );
      // The hub is reached the way the addon's environment says (HTTPS_PROXY from an
      // AddOnDeploymentConfig); the managed cluster directly.
      const hub = loadKubeconfig(flags.hubKubeconfig);
      const managed = kubeconfigFlag(flags.kubeconfig, 'managed cluster');
      let ready = false;
      const metrics = processMetrics();
      const ops = await startOpsServer({
        host: flags.opsBindAddress,
        port: flags.opsPort,
        registries: [metrics, controllerMetricsRegistry],
        ready: () => ({
          ok: ready,
          detail: ready ? 'watching ManagedServiceAccounts' : 'waiting for the first hub and cluster lists',
        }),
      });
      const agent = await startServiceAccountAgent({
        clusterName: flags.clusterName,
        hubKubeConfig: hub,
        managedKubeConfig: managed,
        installNamespace: flags.installNamespace,
        ...kubeconfigEndpoint,
        log,
      });
      agent.ready.then(
        (ok) => {
          ready = ok;
        },
        () => {},
      );
      log.info(
        { opsPort: ops.port, installNamespace: flags.installNamespace },
        'serviceaccount-agent started',
      );
      await untilSignal();
      await agent.stop();
      await ops.close();
    });
}
