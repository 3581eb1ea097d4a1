// `tether up`: a real local hub and N managed clusters on this machine, in the foreground until
// Ctrl-C / SIGTERM, then everything is torn down. Prints a line containing "ready" once usable.
import { isAbsolute, relative } from 'node:path';
import type { Command } from 'commander';
import { type Environment, MAX_LOCAL_CLUSTERS, startEnvironment } from '../localenv/environment.ts';
import { positiveInt } from './options.ts';

interface UpOptions {
  clusters: number;
  dir: string;
}

function say(line: string): void {
  process.stdout.write(`tether: ${line}\n`);
}

export function registerUpCommand(program: Command): void {
  program
    .command('up')
    .description(
      'start a local hub and managed clusters (real etcd, kube-apiserver, kube-controller-manager)',
    )
    .option('--clusters <n>', 'number of managed clusters', positiveInt('--clusters', MAX_LOCAL_CLUSTERS), 2)
    .option('--dir <dir>', 'where kubeconfigs and state are written', '.tether')
    .action(async (opts: UpOptions) => {
      await runUp(opts);
    });
}

async function runUp(opts: UpOptions): Promise<void> {
  const started = Date.now();
  let env: Environment | undefined;
  let stopping: Promise<void> | undefined;
  let exitCode = 0;
  let wake: () => void = () => {};
  const finished = new Promise<void>((r) => {
    wake = r;
  });
  const shutdown = (why: string, code: number): Promise<void> => {
    if (!stopping) {
      exitCode = code;
      say(`${why}; stopping…`);
      stopping = (env ? env.stop() : Promise.resolve()).then(() => {
        say('stopped; all processes are gone');
        wake();
      });
    }
    return stopping;
  };
  const onSignal = (sig: NodeJS.Signals): void => {
    void shutdown(`received ${sig}`, 0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    env = await startEnvironment({ clusters: opts.clusters, dir: opts.dir, progress: say, mode: 'full' });
    if (stopping) {
      await env.stop();
      return;
    }
    env.onFailure((desc) => {
      process.stderr.write(`tether: ${desc}\n`);
      void shutdown('a control-plane process died', 1);
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
        ...env.clusters.map(
          (c) => `  ${c.name}: kubectl --kubeconfig ${rel(`${env?.dir}/${c.name}.kubeconfig`)} get ns`,
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
        ...(env.tunnel
          ? [
              '',
              `  tunnel:   proxy-server ${env.tunnel.proxyServerAddress} (agents connect through squid ${env.tunnel.squidUrl})`,
              `            hub services: CONNECT <cluster>:443 at ${env.tunnel.connectFrontendUrl}`,
              `            (client cert ${rel(env.tunnel.proxyClientCertPath)}, CA ${rel(env.tunnel.hubCaPath)})`,
            ]
          : []),
        '',
        '  Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
    say(`ready: hub + ${env.clusters.length} managed clusters in ${secs}s`);
    await finished;
  } catch (err) {
    if (stopping) await stopping;
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  process.exitCode = exitCode;
}
