// `tether proxy-server`: the hub end of the tunnel as a standalone process. Accepts proxy-agents on
// the agent port and serves CONNECT <cluster>:443 to hub services on the frontend port. Every flag
// can also come from a TETHER_* environment variable.
import { hostname } from 'node:os';
import { type Command, InvalidArgumentError as CommanderInvalidArgument, type Option } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { logger } from '../log.ts';
import { startOpsServer } from '../ops.ts';
import { defaultClientLimits } from '../proxy-server/client-limits.ts';
import type { HubClusterAdmission } from '../proxy-server/cluster-admission.ts';
import { ConnectFrontend } from '../proxy-server/connect-frontend.ts';
import { defaultPreAuthLimits } from '../proxy-server/pre-auth.ts';
import { ProxyServer } from '../proxy-server/server.ts';
import { readPemFlag } from './files.ts';
import { envOption, positiveInt } from './options.ts';
import {
  keepaliveLimits,
  keepaliveOptions,
  type TunnelStreamFlags,
  tunnelStreamLimits,
  tunnelStreamOptions,
} from './tunnel-stream-options.ts';
import { untilSignal } from './until-signal.ts';

interface ServerFlags extends TunnelStreamFlags {
  pingInterval: number;
  pingTimeout: number;
  serverId: string;
  serverCount: number;
  bindAddress: string;
  agentPort: number;
  connectPort: number;
  opsPort: number;
  tlsCertFile: string;
  tlsKeyFile: string;
  agentCaFile: string;
  proxyClientCaFile?: string;
  hubKubeconfig?: string;
  insecureSkipHubChecks?: boolean;
  maxConnectionsPerAddress: number;
  maxUnauthenticatedAgentConnections: number;
  maxUnauthenticatedAgentConnectionsPerAddress: number;
  maxTunnelsPerCaller: number;
  maxPendingDialsPerCaller: number;
  tunnelRatePerCaller: number;
  tunnelBurstPerCaller: number;
}

