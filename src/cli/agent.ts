// `tether agent`: every managed-cluster component in one process ("singleton mode", like OCM's
// klusterlet): the registration agent joins the hub and keeps the cluster's certificate fresh; the
// work agent and the ManagedServiceAccount agent run with that certificate and are restarted with
// the new one whenever it rotates; the proxy-agent (with --proxy-server) rotates in place: tunnels
// with the new certificate first, then the old ones drain. /metrics serves the proxy-agent's
// tether_agent_* series and the process metrics from the start (before the hub issues a cert).
// With --in-process-addons it also hosts the built-in add-ons' agents, each with the add-on's own
// hub credential (src/addon/inprocess, src/cli/agent-addons.ts).
import type { KubeConfig } from '@kubernetes/client-node';
import { type Command, Option } from 'commander';
import type { InProcessAddonHost } from '../addon/inprocess/host.ts';
import { defaultAddonLeaseDurationSeconds } from '../addon/sdk/agent.ts';
import { InProcessAddon } from '../api/addon-in-process.ts';
import { agentNamespace } from '../api/index.ts';
import { InvalidArgumentError } from '../errors.ts';
import { controllerMetricsRegistry, setForwardProxyCa } from '../kube/index.ts';
import { logger } from '../log.ts';
import { processMetrics, startOpsServer } from '../ops.ts';
import type { AgentTls, ProxyAgent } from '../proxy-agent/agent.ts';
import { tunnelForwardProxy } from '../proxy-agent/hub-forward-proxy.ts';
import { parseExport, parseHostPort, targetPolicy } from '../proxy-agent/targets.ts';
import { addonLeaseSyncIntervalMs } from '../registration/agent/addon/lease-health.ts';
import {
  type RegistrationAgent,
  resolveAgentName,
  startRegistrationAgent,
} from '../registration/agent/index.ts';
import { checkInProcessAddons, inProcessAddonNames, startAddonHost } from './agent-addons.ts';
import { readPemFlag } from './files.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { opsBindOption, periodSeconds, positiveInt } from './options.ts';
import { untilSignal } from './until-signal.ts';

const collect = (value: string, prev: string[] = []): string[] => [
  ...prev,
  ...value.split(',').filter(Boolean),
];

interface AgentFlags {
  clusterName: string;
  agentName?: string;
  kubeconfig?: string;
  spokeKubeconfig?: string;
  bootstrapKubeconfig?: string;
  agentNamespace: string;
  proxyUrl?: string;
  leaseDuration: number;
  maxCustomClusterClaims: number;
  work: boolean;
  serviceaccount: boolean;
  addonRegistration: boolean;
  addonLeaseHealth: boolean;
  addonLeaseDuration: number;
  addonLeaseSyncInterval: number;
  statusSyncInterval: number;
  proxyServer?: string[];
  hubCaFile?: string;
  proxyCaFile?: string;
  kubeApiserver?: string;
  export?: string[];
  opsPort: number;
  opsBindAddress: string;
  drainTimeout: number;
  inProcessAddons?: string[];
}

interface Stoppable {
  stop(): Promise<void>;
}

