// The tether part of `tether up` on real nodes: tether installed into the local clusters exactly as
// a user installs it into real ones — `tether init` on the hub (the image's Deployments, a NodePort
// agent endpoint on the hub node), `tether join` on every managed cluster (the klusterlet-agent
// Deployment, reaching the hub only through squid from its firewalled node), acceptance the way
// `tether accept` does it, then a `tether-gateway` ManagedServiceAccount per cluster and the
// gateway kubeconfigs. The CLI verbs run as child processes, so this path is the CLI's path.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, ManagedClusterCondition, managedClusterResource } from '../api/index.ts';
import { errorMessage, TetherError } from '../errors.ts';
import { isConditionTrue, ResourceClient } from '../kube/index.ts';
import { approveClusterCsrs } from '../registration/hub/index.ts';
import { pollUntil } from '../wait.ts';
import { type Environment, startEnvironment } from './environment.ts';
import { provisionGatewayAccess } from './gateway-stack.ts';
import { localChildEnv, tetherBin } from './process.ts';
import type { ControlPlaneInfo } from './types.ts';

const execFileAsync = promisify(execFile);

/** The agent endpoint's NodePort on the hub node. */
export const AGENT_NODE_PORT = 31091;

export interface InClusterOptions {
  hub: ControlPlaneInfo;
  clusters: ControlPlaneInfo[];
  /** the tether image every node has imported */
  imageRef: string;
  /** the hub apiserver as managed pods reach it through squid */
  hubApiserverUrl: string;
  /** the hub node's address (the agent endpoint's NodePort listens there) */
  hubNodeAddress: string;
  /** squid's URL for pods on a managed cluster's node */
  squidUrlFor(cluster: string): string;
  /** where the gateway kubeconfigs go */
  kubeconfigDir: string;
  /** where the CA files of init go */
  workDir: string;
  timeoutMs: number;
  progress?: (message: string) => void;
  signal?: AbortSignal;
}

