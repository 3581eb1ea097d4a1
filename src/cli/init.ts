// `tether init`: installs tether into a hub cluster like `clusteradm init` — the OCM hub CRDs,
// admission policies and bootstrap identity, then (unless --bootstrap-only) the hub controllers,
// proxy-server and gateway as Deployments in open-cluster-management-hub with their RBAC,
// certificates and the ClusterGateway APIService (the controllers offer the built-in addons: their
// agents run the same image, cluster-proxy's dial the agent endpoint), with cluster-proxy's
// user-server in the gateway's pods behind Service cluster-proxy-addon-user (--user-server-host /
// --user-server-node-port expose it, --connect-node-port the CONNECT / gRPC frontend) — and prints
// the `tether join` line (with a fresh bootstrap token) that managed clusters run. --dry-run /
// --output-file print the manifests instead.
import { writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { type Command, Option } from 'commander';
import {
  addonConfigAdmissionPolicyNames,
  installAddonConfigAdmission,
} from '../addon/hub/config/admission.ts';
import {
  type AddonConversionWebhook,
  crdNameOf,
  hubCrds,
  managedClusterAddOnResource,
} from '../api/index.ts';
import { InvalidArgumentError } from '../errors.ts';
import { toYaml } from '../install/apply.ts';
import { type AgentEndpointType, agentEndpointTypes } from '../install/hub.ts';
import {
  applyHubInstall,
  hubClientCaPem,
  inClusterAddonWebhook,
  planHubInstall,
  secretLookup,
  waitForHub,
} from '../install/hub-install.ts';
import { defaultImage } from '../install/image-ref.ts';
import { hubNames, hubNamespace, ports } from '../install/names.ts';
import { loadKubeconfig } from '../kube/kubeconfig.ts';
import { type PullPolicy, pullPolicies } from '../kube/workload.ts';
import { installCrds } from '../localenv/crds.ts';
import { createBootstrapToken, ensureBootstrapIdentity } from '../registration/bootstrap.ts';
import { createBootstrapTokenSecret } from '../registration/bootstrap-token.ts';
import { hubAdmissionPolicyNames, installHubAdmission } from '../registration/hub/admission-policies.ts';
import { parseDurationSeconds, positiveInt } from './options.ts';

export function clusterCaPem(kc: ReturnType<typeof loadKubeconfig>): string {
  const cluster = kc.getCurrentCluster();
  if (cluster?.caData) return Buffer.from(cluster.caData, 'base64').toString();
  throw new Error(
    'the hub kubeconfig has no certificate-authority-data; pass a kubeconfig with an embedded CA',
  );
}

interface InitFlags {
  kubeconfig: string;
  bootstrapTokenExpiration: string;
  useBootstrapToken: boolean;
  hubApiserver?: string;
  caOut: string;
  proxyServerCaOut: string;
  bootstrapOnly: boolean;
  image: string;
  imagePullPolicy: PullPolicy;
  replicas: number;
  agentEndpointType: AgentEndpointType;
  agentEndpointNodePort: number;
  proxyServerHost?: string;
  userServerHost?: string;
  userServerNodePort?: number;
  connectNodePort?: number;
  dryRun: boolean;
  outputFile?: string;
  wait: boolean;
  timeout: string;
}

export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description(
      'install tether into a hub: OCM CRDs, admission, bootstrap identity, and the hub controllers, proxy-server and gateway as Deployments; print the join command',
    )
    .requiredOption('--kubeconfig <path>', 'kubeconfig of the hub cluster', process.env.KUBECONFIG)
    .option(
      '--bootstrap-token-expiration <duration>',
      'lifetime of the printed bootstrap token (e.g. 24h, 90m)',
      '24h',
    )
    .option(
      '--use-bootstrap-token',
      'join with a Kubernetes bootstrap token (Secret bootstrap-token-<id> in kube-system, label app=cluster-manager, as clusteradm init --use-bootstrap-token makes) instead of a ServiceAccount token; the hub apiserver needs --enable-bootstrap-token-auth',
      false,
    )
    .option(
      '--hub-apiserver <url>',
      'hub apiserver URL managed clusters use (default: the kubeconfig server)',
    )
    .option('--ca-out <path>', 'where to write the hub CA for `tether join --ca-file`', 'hub-ca.crt')
    .option(
      '--proxy-server-ca-out <path>',
      'where to write the proxy-server CA for `tether join --proxy-server-ca-file`',
      'proxy-server-ca.crt',
    )
    .option(
      '--bootstrap-only',
      'install only the CRDs, admission policies and bootstrap identity (tether runs elsewhere, e.g. `tether up --processes`)',
      false,
    )
    .addOption(new Option('--image <ref>', 'tether image of the hub Deployments').default(defaultImage()))
    .addOption(
      new Option('--image-pull-policy <policy>', 'imagePullPolicy of the Deployments')
        .choices(pullPolicies)
        .default('IfNotPresent'),
    )
    .addOption(
      new Option('--replicas <n>', 'replicas of each hub Deployment')
        .default(1)
        .argParser(positiveInt('--replicas', 10)),
    )
    .addOption(
      new Option(
        '--agent-endpoint-type <type>',
        "how agents reach the proxy-server (Service type of 'tether-proxy-server-agents')",
      )
        .choices(agentEndpointTypes)
        .default('NodePort'),
    )
    .addOption(
      new Option('--agent-endpoint-node-port <port>', 'nodePort of the agent endpoint with NodePort')
        .default(31091)
        .argParser(positiveInt('--agent-endpoint-node-port', 65535)),
    )
    .option(
      '--proxy-server-host <host>',
      'the address agents dial the proxy-server at (a node address for NodePort, the load balancer for LoadBalancer); default: the hub apiserver host',
    )
    .option(
      '--user-server-host <host>',
      "the address clients reach cluster-proxy's user-server at (a node address with --user-server-node-port); the gateway's certificate covers it and ManagedServiceAccount kubeconfigs name it. Default: the in-cluster Service cluster-proxy-addon-user",
    )
    .addOption(
      new Option(
        '--user-server-node-port <port>',
        'make Service cluster-proxy-addon-user a NodePort with this port (30000-32767); default ClusterIP',
      ).argParser(positiveInt('--user-server-node-port', 65535)),
    )
    .addOption(
      new Option(
        '--connect-node-port <port>',
        'make the CONNECT / gRPC frontend (Service tether-proxy-server) a NodePort with this port (30000-32767): hub services outside the hub cluster reach clusters through it; default ClusterIP',
      ).argParser(positiveInt('--connect-node-port', 65535)),
    )
    .option('--dry-run', 'print the manifests instead of applying them', false)
    .option('--output-file <path>', 'write the manifests to this file instead of applying them')
    .option('--wait', 'wait until the hub Deployments are available', false)
    .option('--timeout <duration>', 'how long --wait waits', '5m')
    .action(async (opts: InitFlags) => {
      const expiration = parseDurationSeconds('--bootstrap-token-expiration', opts.bootstrapTokenExpiration);
      const timeoutMs = parseDurationSeconds('--timeout', opts.timeout) * 1000;
      const kc = loadKubeconfig(opts.kubeconfig, { proxyEnv: false });
      const server = opts.hubApiserver ?? kc.getCurrentCluster()?.server ?? '';
      const printOnly = opts.dryRun || opts.outputFile !== undefined;
      if (opts.bootstrapOnly) {
        if (printOnly)
          throw new InvalidArgumentError('--bootstrap-only applies; drop --dry-run/--output-file');
        await installBootstrapOnly(kc);
      } else {
        if (
          opts.agentEndpointType === 'NodePort' &&
          (opts.agentEndpointNodePort < 30000 || opts.agentEndpointNodePort > 32767)
        )
          throw new InvalidArgumentError(
            `--agent-endpoint-node-port must be in the NodePort range 30000-32767, got ${opts.agentEndpointNodePort}`,
          );
        if (opts.agentEndpointType === 'LoadBalancer' && !opts.proxyServerHost)
          throw new InvalidArgumentError(
            "--agent-endpoint-type LoadBalancer needs --proxy-server-host: the load balancer's address agents dial",
          );
        for (const [flag, value] of [
          ['--user-server-node-port', opts.userServerNodePort],
          ['--connect-node-port', opts.connectNodePort],
        ] as const) {
          if (value !== undefined && (value < 30000 || value > 32767))
            throw new InvalidArgumentError(`${flag} must be in the NodePort range 30000-32767, got ${value}`);
        }
        if (opts.userServerNodePort !== undefined && !opts.userServerHost)
          throw new InvalidArgumentError(
            '--user-server-node-port needs --user-server-host: the node address clients (and ManagedServiceAccount kubeconfigs) reach it at',
          );
        const host = opts.proxyServerHost ?? new URL(server).hostname;
        const port =
          opts.agentEndpointType === 'NodePort' ? opts.agentEndpointNodePort : ports.proxyServerAgents;
        const agentEndpoint = `${host}:${port}`;
        const plan = await planHubInstall(
          {
            image: opts.image,
            imagePullPolicy: opts.imagePullPolicy,
            replicas: opts.replicas,
            agentEndpoint: { type: opts.agentEndpointType, nodePort: opts.agentEndpointNodePort },
            // the cluster-proxy addon's agents dial the same endpoint `tether join --proxy-server` names
            clusterProxyServer: agentEndpoint,
            proxyServerHosts: [host],
            ...(opts.userServerHost
              ? {
                  userServerHosts: [opts.userServerHost],
                  userServer: {
                    url: `https://${hostPort(opts.userServerHost, opts.userServerNodePort ?? ports.userServer)}`,
                    ...(opts.userServerNodePort ? { nodePort: opts.userServerNodePort } : {}),
                  },
                }
              : {}),
            ...(opts.connectNodePort ? { connectNodePort: opts.connectNodePort } : {}),
            agentCaPem: await hubClientCaPem(kc),
          },
          secretLookup(kc),
        );
        if (printOnly) {
          const yaml = toYaml(plan.objects);
          if (opts.outputFile) {
            writeFileSync(resolve(opts.outputFile), yaml, { mode: 0o600 });
            process.stderr.write(`wrote ${plan.objects.length} objects to ${opts.outputFile}\n`);
          } else process.stdout.write(yaml);
          return;
        }
        await applyHubInstall(kc, plan);
        process.stdout.write(
          `Installed the hub: ${plan.objects.length} objects; Deployments in ${hubNamespace}: tether-hub-controllers, tether-proxy-server, tether-gateway\n`,
        );
        writeFileSync(resolve(opts.proxyServerCaOut), plan.proxyServerCaPem, { mode: 0o644 });
        if (opts.wait) {
          await waitForHub(kc, timeoutMs);
          process.stdout.write('The hub Deployments are available.\n');
        }
        await printJoinLine(kc, opts, server, expiration, agentEndpoint);
        return;
      }
      await printJoinLine(kc, opts, server, expiration);
    });
}