function pem(data: string | undefined, what: string): string {
  if (!data) throw new InvalidArgumentError(`the hub kubeconfig has no embedded ${what}`);
  return Buffer.from(data, 'base64').toString('utf8');
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      'run every managed-cluster component: registration, work, managed service accounts, proxy-agent',
    )
    .addOption(
      new Option('--cluster-name <name>', 'name of this cluster on the hub')
        .env('TETHER_CLUSTER_NAME')
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--agent-name <name>',
        'this agent (certificate CN suffix); default: the one kept in hub-kubeconfig-secret, else a new random one',
      ).env('TETHER_AGENT_NAME'),
    )
    .addOption(
      new Option(
        '--kubeconfig <path>',
        'kubeconfig of this managed cluster; with --spoke-kubeconfig, of the hosting cluster that keeps the agent namespace (hosted mode)',
      ).env('KUBECONFIG'),
    )
    .addOption(
      new Option(
        '--spoke-kubeconfig <path>',
        "hosted mode (OCM's flag): kubeconfig of the managed cluster, which the agent runs outside of; its Secrets stay on the --kubeconfig cluster",
      ).env('TETHER_SPOKE_KUBECONFIG'),
    )
    .addOption(
      new Option(
        '--bootstrap-kubeconfig <path>',
        `bootstrap hub kubeconfig file (default: Secret bootstrap-hub-kubeconfig)`,
      ).env('TETHER_BOOTSTRAP_KUBECONFIG'),
    )
    .addOption(
      new Option('--agent-namespace <ns>', 'namespace for the agent secrets')
        .env('TETHER_AGENT_NAMESPACE')
        .default(agentNamespace),
    )
    .addOption(
      new Option('--proxy-url <url>', 'HTTP CONNECT forward proxy for every hub connection').env(
        'TETHER_PROXY_URL',
      ),
    )
    .addOption(
      new Option('--lease-duration <seconds>', 'ManagedCluster leaseDurationSeconds')
        .default(60)
        .argParser(positiveInt('--lease-duration', 3600)),
    )
    .addOption(
      new Option('--max-custom-cluster-claims <n>', 'custom ClusterClaims synced to the hub')
        .default(20)
        .argParser(positiveInt('--max-custom-cluster-claims', 1000)),
    )
    .option('--no-work', 'do not run the ManifestWork agent')
    .option('--no-serviceaccount', 'do not run the ManagedServiceAccount agent')
    .addOption(
      // the work agent's default (30 s), repeated here: the work agent loads only when it runs
      new Option(
        '--status-sync-interval <seconds>',
        'how often the work agent applies each ManifestWork again and refreshes its status (conditions, feedback)',
      )
        .default(30)
        .argParser(periodSeconds('--status-sync-interval', 3600)),
    )
    .option(
      '--no-addon-registration',
      'do not register add-on agents (per-add-on CSRs and <addon>-hub-kubeconfig secrets)',
    )
    .option('--no-addon-lease-health', "do not report Lease-mode add-ons' Available from their leases")
    .addOption(
      new Option(
        '--addon-lease-duration <seconds>',
        "add-on agents' lease duration: a lease not renewed for 5 of these makes its add-on Available False",
      )
        .default(defaultAddonLeaseDurationSeconds)
        .argParser(periodSeconds('--addon-lease-duration', 3600)),
    )
    .addOption(
      new Option('--addon-lease-sync-interval <seconds>', "how often every add-on's lease is looked at")
        .default(addonLeaseSyncIntervalMs / 1000)
        .argParser(periodSeconds('--addon-lease-sync-interval', 3600)),
    )
    .addOption(
      new Option(
        '--proxy-server <address>',
        'also run the proxy-agent: proxy-server host:port or wss:// URL (repeatable)',
      )
        .env('TETHER_PROXY_SERVER')
        .argParser(collect),
    )
    .addOption(
      new Option('--hub-ca-file <path>', 'CA that verifies the proxy-server (default: the hub CA)').env(
        'TETHER_HUB_CA_FILE',
      ),
    )
    .addOption(
      new Option(
        '--proxy-ca-file <path>',
        'CA bundle for TLS to an https:// forward proxy (hub API calls and the tunnel)',
      ).env('TETHER_PROXY_CA_FILE'),
    )
    .addOption(
      new Option(
        '--kube-apiserver <host:port>',
        'this cluster apiserver for the tunnel (default: from --kubeconfig)',
      ).env('TETHER_KUBE_APISERVER'),
    )
    .addOption(
      new Option('--export <name=host:port>', 'services the hub may reach through the tunnel (repeatable)')
        .env('TETHER_EXPORT')
        .argParser(collect),
    )
    .addOption(
      new Option(
        '--in-process-addons <names>',
        `built-in add-ons whose agents run in this process, each with its own hub identity, instead of a Deployment each: ${inProcessAddonNames.join(', ')} (managed-serviceaccount here replaces the ManagedServiceAccount agent that runs as the cluster)`,
      )
        .env('TETHER_IN_PROCESS_ADDONS')
        .argParser(collect),
    )
    .addOption(
      // Default 0: two agents on one host (one per managed cluster) must not collide; the bound
      // port is logged. In a pod the install passes a fixed --ops-port for the probes.
      new Option('--ops-port <port>', '/healthz, /readyz, /metrics (default 0 = a free port, logged)')
        .env('TETHER_OPS_PORT')
        .default(0)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(opsBindOption())
    .addOption(
      new Option(
        '--drain-timeout <seconds>',
        'on SIGTERM, how long open tunnel streams (watches, exec) may go on after the GOAWAY (0 = cut at once)',
      )
        .env('TETHER_DRAIN_TIMEOUT')
        .default(20)
        .argParser(positiveInt('--drain-timeout', 3600)),
    )
    .action(async (flags: AgentFlags) => {
      await runAgent(flags);
    });
}

