// The registration part of `tether up`: the hub controllers (`tether hub`) and one `tether agent`
// per managed cluster. Agents bootstrap with a token from the hub's bootstrap ServiceAccount, reach
// the hub only through squid, get their certificate through the CSR flow (auto-approved for the
// bootstrap user) and are accepted here the way an admin's `tether accept` would. The same
// certificate then authenticates their proxy-agent to the proxy-server.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, ManagedClusterCondition, managedClusterResource } from '../api/index.ts';
import { isConditionTrue, ResourceClient } from '../kube/index.ts';
import {
  BOOTSTRAP_USER,
  bootstrapKubeconfigYaml,
  createBootstrapToken,
  ensureBootstrapIdentity,
  writeBootstrapSecret,
} from '../registration/bootstrap.ts';
import { approveClusterCsrs } from '../registration/hub/index.ts';
import { pollUntil } from '../wait.ts';
import { freePort, SupervisedProcess, tetherBin } from './process.ts';
import { waitReady } from './ready.ts';
import type { ControlPlaneInfo } from './types.ts';

/** Lifetime of each cluster's bootstrap token in `tether up`. */
const BOOTSTRAP_TOKEN_SECONDS = 3600;

function kubeConfigOf(cp: ControlPlaneInfo): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return kc;
}

export async function startRegisteredAgents(opts: {
  dir: string;
  hub: ControlPlaneInfo;
  clusters: ControlPlaneInfo[];
  squidUrl: string;
  proxyServerAddress: string;
  hubCaPath: string;
  processes: SupervisedProcess[];
  timeoutMs: number;
  signal?: AbortSignal;
}): Promise<void> {
  const signal = opts.signal;
  const hubKc = kubeConfigOf(opts.hub);
  await ensureBootstrapIdentity(hubKc);
  const hubOps = await freePort();
  const hub = new SupervisedProcess({
    name: 'hub/controllers',
    command: process.execPath,
    logFile: join(opts.dir, 'hub.log'),
    args: [
      tetherBin,
      'hub',
      `--kubeconfig=${opts.hub.kubeconfigPath}`,
      `--auto-approved-csr-users=${BOOTSTRAP_USER}`,
      `--ops-port=${hubOps}`,
    ],
  });
  opts.processes.push(hub);
  hub.readiness = () => waitReady(hub, hubOps, opts.timeoutMs);
  await waitReady(hub, hubOps, opts.timeoutMs, signal);
  const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
  await Promise.all(
    opts.clusters.map(async (cluster) => {
      // Each cluster its own short-lived bootstrap token: one cluster's bootstrap Secret does not
      // outlive its join, and a leaked one is another cluster's problem for an hour at most.
      signal?.throwIfAborted();
      const { token } = await createBootstrapToken(hubKc, BOOTSTRAP_TOKEN_SECONDS);
      const bootstrapYaml = bootstrapKubeconfigYaml({
        hubApiserver: opts.hub.apiserverUrl,
        hubCaPem: readFileSync(opts.hub.caCertPath, 'utf8'),
        token,
        proxyUrl: opts.squidUrl,
      });
      await writeBootstrapSecret(kubeConfigOf(cluster), bootstrapYaml);
      const ops = await freePort();
      const agent = new SupervisedProcess({
        name: `${cluster.name}/agent`,
        command: process.execPath,
        logFile: join(opts.dir, `${cluster.name}-agent.log`),
        args: [
          tetherBin,
          'agent',
          `--cluster-name=${cluster.name}`,
          '--agent-name=agent',
          `--kubeconfig=${cluster.kubeconfigPath}`,
          `--proxy-url=${opts.squidUrl}`,
          `--proxy-server=${opts.proxyServerAddress}`,
          `--hub-ca-file=${opts.hubCaPath}`,
          `--ops-port=${ops}`,
        ],
      });
      opts.processes.push(agent);
      // Accept the cluster as soon as its agent has created it (what `tether accept` does).
      await pollUntil(
        async () => {
          if (!agent.running) throw new Error(`${agent.name} exited:\n${agent.tail()}`);
          if (!(await clusters.get(cluster.name))) return false;
          return (await approveClusterCsrs(hubKc, cluster.name)).accepted;
        },
        {
          timeoutMs: opts.timeoutMs,
          intervalMs: 250,
          description: `ManagedCluster ${cluster.name} to appear and be accepted`,
          signal,
        },
      );
      agent.readiness = () => waitReady(agent, ops, opts.timeoutMs);
      await waitReady(agent, ops, opts.timeoutMs, signal);
      await pollUntil(
        async () => {
          const conditions = (await clusters.get(cluster.name))?.status?.conditions ?? [];
          return (
            isConditionTrue(conditions, ManagedClusterCondition.Joined) &&
            isConditionTrue(conditions, ManagedClusterCondition.Available)
          );
        },
        {
          timeoutMs: opts.timeoutMs,
          intervalMs: 250,
          description: `ManagedCluster ${cluster.name} to be Joined and Available`,
          signal,
        },
      );
    }),
  );
}