/** host:port, with an IPv6 address in brackets. */
function hostPort(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

async function installBootstrapOnly(kc: ReturnType<typeof loadKubeconfig>): Promise<void> {
  // No hub Deployments here: the addon CRDs convert through the hub controllers' webhook only when
  // an earlier full `tether init` made its certificate (re-applying must not cut that off);
  // otherwise they serve both versions with conversion None.
  const kept = await secretLookup(kc)(hubNames.addonWebhookTls).catch(() => undefined);
  const webhookCa = kept?.['ca.crt'];
  const crds = hubCrds(
    webhookCa
      ? { addonConversionWebhook: inClusterAddonWebhook(Buffer.from(webhookCa).toString('base64')) }
      : { addonConversionWebhook: await installedAddonWebhook(kc) },
  );
  await installCrds(kc, crds);
  process.stdout.write(`Installed ${crds.length} CRDs: ${crds.map((c) => c.metadata?.name).join(', ')}\n`);
  await installHubAdmission(kc);
  await installAddonConfigAdmission(kc);
  const policies = [...hubAdmissionPolicyNames(), ...addonConfigAdmissionPolicyNames()];
  process.stdout.write(`Installed the hub admission policies: ${policies.join(', ')}\n`);
  await ensureBootstrapIdentity(kc);
}

/**
 * The conversion webhook the installed addon CRDs already use (e.g. the loopback one of a local
 * environment), so that re-applying them with --bootstrap-only does not switch them to conversion
 * None: with None, v1beta1 writers (OCM's Go addon-framework) lose status.registrations to pruning.
 */
async function installedAddonWebhook(
  kc: ReturnType<typeof loadKubeconfig>,
): Promise<AddonConversionWebhook | undefined> {
  const crd = await kc
    .makeApiClient(ApiextensionsV1Api)
    .readCustomResourceDefinition({ name: crdNameOf(managedClusterAddOnResource) })
    .catch(() => undefined);
  const conversion = crd?.spec.conversion;
  const clientConfig = conversion?.strategy === 'Webhook' ? conversion.webhook?.clientConfig : undefined;
  const caBundle = clientConfig?.caBundle;
  if (!clientConfig || !caBundle) return undefined;
  if (clientConfig.url) return { url: clientConfig.url, caBundle };
  const svc = clientConfig.service;
  if (svc) return { service: { namespace: svc.namespace, name: svc.name, port: svc.port ?? 443 }, caBundle };
  return undefined;
}

async function printJoinLine(
  kc: ReturnType<typeof loadKubeconfig>,
  opts: InitFlags,
  server: string,
  expiration: number,
  proxyServer?: string,
): Promise<void> {
  const { token } = opts.useBootstrapToken
    ? await createBootstrapTokenSecret(kc, expiration)
    : await createBootstrapToken(kc, expiration);
  const caPath = resolve(opts.caOut);
  writeFileSync(caPath, clusterCaPem(kc), { mode: 0o644 });
  const tunnel = proxyServer
    ? ` --proxy-server ${proxyServer} --proxy-server-ca-file ${resolve(opts.proxyServerCaOut)}`
    : '';
  process.stdout.write(
    [
      `Hub is ready. The bootstrap token expires in ${opts.bootstrapTokenExpiration}. On each managed cluster run:`,
      '',
      `  tether join --hub-token ${token} --hub-apiserver ${server} --ca-file ${caPath}${tunnel} --cluster-name <cluster_name> --kubeconfig <managed.kubeconfig>`,
      '',
      `Then accept it here:  tether accept --clusters <cluster_name> --kubeconfig ${opts.kubeconfig}`,
      '',
    ].join('\n'),
  );
}
