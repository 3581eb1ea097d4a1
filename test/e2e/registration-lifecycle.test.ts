// The real registration hub and the real registration agent together, the agent behind squid: the
// cluster joins and turns Available; when the agent stops, the hub's lease watchdog turns it
// Unknown and taints it unreachable within 5 × leaseDurationSeconds; when the agent returns, it is
// Available again and the taint is gone.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterTaint,
  managedClusterResource,
} from '../../src/api/index.ts';
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
import { testEnv } from './env.ts';
import { adminKubeConfig, uniqueName } from './helpers.ts';

const env = testEnv();
const hubKc = adminKubeConfig(env.hub);
const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const scope = uniqueName('lifecycle');
const scopeLabel = 'e2e.tether.dev/registration-lifecycle';
const cluster = uniqueName('life');
const agentNamespace = uniqueName('ocm-agent');
const dir = mkdtempSync(join(tmpdir(), 'tether-reg-life-'));
const LEASE_SECONDS = 2;

let hub: RegistrationHub | undefined;
let agent: RegistrationAgent | undefined;

afterAll(async () => {
  await agent?.stop();
  await clusters.delete(cluster, undefined, { ignoreNotFound: true }).catch(() => {});
  await pollUntil(async () => !(await clusters.get(cluster)), {
    timeoutMs: 30_000,
    description: `${cluster} deleted by the hub`,
  }).catch(() => {});
  await hub?.stop();
  await adminKubeConfig(env.cluster1)
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: agentNamespace })
    .catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

async function conditions(): Promise<{ available?: string; taints: string[] }> {
  const mc = await clusters.get(cluster);
  return {
    available: findCondition(mc?.status?.conditions ?? [], ManagedClusterCondition.Available)?.status,
    taints: (mc?.spec?.taints ?? []).map((t) => t.key),
  };
}

function startAgent(bootstrapPath: string): Promise<RegistrationAgent> {
  return startRegistrationAgent({
    clusterName: cluster,
    agentName: 'agent',
    managedKubeConfig: adminKubeConfig(env.cluster1),
    bootstrapKubeconfigPath: bootstrapPath,
    agentNamespace,
    leaseDurationSeconds: LEASE_SECONDS,
    statusIntervalSeconds: 1,
  });
}

describe('registration hub + agent', () => {
  it('joins through squid, goes Unknown + unreachable when the agent stops, and recovers when it returns', async () => {
    hub = await startRegistrationHub({
      hubKubeConfig: hubKc,
      leaderElection: false,
      autoApprovedCsrUsers: [BOOTSTRAP_USER],
      clusterLabelSelector: `${scopeLabel}=${scope}`,
    });
    // A GitOps-style admin pre-creates and accepts the cluster; the agent joins it.
    await clusters.create({
      metadata: { name: cluster, labels: { [scopeLabel]: scope } },
      spec: { hubAcceptsClient: true, leaseDurationSeconds: LEASE_SECONDS },
    });
    await ensureBootstrapIdentity(hubKc);
    const { token } = await createBootstrapToken(hubKc, 3600);
    const bootstrapPath = join(dir, 'bootstrap.kubeconfig');
    writeFileSync(
      bootstrapPath,
      bootstrapKubeconfigYaml({
        hubApiserver: env.hub.apiserverUrl,
        hubCaPem: readFileSync(env.hub.caCertPath, 'utf8'),
        token,
        proxyUrl: env.tunnel.squidUrl,
      }),
    );

    agent = await startAgent(bootstrapPath);
    await pollUntil(async () => (await conditions()).available === 'True', {
      timeoutMs: 60_000,
      description: 'Available True',
    });
    const joined = findCondition(
      (await clusters.get(cluster))?.status?.conditions ?? [],
      ManagedClusterCondition.Joined,
    );
    expect(joined?.status).toBe('True');

    await agent.stop();
    agent = undefined;
    const stoppedAt = Date.now();
    await pollUntil(
      async () => {
        const c = await conditions();
        return c.available === 'Unknown' && c.taints.includes(ManagedClusterTaint.Unreachable);
      },
      {
        timeoutMs: 5 * LEASE_SECONDS * 1000 + 15_000,
        description: 'Available Unknown with the unreachable taint',
      },
    );
    // Not before the grace period (5 × lease), and not long after it.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(5 * LEASE_SECONDS * 1000 - 2000);

    agent = await startAgent(bootstrapPath);
    await pollUntil(
      async () => {
        const c = await conditions();
        return c.available === 'True' && c.taints.length === 0;
      },
      { timeoutMs: 30_000, description: 'Available True again with the taints removed' },
    );
  });
});
