// `tether gateway` (the ClusterGateway aggregated apiserver as its own process, dialling managed
// clusters through a proxy-server's CONNECT frontend) and `tether kubeconfig` (a hub kubeconfig
// rewritten to reach one managed cluster through the gateway).
import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import {
  connectFrontendDialer,
  connectFrontendTunnelStatus,
  defaultGatewayMsaName,
  type GatewayIdentityMode,
  gatewayIdentityModes,
  gatewayKubeconfig,
  hubAdminsGroup,
  hubIdentityPrefix,
  issueGatewayServingCertificate,
  registerGatewayApiService,
  sharedTunnelWatches,
  startGateway,
  userServerPort,
} from '../gateway/index.ts';
import { logger } from '../log.ts';
import { startOpsServer } from '../ops.ts';
import { readPemFlag } from './files.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { opsBindOption, positiveInt } from './options.ts';
import { untilSignal } from './until-signal.ts';

interface GatewayFlags {
  kubeconfig?: string;
  bindAddress: string;
  port: number;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  register: boolean;
  serviceNamespace: string;
  serviceName: string;
  connectUrl: string;
  connectCaFile: string;
  connectCertFile: string;
  connectKeyFile: string;
  msaName: string;
  identity: GatewayIdentityMode;
  opsPort: number;
  opsBindAddress: string;
  userServerPort?: number;
  userServerBindAddress?: string;
  userServerTlsCertFile?: string;
  userServerTlsKeyFile?: string;
}

const env = (flags: string, description: string, name: string): Option =>
  new Option(flags, description).env(name);

/** The user-server's own serving certificate, if given; every user-server flag needs --user-server-port. */
export function userServerTlsOf(
  flags: Pick<
    GatewayFlags,
    'userServerPort' | 'userServerBindAddress' | 'userServerTlsCertFile' | 'userServerTlsKeyFile'
  >,
): { certPem: string; keyPem: string } | undefined {
  const { userServerTlsCertFile: cert, userServerTlsKeyFile: key } = flags;
  if (flags.userServerPort === undefined && (flags.userServerBindAddress || cert || key))
    throw new InvalidArgumentError('--user-server-bind-address/--user-server-tls-* need --user-server-port');
  if (!cert && !key) return undefined;
  if (!cert || !key)
    throw new InvalidArgumentError('give both --user-server-tls-cert-file and --user-server-tls-key-file');
  return {
    certPem: readPemFlag('--user-server-tls-cert-file', cert, 'CERTIFICATE'),
    keyPem: readPemFlag('--user-server-tls-key-file', key, 'PRIVATE KEY'),
  };
}

