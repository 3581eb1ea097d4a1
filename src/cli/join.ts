// `tether join` (clusteradm's habits): after checking that the hub is reachable and accepts the
// token, install the agent on a managed cluster (the managed CRDs, the `bootstrap-hub-kubeconfig`
// Secret and the klusterlet-agent Deployment: src/install/agent.ts), or with --bootstrap-only just
// store the bootstrap kubeconfig for a `tether agent` run elsewhere; --dry-run / --output-file print
// the manifests instead. --agent-namespace installs a second agent, for another hub. --mode hosted
// (clusteradm's): the agent goes to the --kubeconfig cluster (the hosting cluster, namespace
// klusterlet-<cluster>) and reaches the managed cluster through --managed-cluster-kubeconfig, stored
// there as Secret external-managed-kubeconfig. `tether unjoin` (unjoin.ts) removes what join installed.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CoreV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
import { type Command, Option } from 'commander';
import { addonAgentNamespace, agentNamespace, bootstrapHubKubeconfigSecretName } from '../api/index.ts';
import { InvalidArgumentError, TetherError } from '../errors.ts';
import { agentNamespaceOf, externalManagedKubeconfigSecretName } from '../install/agent.ts';
import { applyAgentInstall, planAgentInstall, waitForAgent } from '../install/agent-install.ts';
import { toYaml } from '../install/apply.ts';
import { defaultImage } from '../install/image-ref.ts';
import { selfContainedKubeconfig } from '../install/managed-kubeconfig.ts';
import { loadKubeconfig } from '../kube/index.ts';
import { type PullPolicy, pullPolicies } from '../kube/workload.ts';
import { bootstrapKubeconfigYaml, writeBootstrapSecret } from '../registration/bootstrap.ts';
import { checkInProcessAddons, inProcessAddonNames } from './agent-addons.ts';
import { parseDurationSeconds, periodSeconds } from './options.ts';
import { registerUnjoinCommand } from './unjoin.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function describeFailure(err: unknown): string {
  const e = err as { code?: number | string; message?: string; cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

/** Checks the hub is reachable and accepts the bootstrap token; throws a message that says what to fix. */
export async function checkHubAccess(bootstrapYaml: string, hubApiserver: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromString(bootstrapYaml);
  const rejected = new TetherError(
    'TETHER_UNAUTHORIZED',
    'the hub rejected the bootstrap token (wrong or expired --hub-token): run `tether init` on the hub for a fresh one',
  );
  try {
    await kc.makeApiClient(VersionApi).getCode();
  } catch (err) {
    // An invalid bearer token is refused even on /version.
    if ((err as { code?: number }).code === 401) throw rejected;
    throw new TetherError(
      'TETHER_DIAL_FAILED',
      `cannot reach the hub at ${hubApiserver} (${describeFailure(err)}): check --hub-apiserver, --ca-file and --proxy-url`,
    );
  }
  try {
    // Any authenticated request tells: 401 means the token was rejected, 403 that it was accepted.
    await kc.makeApiClient(CoreV1Api).listNamespace({ limit: 1 });
  } catch (err) {
    const status = (err as { code?: number }).code;
    if (status === 401) throw rejected;
    if (status !== 403)
      throw new TetherError('TETHER_API_ERROR', `the hub answered unexpectedly: ${describeFailure(err)}`);
  }
}

interface JoinFlags {
  hubToken: string;
  hubApiserver: string;
  clusterName: string;
  caFile?: string;
  proxyUrl?: string;
  proxyCaFile?: string;
  proxyServer?: string;
  proxyServerCaFile?: string;
  serviceaccount: boolean;
  inProcessAddons: string | false;
  statusSyncInterval?: number;
  addonLeaseDuration?: number;
  addonLeaseSyncInterval?: number;
  kubeconfig?: string;
  mode: 'default' | 'hosted';
  managedClusterKubeconfig?: string;
  agentNamespace?: string;
  bootstrapOnly: boolean;
  image: string;
  imagePullPolicy: PullPolicy;
  dryRun: boolean;
  outputFile?: string;
  wait: boolean;
  timeout: string;
}

function readPem(flag: string, path: string | undefined, what: string): string {
  let pem: string;
  try {
    pem = path ? readFileSync(path, 'utf8') : '';
  } catch {
    throw new InvalidArgumentError(`${flag} ${path}: cannot read it`);
  }
  if (!pem.includes('BEGIN CERTIFICATE')) throw new InvalidArgumentError(`${flag} must be ${what} (PEM)`);
  return pem;
}

export function registerJoinCommands(program: Command): void {
  program
    .command('join')
    .description(
      'join a managed cluster to a hub: install the agent (klusterlet-agent Deployment) with its bootstrap kubeconfig',
    )
    .requiredOption('--hub-token <token>', 'bootstrap token printed by `tether init`')
    .requiredOption('--hub-apiserver <url>', 'hub kube-apiserver URL')
    .requiredOption('--cluster-name <name>', 'name of this managed cluster on the hub')
    .option('--ca-file <path>', 'CA bundle of the hub apiserver (from `tether init`)')
    .option(
      '--proxy-url <url>',
      'HTTP CONNECT forward proxy between this cluster and the hub (http:// or https://)',
    )
    .option('--proxy-ca-file <path>', 'CA bundle for TLS to an https:// forward proxy')
    .option('--proxy-server <host:port>', "the hub proxy-server's agent endpoint (printed by `tether init`)")
    .option('--proxy-server-ca-file <path>', 'CA that verifies the proxy-server (written by `tether init`)')
    .option(
      '--no-serviceaccount',
      'do not run the ManagedServiceAccount agent in the klusterlet (enable the managed-serviceaccount addon instead)',
    )
    .option(
      '--in-process-addons <names>',
      `built-in add-ons whose agents the klusterlet runs in its own process once the hub enables them, each with its own hub identity (${inProcessAddonNames.join(', ')})`,
      inProcessAddonNames.join(','),
    )
    .option('--no-in-process-addons', 'run every enabled add-on agent as its own Deployment')
    .addOption(
      new Option(
        '--status-sync-interval <seconds>',
        "the agent's --status-sync-interval (default: the agent's, 30 s)",
      ).argParser(periodSeconds('--status-sync-interval', 3600)),
    )
    .addOption(
      new Option(
        '--addon-lease-duration <seconds>',
        "the agent's --addon-lease-duration (default: the agent's, OCM's 60 s)",
      ).argParser(periodSeconds('--addon-lease-duration', 3600)),
    )
    .addOption(
      new Option(
        '--addon-lease-sync-interval <seconds>',
        "the agent's --addon-lease-sync-interval (default: the agent's, OCM's 30 s)",
      ).argParser(periodSeconds('--addon-lease-sync-interval', 3600)),
    )
    .option(
      '--kubeconfig <path>',
      'kubeconfig of the managed cluster (--mode hosted: of the hosting cluster)',
      process.env.KUBECONFIG,
    )
    .addOption(
      new Option(
        '--mode <mode>',
        'default: the agent runs on the managed cluster; hosted: on the --kubeconfig cluster, reaching the managed cluster through --managed-cluster-kubeconfig',
      )
        .choices(['default', 'hosted'])
        .default('default'),
    )
    .option(
      '--managed-cluster-kubeconfig <path>',
      "--mode hosted: the managed cluster's kubeconfig; its current context is stored (files embedded) on the hosting cluster as Secret external-managed-kubeconfig, so its server must be reachable from there",
    )
    .option(
      '--agent-namespace <ns>',
      `namespace of the agent (with --bootstrap-only; default ${agentNamespace}, hosted: klusterlet-<cluster>)`,
    )
    .option(
      '--bootstrap-only',
      'only store the bootstrap kubeconfig; run `tether agent` yourself (e.g. `tether up --processes`)',
      false,
    )
    .addOption(new Option('--image <ref>', 'tether image of the agent Deployment').default(defaultImage()))
    .addOption(
      new Option('--image-pull-policy <policy>', 'imagePullPolicy of the agent Deployment')
        .choices(pullPolicies)
        .default('IfNotPresent'),
    )
    .option('--dry-run', 'print the manifests instead of applying them', false)
    .option('--output-file <path>', 'write the manifests to this file instead of applying them')
    .option('--wait', 'wait until the agent Deployment is available', false)
    .option('--timeout <duration>', 'how long --wait waits', '5m')
    .action(async (opts: JoinFlags) => {
      if (!DNS_LABEL.test(opts.clusterName))
        throw new InvalidArgumentError(
          `--cluster-name must be a DNS label (lower-case letters, digits, '-'), got "${opts.clusterName}"`,
        );
      if (!/^https:\/\//.test(opts.hubApiserver))
        throw new InvalidArgumentError(`--hub-apiserver must be an https:// URL, got "${opts.hubApiserver}"`);
      const caPem = readPem('--ca-file', opts.caFile, 'the hub CA written by `tether init`');
      if (Boolean(opts.proxyServer) !== Boolean(opts.proxyServerCaFile))
        throw new InvalidArgumentError('--proxy-server and --proxy-server-ca-file go together');
      if (opts.proxyServer && !/^[^\s:/]+:\d+$/.test(opts.proxyServer))
        throw new InvalidArgumentError(`--proxy-server must be host:port, got "${opts.proxyServer}"`);
      const proxyServerCaPem = opts.proxyServerCaFile
        ? readPem(
            '--proxy-server-ca-file',
            opts.proxyServerCaFile,
            'the proxy-server CA written by `tether init`',
          )
        : undefined;
      const proxyCaPem = opts.proxyCaFile
        ? readPem('--proxy-ca-file', opts.proxyCaFile, 'the forward proxy CA bundle')
        : undefined;
      const timeoutMs = parseDurationSeconds('--timeout', opts.timeout) * 1000;
      const hosted = opts.mode === 'hosted';
      if (hosted !== (opts.managedClusterKubeconfig !== undefined))
        throw new InvalidArgumentError(
          hosted
            ? '--mode hosted needs --managed-cluster-kubeconfig (the cluster the agent manages from outside)'
            : '--managed-cluster-kubeconfig goes with --mode hosted',
        );
      const managedClusterKubeconfig = opts.managedClusterKubeconfig
        ? selfContainedKubeconfig(
            loadKubeconfig(opts.managedClusterKubeconfig, { proxyEnv: false }),
            '--managed-cluster-kubeconfig',
          )
        : undefined;
      const yaml = bootstrapKubeconfigYaml({
        hubApiserver: opts.hubApiserver,
        hubCaPem: caPem,
        token: opts.hubToken,
        proxyUrl: opts.proxyUrl,
      });
      const printOnly = opts.dryRun || opts.outputFile !== undefined;
      const objects = planAgentInstall({
        image: opts.image,
        imagePullPolicy: opts.imagePullPolicy,
        clusterName: opts.clusterName,
        bootstrapKubeconfig: yaml,
        proxyServer: opts.proxyServer,
        proxyServerCaPem,
        proxyUrl: opts.proxyUrl,
        proxyCaPem,
        serviceAccountAgent: opts.serviceaccount,
        inProcessAddons: checkInProcessAddons(
          opts.inProcessAddons === false ? [] : opts.inProcessAddons.split(',').filter(Boolean),
        ),
        statusSyncIntervalSeconds: opts.statusSyncInterval,
        addonLeaseDurationSeconds: opts.addonLeaseDuration,
        addonLeaseSyncIntervalSeconds: opts.addonLeaseSyncInterval,
        managedClusterKubeconfig,
        namespace: opts.agentNamespace,
      });
      const namespace = agentNamespaceOf({
        clusterName: opts.clusterName,
        managedClusterKubeconfig,
        namespace: opts.agentNamespace,
      });
      if (!hosted && !opts.bootstrapOnly && namespace !== agentNamespace) checkSecondAgent(opts);
      if (printOnly) {
        if (opts.bootstrapOnly)
          throw new InvalidArgumentError('--bootstrap-only applies; drop --dry-run/--output-file');
        if (opts.outputFile) {
          writeFileSync(resolve(opts.outputFile), toYaml(objects), { mode: 0o600 });
          process.stderr.write(`wrote ${objects.length} objects to ${opts.outputFile}\n`);
        } else process.stdout.write(toYaml(objects));
        return;
      }
      if (!opts.kubeconfig)
        throw new InvalidArgumentError(
          `--kubeconfig (or KUBECONFIG) must name the ${hosted ? 'hosting' : 'managed'} cluster kubeconfig`,
        );
      await checkHubAccess(yaml, opts.hubApiserver);
      const target = loadKubeconfig(opts.kubeconfig, { proxyEnv: false });
      const managed = opts.managedClusterKubeconfig
        ? loadKubeconfig(opts.managedClusterKubeconfig, { proxyEnv: false })
        : target;
      if (opts.bootstrapOnly) {
        await writeBootstrapSecret(target, yaml, namespace);
        if (managedClusterKubeconfig !== undefined)
          await writeBootstrapSecret(
            target,
            managedClusterKubeconfig,
            namespace,
            externalManagedKubeconfigSecretName,
          );
        const where = hosted ? 'the hosting cluster' : 'the managed cluster';
        const agentLine = hosted
          ? `  tether agent --cluster-name ${opts.clusterName} --kubeconfig ${opts.kubeconfig} --spoke-kubeconfig ${opts.managedClusterKubeconfig} --agent-namespace ${namespace}`
          : `  tether agent --cluster-name ${opts.clusterName} --kubeconfig ${opts.kubeconfig}${namespace === agentNamespace ? '' : ` --agent-namespace ${namespace}`}`;
        process.stdout.write(
          [
            `Stored the bootstrap kubeconfig in ${namespace}/${bootstrapHubKubeconfigSecretName} on ${where}.`,
            'Start the agent (it creates the ManagedCluster and requests its certificate):',
            '',
            agentLine,
            '',
            `Then on the hub: tether accept --clusters ${opts.clusterName}`,
            '',
          ].join('\n'),
        );
        return;
      }
      await applyAgentInstall(target, objects, managed);
      process.stdout.write(
        hosted
          ? `Installed the hosted agent on the hosting cluster: Deployment ${namespace}/klusterlet-agent (${opts.image}) with ${bootstrapHubKubeconfigSecretName} and ${externalManagedKubeconfigSecretName}; on the managed cluster only the agent's CRDs.\n`
          : `Installed the agent: Deployment ${agentNamespace}/klusterlet-agent (${opts.image}) with ${bootstrapHubKubeconfigSecretName}.\n`,
      );
      if (opts.wait) {
        await waitForAgent(target, timeoutMs, namespace);
        process.stdout.write('The agent is available.\n');
      }
      process.stdout.write(`Then on the hub: tether accept --clusters ${opts.clusterName}\n`);
    });
  registerUnjoinCommand(program);
}

/**
 * A second agent on a cluster (`--agent-namespace`, another hub): what the first agent also keeps
 * in the shared add-on namespace would mix the two hubs' credentials there — the managed-serviceaccount
 * agent's ServiceAccounts (one hub could get a token for the other's by naming a
 * ManagedServiceAccount like it) and in-process add-ons' `<addon>-hub-kubeconfig` Secrets.
 */
function checkSecondAgent(opts: JoinFlags): void {
  if (opts.serviceaccount || opts.inProcessAddons !== false)
    throw new InvalidArgumentError(
      `--agent-namespace ${opts.agentNamespace} installs a second agent for another hub: add --no-serviceaccount and --no-in-process-addons (their ServiceAccounts and add-on Secrets would share ${addonAgentNamespace} with the first hub's); deliver that hub's add-ons with their own install namespace`,
    );
}
