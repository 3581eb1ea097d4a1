// `tether join` and `tether unjoin` (clusteradm's habits): store the bootstrap kubeconfig on a
// managed cluster after checking that the hub is reachable and accepts the token; remove the agent's
// credentials again.
import { readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
import type { Command } from 'commander';
import { agentNamespace, bootstrapHubKubeconfigSecretName, hubKubeconfigSecretName } from '../api/index.ts';
import { InvalidArgumentError, TetherError } from '../errors.ts';
import { isNotFound, loadKubeconfig } from '../kube/index.ts';
import { bootstrapKubeconfigYaml, writeBootstrapSecret } from '../registration/bootstrap.ts';

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

export function registerJoinCommands(program: Command): void {
  program
    .command('join')
    .description('join a managed cluster to a hub: store the bootstrap kubeconfig for `tether agent`')
    .requiredOption('--hub-token <token>', 'bootstrap token printed by `tether init`')
    .requiredOption('--hub-apiserver <url>', 'hub kube-apiserver URL')
    .requiredOption('--cluster-name <name>', 'name of this managed cluster on the hub')
    .option('--ca-file <path>', 'CA bundle of the hub apiserver (from `tether init`)')
    .option(
      '--proxy-url <url>',
      'HTTP CONNECT forward proxy between this cluster and the hub (http:// or https://)',
    )
    .option('--kubeconfig <path>', 'kubeconfig of the managed cluster', process.env.KUBECONFIG)
    .option('--agent-namespace <ns>', 'namespace of the agent on the managed cluster', agentNamespace)
    .action(
      async (opts: {
        hubToken: string;
        hubApiserver: string;
        clusterName: string;
        caFile?: string;
        proxyUrl?: string;
        kubeconfig?: string;
        agentNamespace: string;
      }) => {
        if (!DNS_LABEL.test(opts.clusterName))
          throw new InvalidArgumentError(
            `--cluster-name must be a DNS label (lower-case letters, digits, '-'), got "${opts.clusterName}"`,
          );
        if (!opts.kubeconfig)
          throw new InvalidArgumentError(
            '--kubeconfig (or KUBECONFIG) must name the managed cluster kubeconfig',
          );
        if (!/^https:\/\//.test(opts.hubApiserver))
          throw new InvalidArgumentError(
            `--hub-apiserver must be an https:// URL, got "${opts.hubApiserver}"`,
          );
        let caPem: string;
        try {
          caPem = opts.caFile ? readFileSync(opts.caFile, 'utf8') : '';
        } catch {
          throw new InvalidArgumentError(`--ca-file ${opts.caFile}: cannot read it`);
        }
        if (!caPem.includes('BEGIN CERTIFICATE'))
          throw new InvalidArgumentError('--ca-file must be the hub CA (PEM) written by `tether init`');
        const yaml = bootstrapKubeconfigYaml({
          hubApiserver: opts.hubApiserver,
          hubCaPem: caPem,
          token: opts.hubToken,
          proxyUrl: opts.proxyUrl,
        });
        await checkHubAccess(yaml, opts.hubApiserver);
        const managed = loadKubeconfig(opts.kubeconfig, { proxyEnv: false });
        await writeBootstrapSecret(managed, yaml, opts.agentNamespace);
        process.stdout.write(
          [
            `Stored the bootstrap kubeconfig in ${opts.agentNamespace}/${bootstrapHubKubeconfigSecretName} on the managed cluster.`,
            'Start the agent (it creates the ManagedCluster and requests its certificate):',
            '',
            `  tether agent --cluster-name ${opts.clusterName} --kubeconfig ${opts.kubeconfig}`,
            '',
            `Then on the hub: tether accept --clusters ${opts.clusterName}`,
            '',
          ].join('\n'),
        );
      },
    );

  program
    .command('unjoin')
    .description("remove this managed cluster's hub credentials (bootstrap and hub kubeconfig secrets)")
    .requiredOption('--cluster-name <name>', 'name of this managed cluster on the hub')
    .option('--kubeconfig <path>', 'kubeconfig of the managed cluster', process.env.KUBECONFIG)
    .option('--agent-namespace <ns>', 'namespace of the agent on the managed cluster', agentNamespace)
    .action(async (opts: { clusterName: string; kubeconfig?: string; agentNamespace: string }) => {
      if (!opts.kubeconfig)
        throw new InvalidArgumentError(
          '--kubeconfig (or KUBECONFIG) must name the managed cluster kubeconfig',
        );
      const core = loadKubeconfig(opts.kubeconfig, { proxyEnv: false }).makeApiClient(CoreV1Api);
      for (const name of [hubKubeconfigSecretName, bootstrapHubKubeconfigSecretName]) {
        try {
          await core.deleteNamespacedSecret({ name, namespace: opts.agentNamespace });
          process.stdout.write(`deleted ${opts.agentNamespace}/${name}\n`);
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      process.stdout.write(
        `Cluster ${opts.clusterName} unjoined. Stop its agent; on the hub, \`kubectl delete managedcluster ${opts.clusterName}\` cleans up its namespace and RBAC.\n`,
      );
    });
}