/** Whether two PEM bundles have a certificate in common. */
function sharesCertificate(a: string, b: string): boolean {
  const blocks = (pem: string): string[] =>
    (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((c) =>
      c.replace(/\s+/g, ''),
    );
  const inB = new Set(blocks(b));
  return blocks(a).some((c) => inB.has(c));
}

/** The hub client side of the proxy-server: the Kubernetes client, admission and caller checks. */
async function loadHubModules() {
  const [kube, admission, auth] = await Promise.all([
    import('../kube/index.ts'),
    import('../proxy-server/cluster-admission.ts'),
    import('../proxy-server/hub-auth.ts'),
  ]);
  return {
    loadKubeconfig: kube.loadKubeconfig,
    inClusterKubeConfig: kube.inClusterKubeConfig,
    HubClusterAdmission: admission.HubClusterAdmission,
    hubTokenAuth: auth.hubTokenAuth,
  };
}

// How long the proxy-server waits for the hub's first list of ManagedClusters before giving up.
const HUB_SYNC_TIMEOUT_MS = 60_000;

/** Per-client limit flags of the CONNECT frontend (explicit defaults from client-limits.ts). */
function clientLimitOptions(cmd: Command): Command {
  const d = defaultClientLimits;
  const limit = (flags: string, what: string, env: string, def: number): Option => {
    const name = flags.split(' ')[0] as string;
    const parse = positiveInt(name, 10_000_000);
    return envOption(flags, what, env)
      .default(def)
      .argParser((v: string) => {
        const n = parse(v);
        if (n < 1) throw new CommanderInvalidArgument(`${name} must be at least 1, got "${v}"`);
        return n;
      });
  };
  return cmd
    .addOption(
      limit(
        '--max-connections-per-address <n>',
        'CONNECT frontend: connections one remote address may hold open (before authentication too)',
        'TETHER_MAX_CONNECTIONS_PER_ADDRESS',
        d.maxConnectionsPerAddress,
      ),
    )
    .addOption(
      limit(
        '--max-unauthenticated-agent-connections <n>',
        'agent port: connections not yet authenticated as an agent, in total (agents already connected never count)',
        'TETHER_MAX_UNAUTHENTICATED_AGENT_CONNECTIONS',
        defaultPreAuthLimits.maxConnections,
      ),
    )
    .addOption(
      limit(
        '--max-unauthenticated-agent-connections-per-address <n>',
        'agent port: connections not yet authenticated as an agent, from one remote address',
        'TETHER_MAX_UNAUTHENTICATED_AGENT_CONNECTIONS_PER_ADDRESS',
        defaultPreAuthLimits.maxConnectionsPerAddress,
      ),
    )
    .addOption(
      limit(
        '--max-tunnels-per-caller <n>',
        'CONNECT frontend: tunnels one authenticated caller may hold open',
        'TETHER_MAX_TUNNELS_PER_CALLER',
        d.maxTunnelsPerCaller,
      ),
    )
    .addOption(
      limit(
        '--max-pending-dials-per-caller <n>',
        "CONNECT frontend: one caller's dials waiting for an agent's answer",
        'TETHER_MAX_PENDING_DIALS_PER_CALLER',
        d.maxPendingDialsPerCaller,
      ),
    )
    .addOption(
      limit(
        '--tunnel-rate-per-caller <n>',
        'CONNECT frontend: new tunnels per second one caller may open (sustained)',
        'TETHER_TUNNEL_RATE_PER_CALLER',
        d.tunnelRatePerCaller,
      ),
    )
    .addOption(
      limit(
        '--tunnel-burst-per-caller <n>',
        'CONNECT frontend: new tunnels one caller may open in a burst',
        'TETHER_TUNNEL_BURST_PER_CALLER',
        d.tunnelBurstPerCaller,
      ),
    );
}

export function registerProxyServerCommand(program: Command): void {
  const serverCmd = program
    .command('proxy-server')
    .description('hub end of the tunnel: accepts proxy-agents, serves CONNECT <cluster>:443 to hub services')
    .addOption(
      envOption('--server-id <id>', 'this replica id (unique per replica)', 'TETHER_SERVER_ID').default(
        `${hostname()}-${process.pid}`,
      ),
    )
    .addOption(
      envOption(
        '--server-count <n>',
        'number of proxy-server replicas agents should connect to',
        'TETHER_SERVER_COUNT',
      )
        .default(1)
        .argParser(positiveInt('--server-count', 64)),
    )
    .addOption(
      envOption('--bind-address <ip>', 'address to listen on', 'TETHER_BIND_ADDRESS').default('0.0.0.0'),
    )
    .addOption(
      envOption(
        '--agent-port <port>',
        'port agents connect to (TLS: HTTP/2 or WebSocket)',
        'TETHER_AGENT_PORT',
      )
        .default(8091)
        .argParser(positiveInt('--agent-port', 65535)),
    )
    .addOption(
      envOption(
        '--connect-port <port>',
        'HTTP CONNECT frontend port for hub services (0 = random)',
        'TETHER_CONNECT_PORT',
      )
        .default(8090)
        .argParser(positiveInt('--connect-port', 65535)),
    )
    .addOption(
      envOption('--ops-port <port>', '/healthz, /readyz and /metrics port', 'TETHER_OPS_PORT')
        .default(8092)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(
      envOption(
        '--tls-cert-file <path>',
        'serving certificate (PEM)',
        'TETHER_TLS_CERT_FILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption('--tls-key-file <path>', 'serving key (PEM)', 'TETHER_TLS_KEY_FILE').makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--agent-ca-file <path>',
        'CA bundle agent client certificates must chain to (the hub CA that signs agent CSRs)',
        'TETHER_AGENT_CA_FILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--proxy-client-ca-file <path>',
        'CA bundle for CONNECT-frontend client certificates (hub services). Must not be the CA that signs ' +
          'agent identities. Without it, certificate callers are not accepted and the frontend takes hub ' +
          'bearer tokens only',
        'TETHER_PROXY_CLIENT_CA_FILE',
      ),
    )
    .addOption(
      envOption(
        '--hub-kubeconfig <path>',
        'hub kubeconfig (required): list/watch managedclusters (only accepted clusters may hold tunnels; a ' +
          'denied or deleted cluster loses them at once), create tokenreviews and subjectaccessreviews ' +
          '(every CONNECT caller needs get managedclusters/proxy on the cluster it reaches)',
        'TETHER_HUB_KUBECONFIG',
      ),
    )
    .addOption(
      envOption(
        '--insecure-skip-hub-checks',
        'run without --hub-kubeconfig: any agent with a valid certificate is served (no ManagedCluster ' +
          'check, no revocation) and every --proxy-client-ca-file certificate may reach every cluster. ' +
          'For tunnel-only tests; never in a shared hub',
        'TETHER_INSECURE_SKIP_HUB_CHECKS',
      ),
    );
  clientLimitOptions(serverCmd);
  tunnelStreamOptions(serverCmd);
  keepaliveOptions(serverCmd).action(async (flags: ServerFlags) => {
    const log = logger('proxy-server', { serverId: flags.serverId });
    const tls = {
      certPem: readPemFlag('--tls-cert-file', flags.tlsCertFile, 'CERTIFICATE'),
      keyPem: readPemFlag('--tls-key-file', flags.tlsKeyFile, 'PRIVATE KEY'),
    };
    const agentCa = readPemFlag('--agent-ca-file', flags.agentCaFile, 'CERTIFICATE');
    const clientCa = flags.proxyClientCaFile
      ? readPemFlag('--proxy-client-ca-file', flags.proxyClientCaFile, 'CERTIFICATE')
      : undefined;
    if (clientCa && sharesCertificate(clientCa, agentCa))
      throw new InvalidArgumentError(
        '--proxy-client-ca-file is the same CA as --agent-ca-file: agent certificates would be hub-service ' +
          'credentials. Give hub services a client CA of their own',
      );
    // The Kubernetes client (most of this process's memory) only when the hub is checked.
    const hub = flags.insecureSkipHubChecks && !flags.hubKubeconfig ? undefined : await loadHubModules();
    // In a pod on the hub, its ServiceAccount is the hub credential (like kubectl's in-cluster config).
    const hubKc =
      hub && flags.hubKubeconfig ? hub.loadKubeconfig(flags.hubKubeconfig) : hub?.inClusterKubeConfig();
    if (!hubKc && !flags.insecureSkipHubChecks)
      throw new InvalidArgumentError(
        '--hub-kubeconfig is required outside a hub pod: without the hub the proxy-server cannot tell accepted clusters from ' +
          'denied ones, nor authorize CONNECT callers (--insecure-skip-hub-checks runs without, for tests)',
      );
    let admission: HubClusterAdmission | undefined;
    let authorize: (caller: { user: string; groups: string[] }, cluster: string) => Promise<boolean>;
    let authenticateToken:
      | ((token: string) => Promise<{ user: string; groups: string[] } | undefined>)
      | undefined;
    if (hub && hubKc) {
      const auth = hub.hubTokenAuth(hubKc);
      authorize = auth.authorize;
      authenticateToken = auth.authenticate;
      admission = new hub.HubClusterAdmission(hubKc, {
        log: logger('cluster-admission', { serverId: flags.serverId }),
      });
    } else {
      log.warn(
        'running with --insecure-skip-hub-checks: agents are not checked against ManagedClusters and every proxy-client certificate reaches every cluster',
      );
      authorize = async () => true;
    }
    const server = new ProxyServer({
      serverId: flags.serverId,
      serverCount: flags.serverCount,
      host: flags.bindAddress,
      port: flags.agentPort,
      tls: { ...tls, clientCaPem: agentCa },
      limits: { ...keepaliveLimits(flags), ...tunnelStreamLimits(flags) },
      maxUnauthenticatedConnections: flags.maxUnauthenticatedAgentConnections,
      maxUnauthenticatedPerAddress: flags.maxUnauthenticatedAgentConnectionsPerAddress,
      clusterAdmission: admission,
      log,
    });
    if (admission) {
      await admission.start(HUB_SYNC_TIMEOUT_MS).catch((err: Error) => {
        throw new InvalidArgumentError(
          `could not list managedclusters with ${flags.hubKubeconfig ? `--hub-kubeconfig ${flags.hubKubeconfig}` : 'the in-cluster ServiceAccount'} (it needs list and watch on managedclusters.cluster.open-cluster-management.io): ${err.message}`,
        );
      });
    }
    const agentPort = await server.start();
    const frontend = new ConnectFrontend({
      host: flags.bindAddress,
      port: flags.connectPort,
      tls: { ...tls, clientCaPem: clientCa },
      dial: (cluster, target) => server.dial(cluster, target),
      tunnelStatus: (cluster) => server.tunnelStatus(cluster),
      authenticateToken,
      authorize,
      limits: {
        maxConnectionsPerAddress: flags.maxConnectionsPerAddress,
        maxTunnelsPerCaller: flags.maxTunnelsPerCaller,
        maxPendingDialsPerCaller: flags.maxPendingDialsPerCaller,
        tunnelRatePerCaller: flags.tunnelRatePerCaller,
        tunnelBurstPerCaller: flags.tunnelBurstPerCaller,
      },
      log: logger('connect-frontend', { serverId: flags.serverId }),
    });
    const connectPort = await frontend.start();
    const ops = await startOpsServer({
      host: flags.bindAddress,
      port: flags.opsPort,
      registries: [server.metrics.registry],
      ready: () => ({ ok: true, detail: `serving; ${server.registry.all().length} agents connected` }),
    });
    log.info({ agentPort, connectPort, opsPort: ops.port }, 'proxy-server ready');
    const sig = await untilSignal();
    log.info({ signal: sig }, 'draining');
    await Promise.all([frontend.stop(), server.stop()]);
    await admission?.stop();
    await ops.close();
  });
}
