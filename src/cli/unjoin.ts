// `tether unjoin` (clusteradm's): removes what `tether join` installed and the agent's hub
// credential — the default agent with the add-on agents' namespace; a second agent
// (`--agent-namespace`) alone; a bootstrap-only agent's Secrets; or, `--mode hosted`, the agent's
// namespace on the hosting cluster and, through the managed kubeconfig it kept, the add-on namespace
// on the managed cluster.
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type Command, Option } from 'commander';
import {
  addonAgentNamespace,
  agentNamespace,
  bootstrapHubKubeconfigSecretName,
  hubKubeconfigSecretName,
} from '../api/index.ts';
import { InvalidArgumentError } from '../errors.ts';
import { externalManagedKubeconfigSecretName, hostedAgentNamespace } from '../install/agent.ts';
import { removeAgentInstall } from '../install/agent-install.ts';
import { isNotFound, loadKubeconfig } from '../kube/index.ts';
import { pollUntil } from '../wait.ts';
import { parseDurationSeconds } from './options.ts';

export function registerUnjoinCommand(program: Command): void {
  program
    .command('unjoin')
    .description(
      'remove the agent and its hub credentials from this managed cluster (what join installed), and the addon agents it ran',
    )
    .requiredOption('--cluster-name <name>', 'name of this managed cluster on the hub')
    .option(
      '--kubeconfig <path>',
      'kubeconfig of the managed cluster (--mode hosted: of the hosting cluster)',
      process.env.KUBECONFIG,
    )
    .addOption(
      new Option('--mode <mode>', 'how the agent was joined')
        .choices(['default', 'hosted'])
        .default('default'),
    )
    .option(
      '--agent-namespace <ns>',
      `namespace of a --bootstrap-only or hosted agent (default ${agentNamespace}, hosted: klusterlet-<cluster>)`,
    )
    .option('--timeout <duration>', 'how long to wait for the agent namespace to be gone', '2m')
    .action(
      async (opts: {
        clusterName: string;
        kubeconfig?: string;
        mode: 'default' | 'hosted';
        agentNamespace?: string;
        timeout: string;
      }) => {
        if (!opts.kubeconfig)
          throw new InvalidArgumentError(
            '--kubeconfig (or KUBECONFIG) must name the managed cluster kubeconfig',
          );
        const timeoutMs = parseDurationSeconds('--timeout', opts.timeout) * 1000;
        const target = loadKubeconfig(opts.kubeconfig, { proxyEnv: false });
        if (opts.mode === 'hosted') {
          await unjoinHosted(
            target,
            opts.agentNamespace ?? hostedAgentNamespace(opts.clusterName),
            timeoutMs,
          );
        } else if ((opts.agentNamespace ?? agentNamespace) === agentNamespace) {
          for (const d of await removeAgentInstall(target)) process.stdout.write(`deleted ${d}\n`);
          await waitGone(
            [
              [target, agentNamespace],
              [target, addonAgentNamespace],
            ],
            timeoutMs,
          );
        } else if (await installedIn(target, opts.agentNamespace ?? agentNamespace)) {
          // a second agent (another hub's): its own namespace and binding, not the shared add-on namespace
          const namespace = opts.agentNamespace ?? agentNamespace;
          for (const d of await removeAgentInstall(target, { namespace }))
            process.stdout.write(`deleted ${d}\n`);
          await waitGone([[target, namespace]], timeoutMs);
        } else {
          const core = target.makeApiClient(CoreV1Api);
          const namespace = opts.agentNamespace ?? agentNamespace;
          for (const name of [hubKubeconfigSecretName, bootstrapHubKubeconfigSecretName]) {
            try {
              await core.deleteNamespacedSecret({ name, namespace });
              process.stdout.write(`deleted ${namespace}/${name}\n`);
            } catch (err) {
              if (!isNotFound(err)) throw err;
            }
          }
        }
        process.stdout.write(
          `Cluster ${opts.clusterName} unjoined. On the hub, \`kubectl delete managedcluster ${opts.clusterName}\` cleans up its namespace and RBAC.\n`,
        );
      },
    );
}

/** Whether join installed an agent Deployment in `namespace` (not only a bootstrap Secret). */
async function installedIn(kc: KubeConfig, namespace: string): Promise<boolean> {
  try {
    await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'klusterlet-agent', namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

async function namespaceGone(kc: KubeConfig, name: string): Promise<boolean> {
  try {
    await kc.makeApiClient(CoreV1Api).readNamespace({ name });
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}

async function waitGone(namespaces: Array<[KubeConfig, string]>, timeoutMs: number): Promise<void> {
  await pollUntil(
    async () => {
      for (const [kc, name] of namespaces) if (!(await namespaceGone(kc, name))) return false;
      return true;
    },
    {
      timeoutMs,
      intervalMs: 250,
      description: `namespaces ${namespaces.map(([, n]) => n).join(' and ')} to be gone`,
    },
  );
}

/**
 * Hosted mode: the agent's namespace on the hosting cluster, and on the managed cluster (through the
 * kubeconfig the agent kept, read before it goes) the add-on agents' namespace.
 */
async function unjoinHosted(hosting: KubeConfig, namespace: string, timeoutMs: number): Promise<void> {
  let managed: KubeConfig | undefined;
  try {
    const secret = await hosting
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: externalManagedKubeconfigSecretName, namespace });
    const data = secret.data?.kubeconfig;
    if (data) {
      managed = new KubeConfig();
      managed.loadFromString(Buffer.from(data, 'base64').toString('utf8'));
    }
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  for (const d of await removeAgentInstall(hosting, { namespace, hosted: true }))
    process.stdout.write(`deleted ${d} (hosting cluster)\n`);
  const waits: Array<[KubeConfig, string]> = [[hosting, namespace]];
  if (managed) {
    try {
      await managed.makeApiClient(CoreV1Api).deleteNamespace({ name: addonAgentNamespace });
      process.stdout.write(`deleted Namespace ${addonAgentNamespace} (managed cluster)\n`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    waits.push([managed, addonAgentNamespace]);
  } else {
    process.stdout.write(
      `no ${namespace}/${externalManagedKubeconfigSecretName} on the hosting cluster: the managed cluster was left as it is\n`,
    );
  }
  await waitGone(waits, timeoutMs);
}
