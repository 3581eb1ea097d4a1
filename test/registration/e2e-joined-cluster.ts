// Shared by the e2e files that run the real registration hub and the real registration agent
// together (registration-lifecycle, registration-availability-flap): a hub scoped to one label, a
// pre-accepted ManagedCluster with a short lease, a bootstrap kubeconfig through the shared squid,
// and an agent on cluster1 that can be stopped and started again. cleanup() undoes all of it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { type ManagedCluster, ManagedClusterCondition, managedClusterResource } from '../../src/api/index.ts';
import { findCondition, ResourceClient } from '../../src/kube/index.ts';
import { type RegistrationAgent, startRegistrationAgent } from '../../src/registration/agent/index.ts';
import {
  BOOTSTRAP_USER,
  bootstrapKubeconfigYaml,
  createBootstrapToken,
  ensureBootstrapIdentity,
} from '../../src/registration/bootstrap.ts';
import { type RegistrationHub, startRegistrationHub } from '../../src/registration/hub/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from '../e2e/env.ts';
import { adminKubeConfig, uniqueName } from '../e2e/helpers.ts';

export const env = testEnv();
export const hubKc = adminKubeConfig(env.hub);
export const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);

export const availableOf = (mc: ManagedCluster | undefined) =>
  findCondition(mc?.status?.conditions ?? [], ManagedClusterCondition.Available)?.status;
export const taintsOf = (mc: ManagedCluster | undefined) => (mc?.spec?.taints ?? []).map((t) => t.key);

export interface JoinedCluster {
  name: string;
  /** for an agent run as a process (`tether agent --bootstrap-kubeconfig … --agent-namespace …`) */
  bootstrapKubeconfigPath: string;
  agentNamespace: string;
  /** start the agent (stopping one that runs); resolves once it runs */
  startAgent(): Promise<RegistrationAgent>;
  stopAgent(): Promise<void>;
  cleanup(): Promise<void>;
}

/** Hub + accepted cluster + bootstrap kubeconfig; the agent is started by the caller. */
export async function joinedCluster(prefix: string, leaseSeconds: number): Promise<JoinedCluster> {
  const scope = uniqueName(prefix);
  const scopeLabel = `e2e.tether.dev/registration-${prefix}`;
  const name = uniqueName(prefix);
  const agentNamespace = uniqueName('ocm-agent');
  const dir = mkdtempSync(join(tmpdir(), `tether-reg-${prefix}-`));
  let hub: RegistrationHub | undefined;
  let agent: RegistrationAgent | undefined;
  const cleanup = async () => {
    await agent?.stop();
    agent = undefined;
    await clusters.delete(name, undefined, { ignoreNotFound: true }).catch(() => {});
    await pollUntil(async () => !(await clusters.get(name)), {
      timeoutMs: 30_000,
      description: `${name} deleted by the hub`,
    }).catch(() => {});
    await hub?.stop();
    await adminKubeConfig(env.cluster1)
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: agentNamespace })
      .catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    hub = await startRegistrationHub({
      hubKubeConfig: hubKc,
      leaderElection: false,
      autoApprovedCsrUsers: [BOOTSTRAP_USER],
      clusterLabelSelector: `${scopeLabel}=${scope}`,
    });
    // A GitOps-style admin pre-creates and accepts the cluster; the agent joins it.
    await clusters.create({
      metadata: { name, labels: { [scopeLabel]: scope } },
      spec: { hubAcceptsClient: true, leaseDurationSeconds: leaseSeconds },
    });
    await ensureBootstrapIdentity(hubKc);
    const { token } = await createBootstrapToken(hubKc, 3600);
    writeFileSync(
      join(dir, 'bootstrap.kubeconfig'),
      bootstrapKubeconfigYaml({
        hubApiserver: env.hub.apiserverUrl,
        hubCaPem: readFileSync(env.hub.caCertPath, 'utf8'),
        token,
        proxyUrl: env.tunnel.squidUrl,
      }),
    );
  } catch (err) {
    await cleanup();
    throw err;
  }
  const stopAgent = async () => {
    await agent?.stop();
    agent = undefined;
  };
  return {
    name,
    bootstrapKubeconfigPath: join(dir, 'bootstrap.kubeconfig'),
    agentNamespace,
    async startAgent() {
      await stopAgent();
      agent = await startRegistrationAgent({
        clusterName: name,
        agentName: 'agent',
        managedKubeConfig: adminKubeConfig(env.cluster1),
        bootstrapKubeconfigPath: join(dir, 'bootstrap.kubeconfig'),
        agentNamespace,
        leaseDurationSeconds: leaseSeconds,
        statusIntervalSeconds: 1,
      });
      return agent;
    },
    stopAgent,
    cleanup,
  };
}
