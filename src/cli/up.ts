// `tether up`: a real local hub and N managed clusters on this machine, in the foreground until
// Ctrl-C / SIGTERM, then everything is torn down (also when it comes during start-up). Prints a line
// containing "ready" once usable. A process that crashes is restarted (src/localenv/supervisor.ts);
// only repeated crashes of one process end the environment, with exit code 1.
import { isAbsolute, relative } from 'node:path';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { type Environment, MAX_LOCAL_CLUSTERS, startEnvironment } from '../localenv/environment.ts';
import { startInClusterEnvironment } from '../localenv/in-cluster-stack.ts';
import { positiveInt } from './options.ts';

interface UpOptions {
  clusters: number;
  dir: string;
  processes: boolean;
  hosted?: string;
  hubs: number;
}

/**
 * `--hosted cluster2=cluster1[,…]`: which clusters join in hosted mode, and on whose node their agent
 * runs. Both must be among the managed clusters started; a cluster hosts others but is not hosted.
 */
export function parseHosted(value: string, clusters: number): Record<string, string> {
  const names = new Set(Array.from({ length: clusters }, (_, i) => `cluster${i + 1}`));
  const hostedOn: Record<string, string> = {};
  for (const pair of value.split(',').filter(Boolean)) {
    const m = /^(cluster\d+)=(cluster\d+)$/.exec(pair.trim());
    if (!m)
      throw new InvalidArgumentError(
        `--hosted wants <cluster>=<hosting cluster>, e.g. cluster2=cluster1; got "${pair}"`,
      );
    const [, hosted = '', on = ''] = m;
    for (const n of [hosted, on])
      if (!names.has(n))
        throw new InvalidArgumentError(`--hosted: ${n} is not one of the ${clusters} clusters started`);
    if (hosted === on) throw new InvalidArgumentError(`--hosted: ${hosted} cannot host itself`);
    hostedOn[hosted] = on;
  }
  for (const on of Object.values(hostedOn))
    if (hostedOn[on])
      throw new InvalidArgumentError(`--hosted: ${on} hosts an agent, so it cannot be hosted itself`);
  return hostedOn;
}

function say(line: string): void {
  process.stdout.write(`tether: ${line}\n`);
}

export function registerUpCommand(program: Command): void {
  program
    .command('up')
    .description(
      'start a local hub and managed clusters (real etcd, kube-apiserver, kube-controller-manager, and a real node each) with tether installed in them',
    )
    .option('--clusters <n>', 'number of managed clusters', positiveInt('--clusters', MAX_LOCAL_CLUSTERS), 2)
    .option('--dir <dir>', 'where kubeconfigs and state are written', '.tether')
    .option(
      '--processes',
      'no nodes: run tether as host processes next to the control planes (for machines without root, cgroups or containerd)',
      false,
    )
    .option(
      '--hubs <n>',
      'hubs to start: 2 adds hub2 (its kubeconfig hub2.kubeconfig), with cluster1 joined to it too by a second agent, and (unless --hosted says otherwise) cluster2 hosted on cluster1; real nodes only',
      positiveInt('--hubs', 2),
      1,
    )
    .option(
      '--hosted <pairs>',
      "hosted mode: join these clusters with `tether join --mode hosted`, their agents on another cluster's node (e.g. cluster2=cluster1); real nodes only",
    )
    .action(async (opts: UpOptions) => {
      await runUp(opts);
    });
}