async function tether(args: string[], signal?: AbortSignal): Promise<string> {
  try {
    const { stdout } = await execFileAsync(process.execPath, [tetherBin, ...args], {
      env: localChildEnv(),
      maxBuffer: 16 * 1024 * 1024,
      signal,
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string };
    signal?.throwIfAborted();
    throw new TetherError(
      'TETHER_PROCESS_FAILED',
      `tether ${args[0]} failed: ${(e.stderr ?? '').trim() || errorMessage(err)}`,
    );
  }
}

export async function installTetherInCluster(
  o: InClusterOptions,
): Promise<{ kubeconfigs: Record<string, string> }> {
  const progress = o.progress ?? (() => {});
  const { signal } = o;
  const hubCa = join(o.workDir, 'hub-ca.crt');
  const serverCa = join(o.workDir, 'proxy-server-ca.crt');
  const timeout = `${Math.ceil(o.timeoutMs / 1000)}s`;
  progress('tether init: the hub controllers, proxy-server and gateway as Deployments on the hub node…');
  const initOut = await tether(
    [
      'init',
      `--kubeconfig=${o.hub.kubeconfigPath}`,
      `--image=${o.imageRef}`,
      '--image-pull-policy=Never',
      `--hub-apiserver=${o.hubApiserverUrl}`,
      `--proxy-server-host=${o.hubNodeAddress}`,
      `--agent-endpoint-node-port=${AGENT_NODE_PORT}`,
      `--ca-out=${hubCa}`,
      `--proxy-server-ca-out=${serverCa}`,
      '--bootstrap-token-expiration=1h',
      '--wait',
      `--timeout=${timeout}`,
    ],
    signal,
  );
  const token = /--hub-token (\S+)/.exec(initOut)?.[1];
  if (!token) throw new TetherError('TETHER_PROCESS_FAILED', `tether init printed no join line:\n${initOut}`);
  const hubKc = new KubeConfig();
  hubKc.loadFromFile(o.hub.kubeconfigPath);
  const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
  progress(
    `tether join: the klusterlet-agent on ${o.clusters.map((c) => c.name).join(', ')}, through squid…`,
  );
  await Promise.all(
    o.clusters.map(async (cluster) => {
      await tether(
        [
          'join',
          `--hub-token=${token}`,
          `--hub-apiserver=${o.hubApiserverUrl}`,
          `--ca-file=${hubCa}`,
          `--proxy-server=${o.hubNodeAddress}:${AGENT_NODE_PORT}`,
          `--proxy-server-ca-file=${serverCa}`,
          `--proxy-url=${o.squidUrlFor(cluster.name)}`,
          `--cluster-name=${cluster.name}`,
          `--kubeconfig=${cluster.kubeconfigPath}`,
          `--image=${o.imageRef}`,
          '--image-pull-policy=Never',
        ],
        signal,
      );
      // what `tether accept` does, each round until the cluster has joined: the agent creates its
      // ManagedCluster first and its CSR right after
      await pollUntil(
        async () => {
          const current = await clusters.get(cluster.name);
          if (!current) return false;
          const conditions = current.status?.conditions ?? [];
          if (!isConditionTrue(conditions, ManagedClusterCondition.Joined))
            await approveClusterCsrs(hubKc, cluster.name);
          return (
            isConditionTrue(conditions, ManagedClusterCondition.Joined) &&
            isConditionTrue(conditions, ManagedClusterCondition.Available)
          );
        },
        {
          timeoutMs: o.timeoutMs,
          intervalMs: 250,
          description: `ManagedCluster ${cluster.name} to register (its agent pod), be accepted, and turn Joined and Available`,
          signal,
        },
      );
    }),
  );
  progress('the gateway: a tether-gateway ManagedServiceAccount per cluster and the gateway kubeconfigs…');
  return provisionGatewayAccess({
    hubKc,
    clusters: o.clusters.map((c) => c.name),
    kubeconfigDir: o.kubeconfigDir,
    timeoutMs: o.timeoutMs,
    signal,
  });
}

/**
 * `tether up` on real nodes: the environment with a node per cluster (environment.ts), then tether
 * installed into it (installTetherInCluster). On failure or abort everything is stopped again.
 */
export async function startInClusterEnvironment(opts: {
  clusters: number;
  dir: string;
  progress?: (message: string) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** prepended to every cluster's (and node's) name (environment.ts) */
  namePrefix?: string;
}): Promise<Environment> {
  const env = await startEnvironment({
    clusters: opts.clusters,
    dir: opts.dir,
    progress: opts.progress,
    nodes: true,
    namePrefix: opts.namePrefix,
    signal: opts.signal,
  });
  try {
    const hubNode = env.nodes?.[env.hub.name];
    if (!hubNode || !env.squid || !env.image || !env.hubApiserverUrlForNodes)
      throw new Error('internal: a real-node environment without its hub node, squid or image');
    const squid = env.squid;
    const { kubeconfigs } = await installTetherInCluster({
      hub: env.hub,
      clusters: env.clusters,
      imageRef: env.image.ref,
      hubApiserverUrl: env.hubApiserverUrlForNodes,
      hubNodeAddress: hubNode.network.nodeAddress,
      squidUrlFor: (c) => squid.urlFor(c),
      kubeconfigDir: env.dir,
      workDir: join(env.dir, 'state'),
      timeoutMs: opts.timeoutMs ?? 180_000,
      progress: opts.progress,
      signal: opts.signal,
    });
    env.gatewayKubeconfigs = kubeconfigs;
    const stopEnvironment = env.stop;
    env.stop = async () => {
      await stopEnvironment();
      for (const path of Object.values(kubeconfigs)) rmSync(path, { force: true });
    };
    return env;
  } catch (err) {
    await env.stop();
    opts.signal?.throwIfAborted();
    throw err;
  }
}
