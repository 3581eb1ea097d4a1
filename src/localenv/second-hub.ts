// `tether up --hubs 2` on real nodes: a second hub, `hub2`, installed as the first one is (`tether
// init` on its own node), and some managed clusters joined to it as well, each with a second agent
// in a namespace of its own (`tether join --agent-namespace open-cluster-management-agent-hub2`:
// its own identity, credential, binding and AppliedManifestWorks), through the same squid. The
// second agent runs registration and work only (`--no-serviceaccount --no-in-process-addons`: the
// add-on namespace stays the first hub's, as `tether join` requires); hub2 enables no add-ons.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { TetherError } from '../errors.ts';
import { AGENT_NODE_PORT, acceptUntilAvailable, tether } from './tether-cli-steps.ts';
import type { ControlPlaneInfo } from './types.ts';

/** The namespace of a managed cluster's agent for the second hub. */
export const secondHubAgentNamespace = 'open-cluster-management-agent-hub2';

export interface SecondHubOptions {
  hub2: ControlPlaneInfo;
  /** hub2's apiserver as managed pods reach it through squid */
  hub2ApiserverUrl: string;
  /** hub2's node address (its agent endpoint's NodePort) */
  hub2NodeAddress: string;
  /** the managed clusters joined to hub2 too */
  clusters: ControlPlaneInfo[];
  imageRef: string;
  squidUrlFor(cluster: string): string;
  /** hub2's CA files go here */
  workDir: string;
  timeoutMs: number;
  joinArgs?: string[];
  progress?: (message: string) => void;
  signal?: AbortSignal;
}

export async function installSecondHub(o: SecondHubOptions): Promise<void> {
  const { signal } = o;
  const dir = join(o.workDir, 'hub2');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const hubCa = join(dir, 'hub-ca.crt');
  o.progress?.('tether init on hub2: a second hub on its own node…');
  const initOut = await tether(
    [
      'init',
      `--kubeconfig=${o.hub2.kubeconfigPath}`,
      `--image=${o.imageRef}`,
      '--image-pull-policy=Never',
      `--hub-apiserver=${o.hub2ApiserverUrl}`,
      `--proxy-server-host=${o.hub2NodeAddress}`,
      `--agent-endpoint-node-port=${AGENT_NODE_PORT}`,
      `--ca-out=${hubCa}`,
      `--proxy-server-ca-out=${join(dir, 'proxy-server-ca.crt')}`,
      '--bootstrap-token-expiration=1h',
      '--wait',
      `--timeout=${Math.ceil(o.timeoutMs / 1000)}s`,
    ],
    signal,
  );
  const token = /--hub-token (\S+)/.exec(initOut)?.[1];
  if (!token)
    throw new TetherError('TETHER_PROCESS_FAILED', `tether init on hub2 printed no join line:\n${initOut}`);
  const hub2Kc = new KubeConfig();
  hub2Kc.loadFromFile(o.hub2.kubeconfigPath);
  o.progress?.(
    `tether join --agent-namespace ${secondHubAgentNamespace}: ${o.clusters.map((c) => c.name).join(', ')} joined to hub2 too…`,
  );
  await Promise.all(
    o.clusters.map(async (cluster) => {
      await tether(
        [
          'join',
          `--hub-token=${token}`,
          `--hub-apiserver=${o.hub2ApiserverUrl}`,
          `--ca-file=${hubCa}`,
          `--agent-namespace=${secondHubAgentNamespace}`,
          '--no-serviceaccount',
          '--no-in-process-addons',
          `--proxy-url=${o.squidUrlFor(cluster.name)}`,
          `--cluster-name=${cluster.name}`,
          `--kubeconfig=${cluster.kubeconfigPath}`,
          `--image=${o.imageRef}`,
          '--image-pull-policy=Never',
          ...(o.joinArgs ?? []),
        ],
        signal,
      );
      await acceptUntilAvailable(hub2Kc, cluster.name, o.timeoutMs, signal);
    }),
  );
}
