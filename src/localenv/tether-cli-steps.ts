// The steps `tether up` on real nodes takes with tether's own CLI (in-cluster-stack.ts, second-hub.ts):
// a verb run as a child process, so the path is the CLI's path, and the accept loop `tether accept`
// runs on the hub.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, ManagedClusterCondition, managedClusterResource } from '../api/index.ts';
import { errorMessage, TetherError } from '../errors.ts';
import { isConditionTrue, ResourceClient } from '../kube/index.ts';
import { approveClusterCsrs } from '../registration/hub/index.ts';
import { pollUntil } from '../wait.ts';
import { localChildEnv, tetherBin } from './process.ts';

const execFileAsync = promisify(execFile);

/** The agent endpoint's NodePort on a hub node. */
export const AGENT_NODE_PORT = 31091;

/** A tether CLI verb as a child process; its stdout, or its stderr in the error. */
export async function tether(args: string[], signal?: AbortSignal): Promise<string> {
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

/**
 * What `tether accept` does, each round until the cluster has joined (the agent creates its
 * ManagedCluster first and its CSR right after), until it is Joined and Available.
 */
export async function acceptUntilAvailable(
  hubKc: KubeConfig,
  cluster: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
  await pollUntil(
    async () => {
      const current = await clusters.get(cluster);
      if (!current) return false;
      const conditions = current.status?.conditions ?? [];
      if (!isConditionTrue(conditions, ManagedClusterCondition.Joined))
        await approveClusterCsrs(hubKc, cluster);
      return (
        isConditionTrue(conditions, ManagedClusterCondition.Joined) &&
        isConditionTrue(conditions, ManagedClusterCondition.Available)
      );
    },
    {
      timeoutMs,
      intervalMs: 250,
      description: `ManagedCluster ${cluster} to register (its agent pod), be accepted, and turn Joined and Available`,
      signal,
    },
  );
}