async function runAgent(flags: AgentFlags): Promise<void> {
  const inProcessAddons = checkInProcessAddons(flags.inProcessAddons ?? []);
  if (inProcessAddons.length > 0 && !flags.addonRegistration)
    throw new InvalidArgumentError(
      '--in-process-addons needs add-on registration: the hosted agents run with the credentials it writes (drop --no-addon-registration)',
    );
  // one ManagedServiceAccount agent per cluster: the add-on's, when this process hosts it
  if (inProcessAddons.includes(InProcessAddon.ManagedServiceAccount)) flags.serviceaccount = false;
  // Hosted mode: the agent's own namespace and Secrets on the hosting cluster, everything it
  // reports and applies on the managed cluster (the spoke).
  const agentKc = kubeconfigFlag(
    flags.kubeconfig,
    flags.spokeKubeconfig ? 'hosting cluster' : 'managed cluster',
  );
  const managed = flags.spokeKubeconfig ? kubeconfigFlag(flags.spokeKubeconfig, 'managed cluster') : agentKc;
  const log0 = logger('agent', { cluster: flags.clusterName });
  const exportsList = (flags.export ?? []).map(parseExport);
  const managedServer = new URL(managed.getCurrentCluster()?.server ?? '');
  const apiserver = parseHostPort(
    flags.kubeApiserver ?? `${managedServer.hostname}:${managedServer.port || '443'}`,
    '--kube-apiserver',
  );
  const proxyCaPem = flags.proxyCaFile
    ? readPemFlag('--proxy-ca-file', flags.proxyCaFile, 'CERTIFICATE')
    : undefined;
  // The same proxy CA serves the hub API clients (client-node) and the proxy-agent's tunnel.
  setForwardProxyCa(proxyCaPem);
  const hubCaOverride = flags.hubCaFile
    ? readPemFlag('--hub-ca-file', flags.hubCaFile, 'CERTIFICATE')
    : undefined;

  let components: Stoppable[] = [];
  let proxyAgent: ProxyAgent | undefined;
  let registration: RegistrationAgent | undefined;
  let addonHost: InProcessAddonHost | undefined;
  let chain: Promise<void> = Promise.resolve();
  let stopping = false;

  // One registry for the process; the proxy-agent's series exist before it first runs.
  const metrics = processMetrics();
  const proxyServers = flags.proxyServer ?? [];
  // Each component's code is loaded only when it runs (--no-work, --no-serviceaccount, no --proxy-server).
  const tunnel =
    proxyServers.length > 0
      ? await Promise.all([import('../proxy-agent/agent.ts'), import('../proxy-agent/metrics.ts')])
      : undefined;
  const proxyMetrics = tunnel?.[1].createProxyAgentMetrics(metrics);
  const { startWorkAgent } = flags.work ? await import('../work/agent/index.ts') : {};
  const { startServiceAccountAgent } = flags.serviceaccount ? await import('../serviceaccount/index.ts') : {};

  // First, so a taken port stops start-up before anything talks to the hub.
  const ops = await startOpsServer({
    host: flags.opsBindAddress,
    port: flags.opsPort,
    registries: [metrics, controllerMetricsRegistry],
    ready: () => {
      const hub = registration?.hubKubeConfig() !== undefined;
      const tunnel = proxyAgent
        ? proxyAgent.readiness()
        : proxyMetrics
          ? { ok: false, detail: 'proxy-agent waits for a hub certificate' }
          : { ok: true, detail: 'no proxy-server configured' };
      return {
        ok: hub && tunnel.ok,
        detail: `${hub ? 'joined the hub' : 'waiting for a hub certificate'}; ${tunnel.detail}`,
      };
    },
  });

  log0.info({ opsAddress: `${flags.opsBindAddress}:${ops.port}` }, 'ops endpoint listening');
  // Before any hub-facing component: the work agent and the proxy-agent carry the same name.
  const agentName =
    flags.agentName ??
    (await resolveAgentName({
      agentKubeConfig: agentKc,
      clusterName: flags.clusterName,
      agentNamespace: flags.agentNamespace,
      log: log0,
    }));
  const log = log0.child({ agent: agentName });

  const proxyTls = (hub: KubeConfig): AgentTls => {
    const user = hub.getCurrentUser();
    return {
      certPem: pem(user?.certData, 'client certificate'),
      keyPem: pem(user?.keyData, 'client key'),
      hubCaPem: hubCaOverride ?? pem(hub.getCurrentCluster()?.caData, 'hub CA'),
    };
  };

  /** First credential: start the proxy-agent. Later ones: rotate it in place (drain, not cut). */
  const updateProxyAgent = async (hub: KubeConfig): Promise<void> => {
    if (!tunnel || !proxyMetrics) return;
    const tls = proxyTls(hub);
    if (proxyAgent) {
      await proxyAgent.rotate(tls);
      return;
    }
    const hubCluster = hub.getCurrentCluster();
    const way = tunnelForwardProxy(
      { proxyUrl: flags.proxyUrl, proxyCaPem },
      {
        proxyUrl: hubCluster?.proxyUrl,
        caPem: hubCluster?.caData && Buffer.from(hubCluster.caData, 'base64').toString('utf8'),
      },
    );
    proxyAgent = new tunnel[0].ProxyAgent({
      cluster: flags.clusterName,
      agentId: agentName,
      servers: proxyServers,
      tls,
      resolveTarget: targetPolicy(apiserver, exportsList),
      proxyUrl: way.proxyUrl,
      proxyCaPem: way.proxyCa,
      metrics: proxyMetrics,
      log: logger('proxy-agent', { cluster: flags.clusterName }),
    });
    proxyAgent.start();
  };

  const startComponents = async (hub: KubeConfig): Promise<void> => {
    const next: Stoppable[] = [];
    if (startWorkAgent)
      next.push(
        await startWorkAgent({
          clusterName: flags.clusterName,
          agentId: agentName,
          hubKubeConfig: hub,
          managedKubeConfig: managed,
          // the work agent's Events go to the agent namespace, as OCM's agent records them
          agentNamespace: flags.agentNamespace,
          agentKubeConfig: agentKc,
          statusSyncIntervalMs: flags.statusSyncInterval * 1000,
        }),
      );
    if (startServiceAccountAgent)
      next.push(
        await startServiceAccountAgent({
          clusterName: flags.clusterName,
          hubKubeConfig: hub,
          managedKubeConfig: managed,
        }),
      );
    // Swap: the new set runs before the old one stops.
    const old = components;
    components = next;
    await Promise.all([...old.map((c) => c.stop()), updateProxyAgent(hub)]);
  };

  registration = await startRegistrationAgent({
    clusterName: flags.clusterName,
    agentName,
    managedKubeConfig: managed,
    agentKubeConfig: agentKc,
    bootstrapKubeconfigPath: flags.bootstrapKubeconfig,
    agentNamespace: flags.agentNamespace,
    proxyUrl: flags.proxyUrl,
    leaseDurationSeconds: flags.leaseDuration,
    maxCustomClusterClaims: flags.maxCustomClusterClaims,
    inProcessAddons,
    ...(flags.addonRegistration ? {} : { addonRegistration: false as const }),
    addonLeaseHealth: flags.addonLeaseHealth && {
      leaseDurationSeconds: flags.addonLeaseDuration,
      syncIntervalSeconds: flags.addonLeaseSyncInterval,
    },
    onHubKubeconfigChanged: (kc) => {
      chain = chain
        .then(async () => {
          if (stopping) return;
          log.info(
            'hub credential ready; (re)starting work and serviceaccount agents, rotating the proxy-agent',
          );
          await startComponents(kc);
        })
        .catch((err: Error) =>
          log.error({ err: err.message }, 'cannot start agents with the new hub credential'),
        );
    },
    log: logger('registration-agent', { cluster: flags.clusterName }),
  });
  if (inProcessAddons.length > 0) {
    addonHost = await startAddonHost({
      names: inProcessAddons,
      clusterName: flags.clusterName,
      agentName,
      managed,
      apiserver,
      exports: exportsList,
      proxyUrl: flags.proxyUrl,
      proxyCaPem,
      leaseDurationSeconds: flags.addonLeaseDuration,
      // the tunnel's series, when no proxy-agent of the cluster's own identity has them
      ...(proxyMetrics ? {} : { metrics }),
    });
  }
  log.info({ opsPort: ops.port, inProcessAddons }, 'agent started');
  await untilSignal();
  stopping = true;
  await chain;
  // The tunnel drains first (GOAWAY; open watches and exec sessions go on until they end or the
  // deadline) while the hub-facing agents stop.
  await Promise.all([
    ...components.map((c) => c.stop()),
    proxyAgent?.stop({ drainMs: flags.drainTimeout * 1000 }),
    registration?.stop(),
    addonHost?.stop(),
  ]);
  await ops.close();
}