async function runUp(opts: UpOptions): Promise<void> {
  const started = Date.now();
  // --hubs 2 shows both deployments the issue of several hubs is about: cluster2 hosted on cluster1 too
  const hosted = opts.hosted ?? (opts.hubs === 2 && opts.clusters >= 2 ? 'cluster2=cluster1' : undefined);
  const hostedOn = hosted === undefined ? undefined : parseHosted(hosted, opts.clusters);
  if (opts.hubs === 2 && opts.processes)
    throw new InvalidArgumentError(
      '--hubs 2 needs real nodes (the second hub runs tether as Deployments): drop --processes',
    );
  if (opts.hubs === 2 && opts.clusters < 1)
    throw new InvalidArgumentError('--hubs 2 joins cluster1 to hub2: start at least one cluster');
  if (hostedOn && opts.processes)
    throw new InvalidArgumentError(
      '--hosted needs real nodes (a hosted agent is a pod on its hosting cluster): drop --processes',
    );
  // aborted by the first SIGINT/SIGTERM or by the supervisor giving up: cancels a start in progress
  const abort = new AbortController();
  let env: Environment | undefined;
  let exitCode = 0;
  let wake: () => void = () => {};
  const finished = new Promise<void>((r) => {
    wake = r;
  });
  const stopped = (): void => say('stopped; all processes are gone');
  const shutdown = (why: string, code: number): void => {
    if (abort.signal.aborted) return;
    exitCode = code;
    say(`${why}; stopping…`);
    abort.abort(new Error(why));
    // during start-up, startEnvironment stops what it started and rejects (handled below)
    if (env) {
      void env.stop().then(() => {
        stopped();
        wake();
      });
    }
  };
  const onSignal = (sig: NodeJS.Signals): void => shutdown(`received ${sig}`, 0);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    try {
      env = opts.processes
        ? await startEnvironment({
            clusters: opts.clusters,
            dir: opts.dir,
            progress: say,
            mode: 'full',
            signal: abort.signal,
          })
        : await startInClusterEnvironment({
            clusters: opts.clusters,
            dir: opts.dir,
            ...(hostedOn ? { hostedOn } : {}),
            ...(opts.hubs === 2 ? { hubs: 2 as const } : {}),
            progress: say,
            signal: abort.signal,
          });
    } catch (err) {
      if (!abort.signal.aborted) throw err;
      stopped();
      process.exitCode = exitCode;
      return;
    }
    if (abort.signal.aborted) {
      // the signal came as the start finished
      await env.stop();
      stopped();
      process.exitCode = exitCode;
      return;
    }
    // a crashed process is restarted and reported on stderr; only repeated crashes end `tether up`
    env.supervise({
      report: (message) => process.stderr.write(`tether: ${message}\n`),
      onGiveUp: (reason) => shutdown(reason, 1),
    });
    const rel = (p: string): string => {
      const r = relative(process.cwd(), p);
      return r && !r.startsWith('..') && !isAbsolute(r) ? r : p;
    };
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(
      [
        '',
        `  hub:      kubectl --kubeconfig ${rel(`${env.dir}/hub.kubeconfig`)} get managedclusters`,
        ...(env.hub2
          ? [
              `  hub2:     kubectl --kubeconfig ${rel(`${env.dir}/${env.hub2.name}.kubeconfig`)} get managedclusters   (cluster1 joined to both hubs: a second agent in open-cluster-management-agent-hub2)`,
            ]
          : []),
        ...env.clusters.map(
          (c) => `  ${c.name}: kubectl --kubeconfig ${rel(`${env?.dir}/${c.name}.kubeconfig`)} get ns`,
        ),
        ...Object.entries(hostedOn ?? {}).map(
          ([hosted, on]) =>
            `  ${hosted} is hosted: its agent runs on ${on}'s node (kubectl --kubeconfig ${rel(`${env?.dir}/${on}.kubeconfig`)} -n klusterlet-${hosted} get pods); ${hosted}'s node runs no tether pod`,
        ),
        ...(env.gatewayKubeconfigs
          ? [
              '',
              '  through the hub (ClusterGateway → tunnel → agent), no route or credential to the cluster needed:',
              ...Object.entries(env.gatewayKubeconfigs).map(
                ([name, path]) => `  ${name}: kubectl --kubeconfig ${rel(path)} get ns`,
              ),
            ]
          : []),
        ...(env.nodes
          ? [
              '',
              `  tether runs in the clusters: kubectl --kubeconfig ${rel(`${env.dir}/hub.kubeconfig`)} -n open-cluster-management-hub get pods`,
              `  each managed node reaches the hub only through squid ${env.squid?.url ?? ''}`,
            ]
          : []),
        ...(env.hubServices
          ? [
              '',
              `  hub services: CONNECT <cluster>:443 or konnectivity gRPC at ${env.hubServices.connectFrontendUrl}`,
              `            (client cert ${rel(env.hubServices.proxyClientCertPath)}, CA ${rel(env.hubServices.connectCaPath)})`,
              `  user-server:  ${env.hubServices.userServerUrl}/<cluster>/… with a ManagedServiceAccount token`,
              `            (CA ${rel(env.hubServices.userServerCaPath)}; each token Secret's kubeconfig points here)`,
            ]
          : []),
        ...(env.tunnel
          ? [
              '',
              `  tunnel:   proxy-server ${env.tunnel.proxyServerAddress} (agents connect through squid ${env.tunnel.squidUrl})`,
              `            hub services: CONNECT <cluster>:443 at ${env.tunnel.connectFrontendUrl}`,
              `            (client cert ${rel(env.tunnel.proxyClientCertPath)}, CA ${rel(env.tunnel.hubCaPath)})`,
            ]
          : []),
        '',
        `  console:  npx tether console --kubeconfig ${rel(`${env.dir}/hub.kubeconfig`)}   (the fleet in your browser, as the hub admin)`,
        '',
        '  Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
    say(`ready: hub + ${env.clusters.length} managed clusters in ${secs}s`);
    await finished;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  process.exitCode = exitCode;
}