export function registerGatewayCommands(program: Command): void {
  program
    .command('gateway')
    .description(
      'serve the ClusterGateway aggregated API (cluster.core.oam.dev/v1alpha1) for the hub: clustergateways with ' +
        'proxy, health and tunnel, and the fleet console at /apis/cluster.core.oam.dev/v1alpha1/console/ (kubectl proxy)',
    )
    .addOption(env('--kubeconfig <path>', 'kubeconfig of the hub', 'KUBECONFIG'))
    .addOption(env('--bind-address <ip>', 'address to listen on', 'TETHER_BIND_ADDRESS').default('127.0.0.1'))
    .addOption(
      env('--port <port>', 'HTTPS port (0 = random)', 'TETHER_GATEWAY_PORT')
        .default(9443)
        .argParser(positiveInt('--port', 65535)),
    )
    .addOption(
      env(
        '--tls-cert-file <path>',
        'serving certificate (SAN <service>.<namespace>.svc); default: generated with --register',
        'TETHER_TLS_CERT_FILE',
      ),
    )
    .addOption(env('--tls-key-file <path>', 'serving key', 'TETHER_TLS_KEY_FILE'))
    .option(
      '--register',
      'generate a serving certificate and register Service + APIService v1alpha1.cluster.core.oam.dev pointing at this process (and ClusterRole tether:console-viewer)',
      false,
    )
    .addOption(
      env(
        '--service-namespace <ns>',
        'namespace of the registered Service',
        'TETHER_SERVICE_NAMESPACE',
      ).default('tether-gateway'),
    )
    .addOption(
      env('--service-name <name>', 'name of the registered Service', 'TETHER_SERVICE_NAME').default(
        'cluster-gateway',
      ),
    )
    .addOption(
      env(
        '--connect-url <url>',
        'CONNECT frontend of the proxy-server, e.g. https://127.0.0.1:8090',
        'TETHER_CONNECT_URL',
      ).makeOptionMandatory(),
    )
    .addOption(
      env(
        '--connect-ca-file <path>',
        'CA that verifies the CONNECT frontend',
        'TETHER_CONNECT_CA_FILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      env(
        '--connect-cert-file <path>',
        'proxy-client certificate for the CONNECT frontend',
        'TETHER_CONNECT_CERT_FILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      env('--connect-key-file <path>', 'proxy-client key', 'TETHER_CONNECT_KEY_FILE').makeOptionMandatory(),
    )
    .addOption(
      env(
        '--msa-name <name>',
        'ManagedServiceAccount whose token authenticates the gateway on managed clusters',
        'TETHER_MSA_NAME',
      ).default(defaultGatewayMsaName),
    )
    .addOption(
      env(
        '--identity <mode>',
        'who acts on managed clusters: "impersonate" = the hub caller as user cluster:hub:<user>, groups ' +
          'cluster:hub:<group> (the managed cluster\'s RBAC decides); "shared" = the gateway\'s own ' +
          'ServiceAccount for every caller (hub RBAC on clustergateways/proxy is then the only check, and ' +
          'whoever the hub lets through has all the rights of that account)',
        'TETHER_GATEWAY_IDENTITY',
      )
        .choices(gatewayIdentityModes)
        .default('impersonate'),
    )
    .addOption(
      env('--ops-port <port>', '/healthz, /readyz, /metrics (0 = random)', 'TETHER_OPS_PORT')
        .default(8097)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(opsBindOption())
    .addOption(
      env(
        '--user-server-port <port>',
        `also serve cluster-proxy's user-server (https://<host>:<port>/<cluster>/<apiserver path>, the caller's bearer token passed through; OCM's port ${userServerPort}); default: not served`,
        'TETHER_USER_SERVER_PORT',
      ).argParser(positiveInt('--user-server-port', 65535)),
    )
    .addOption(
      env(
        '--user-server-bind-address <ip>',
        'address the user-server listens on (default: --bind-address)',
        'TETHER_USER_SERVER_BIND_ADDRESS',
      ),
    )
    .addOption(
      env(
        '--user-server-tls-cert-file <path>',
        "the user-server's serving certificate (default: the gateway's)",
        'TETHER_USER_SERVER_TLS_CERT_FILE',
      ),
    )
    .addOption(env('--user-server-tls-key-file <path>', 'its key', 'TETHER_USER_SERVER_TLS_KEY_FILE'))
    .action(async (flags: GatewayFlags) => {
      if (!flags.register && !(flags.tlsCertFile && flags.tlsKeyFile)) {
        throw new InvalidArgumentError(
          'give --tls-cert-file and --tls-key-file, or --register to generate a serving certificate',
        );
      }
      const userServerTls = userServerTlsOf(flags);
      const hub = kubeconfigFlag(flags.kubeconfig, 'hub');
      const log = logger('gateway', { replica: hostname() });
      const generated = flags.tlsCertFile
        ? undefined
        : await issueGatewayServingCertificate({
            namespace: flags.serviceNamespace,
            serviceName: flags.serviceName,
          });
      const tls = generated
        ? { certPem: generated.certPem, keyPem: generated.keyPem }
        : {
            certPem: readPemFlag('--tls-cert-file', flags.tlsCertFile, 'CERTIFICATE'),
            keyPem: readPemFlag('--tls-key-file', flags.tlsKeyFile, 'PRIVATE KEY'),
          };
      const frontend = {
        url: flags.connectUrl,
        caPem: readPemFlag('--connect-ca-file', flags.connectCaFile, 'CERTIFICATE'),
        certPem: readPemFlag('--connect-cert-file', flags.connectCertFile, 'CERTIFICATE'),
        keyPem: readPemFlag('--connect-key-file', flags.connectKeyFile, 'PRIVATE KEY'),
      };
      const dial = connectFrontendDialer(frontend);
      const gateway = await startGateway({
        hubKubeConfig: hub,
        dial,
        // the tunnel subresource asks the same frontend with the same credentials
        tunnelStatus: sharedTunnelWatches(connectFrontendTunnelStatus(frontend)),
        host: flags.bindAddress,
        port: flags.port,
        tls,
        msaName: flags.msaName,
        identityMode: flags.identity,
        ...(flags.userServerPort !== undefined
          ? {
              userServer: {
                host: flags.userServerBindAddress ?? flags.bindAddress,
                port: flags.userServerPort,
                ...(userServerTls ? { tls: userServerTls } : {}),
              },
            }
          : {}),
        log,
      });
      if (flags.register) {
        if (!generated)
          throw new InvalidArgumentError(
            '--register generates its own serving certificate; drop --tls-cert-file/--tls-key-file',
          );
        await registerGatewayApiService(hub, {
          namespace: flags.serviceNamespace,
          serviceName: flags.serviceName,
          port: gateway.port,
          caPem: generated.caPem,
        });
      }
      const ops = await startOpsServer({
        host: flags.opsBindAddress,
        port: flags.opsPort,
        registries: [gateway.registry],
        ready: () => ({ ok: true, detail: `serving on ${gateway.port}` }),
      });
      log.info(
        {
          port: gateway.port,
          userServerPort: gateway.userServerPort,
          opsPort: ops.port,
          registered: flags.register,
        },
        'gateway ready',
      );
      await untilSignal();
      await gateway.stop();
      await ops.close();
    });

  program
    .command('kubeconfig')
    .description('print a kubeconfig that reaches a managed cluster through the hub gateway')
    .requiredOption('--cluster <name>', 'managed cluster')
    .option('--kubeconfig <path>', 'kubeconfig of the hub', process.env.KUBECONFIG)
    .addHelpText('after', `\n${managedRbacHint('<cluster>')}`)
    .action((opts: { cluster: string; kubeconfig?: string }) => {
      if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(opts.cluster))
        throw new InvalidArgumentError(`--cluster must be a cluster name, got "${opts.cluster}"`);
      process.stdout.write(gatewayKubeconfig(kubeconfigFlag(opts.kubeconfig, 'hub'), opts.cluster));
      // On stderr, so `tether kubeconfig … > c.kubeconfig` keeps the file clean.
      process.stderr.write(`${managedRbacHint(opts.cluster)}\n`);
    });
}

/** What a hub user needs to do anything on a managed cluster through the gateway, and how to grant it. */
export function managedRbacHint(cluster: string): string {
  const p = hubIdentityPrefix;
  return [
    `Through the gateway you act on ${cluster} as user "${p}<hub user>" in groups "${p}<hub group>".`,
    `Hub admins (group system:masters) are cluster-admin there: tether up binds ${hubAdminsGroup}.`,
    'Anyone else needs rights on both sides, e.g. read-only for hub user alice:',
    '  on the hub:',
    '    kubectl create clusterrole gateway-user --verb=get,create --resource=clustergateways.cluster.core.oam.dev/proxy',
    '    kubectl create clusterrolebinding alice-gateway-user --clusterrole=gateway-user --user=alice',
    `  on ${cluster}, delivered from the hub by a ManifestWork:`,
    `    kubectl create clusterrolebinding hub-alice-view --clusterrole=view --user=${p}alice --dry-run=client -o yaml > alice-view.yaml`,
    `    tether create work hub-alice-view -f alice-view.yaml --clusters ${cluster}`,
    `The hub decides who may reach ${cluster} (get: reads; create: creates, exec, port-forward, auth whoami/can-i;`,
    `update/patch/delete: the rest); ${cluster}'s RBAC decides what they may do there.`,
  ].join('\n');
}
