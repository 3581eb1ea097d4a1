// One registration-agent scenario on the shared e2e control planes: a unique cluster name, a fake
// hub (bootstrap identity, approver, accept), a per-test agent namespace on cluster1 (which plays
// the managed cluster), agents started through it, and a cleanup that stops the agents first and
// then removes every object on both sides.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  bootstrapHubKubeconfigSecretName,
  HubKubeconfigSecretKey,
  hubKubeconfigSecretName,
  type ManagedCluster,
} from '../../../src/api/index.ts';
import { loadKubeconfig, ResourceClient } from '../../../src/kube/index.ts';
import { logger } from '../../../src/log.ts';
import {
  type RegistrationAgent,
  type RegistrationAgentOptions,
  startRegistrationAgent,
} from '../../../src/registration/agent/index.ts';
import { namespaceResource, type Secret, secretResource } from '../../../src/registration/agent/kinds.ts';
import { pollUntil } from '../../../src/wait.ts';
import type { TestEnv } from '../../e2e/env.ts';
import { uniqueName } from '../../e2e/helpers.ts';
import { FakeHub } from './fake-hub.ts';

export interface AgentFixture {
  readonly clusterName: string;
  /** agent namespace on cluster1 */
  readonly namespace: string;
  readonly hub: FakeHub;
  /** cluster1 admin */
  readonly managed: KubeConfig;
  /** user name of the bootstrap ServiceAccount */
  readonly bootstrapUser: string;
  writeBootstrapSecret(proxyUrl?: string): Promise<void>;
  /** start an agent for this cluster (stopped by cleanup) */
  start(options?: Partial<RegistrationAgentOptions>): Promise<RegistrationAgent>;
  /** wait for the agent's ManagedCluster, then accept it as the hub */
  acceptWhenCreated(options?: { createLease?: boolean }): Promise<void>;
  hubSecret(): Promise<Secret | undefined>;
  secretValue(secret: Secret | undefined, key: string): string;
  cluster(): Promise<ManagedCluster | undefined>;
  cleanup(): Promise<void>;
}

export async function agentFixture(
  env: TestEnv,
  prefix = 'reg',
  options: { approveAfterMs?: number } = {},
): Promise<AgentFixture> {
  const clusterName = uniqueName(prefix);
  const namespace = uniqueName(`${prefix}-agent`);
  const admin = loadKubeconfig(env.hub.kubeconfigPath);
  const managed = loadKubeconfig(env.cluster1.kubeconfigPath);
  const hub = new FakeHub({ hub: env.hub, admin, name: uniqueName(`${prefix}-hub`) });
  const secrets = new ResourceClient<Secret>(managed, secretResource);
  const namespaces = new ResourceClient(managed, namespaceResource);
  const agents: RegistrationAgent[] = [];
  const bootstrapUser = await hub.createBootstrapIdentity();
  await namespaces.create({ metadata: { name: namespace } });
  hub.startApprover(clusterName, options.approveAfterMs ?? 0);
  const log = logger('registration-agent-e2e', { cluster: clusterName });

  return {
    clusterName,
    namespace,
    hub,
    managed,
    bootstrapUser,
    async writeBootstrapSecret(proxyUrl?: string) {
      const yaml = await hub.bootstrapKubeconfig(proxyUrl);
      await secrets.apply(
        {
          metadata: { name: bootstrapHubKubeconfigSecretName, namespace },
          data: { [HubKubeconfigSecretKey.Kubeconfig]: Buffer.from(yaml).toString('base64') },
        },
        { fieldManager: 'e2e', force: true },
      );
    },
    async start(options = {}) {
      const agent = await startRegistrationAgent({
        clusterName,
        agentName: 'e2e-agent',
        managedKubeConfig: managed,
        agentNamespace: namespace,
        statusIntervalSeconds: 1,
        log,
        ...options,
      });
      agents.push(agent);
      return agent;
    },
    async acceptWhenCreated(options = {}) {
      await pollUntil(() => hub.clusters.get(clusterName), {
        timeoutMs: 30_000,
        description: `ManagedCluster ${clusterName} created by the agent`,
      });
      await hub.accept(clusterName, options);
    },
    hubSecret: () => secrets.get(hubKubeconfigSecretName, namespace),
    secretValue: (secret, key) => Buffer.from(secret?.data?.[key] ?? '', 'base64').toString('utf8'),
    cluster: () => hub.clusters.get(clusterName),
    async cleanup() {
      await Promise.all(agents.splice(0).map((a) => a.stop()));
      await namespaces.delete(namespace, undefined, { ignoreNotFound: true });
      await hub.cleanup();
    },
  };
}
