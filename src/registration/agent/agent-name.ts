// The agent's name (the `<agent>` in its certificate's CN system:open-cluster-management:<cluster>:<agent>)
// as OCM's registration agent picks it: five random characters generated once and kept in
// `hub-kubeconfig-secret` key `agent-name`, so a restarted or rescheduled agent (another pod name,
// another host) finds its certificate still valid for its name instead of bootstrapping again.
// Owns only the `cluster-name` / `agent-name` keys of a secret that does not hold them yet; the
// credential keys belong to hub-kubeconfig-secret.ts.
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { HubKubeconfigSecretKey, hubKubeconfigSecretName } from '../../api/index.ts';
import { ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { describeError } from './describe-error.ts';
import { ensureAgentNamespace, fieldManager } from './hub-kubeconfig-secret.ts';
import { b64, type Secret, secretResource, unb64 } from './kinds.ts';

/** Length of a generated agent name (OCM's spokeAgentNameLength). */
export const generatedAgentNameLength = 5;

/** Characters of a generated name: apimachinery's utilrand alphabet (no vowels, no 0/1/3 look-alikes). */
export const agentNameAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

/** A new random agent name, as OCM's agent generates one (utilrand.String(5)). */
export function generateAgentName(random: (max: number) => number = randomInt): string {
  let name = '';
  for (let i = 0; i < generatedAgentNameLength; i++)
    name += agentNameAlphabet[random(agentNameAlphabet.length)];
  return name;
}

/** Whether `name` can be the agent part of the certificate CN. */
export function isValidAgentName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && !name.includes(':') && name.trim() === name;
}

/** The agent name a stored secret holds for `clusterName`, if it holds a usable one. */
export function storedAgentName(secret: Secret | undefined, clusterName: string): string | undefined {
  const data = secret?.data ?? {};
  if (unb64(data[HubKubeconfigSecretKey.ClusterName]) !== clusterName) return undefined;
  const name = unb64(data[HubKubeconfigSecretKey.AgentName]);
  return isValidAgentName(name) ? name : undefined;
}

export interface ResolveAgentNameOptions {
  /** the cluster that keeps the agent's Secrets: the managed cluster, or the hosting one in hosted mode */
  agentKubeConfig: KubeConfig;
  clusterName: string;
  /** namespace of hub-kubeconfig-secret */
  agentNamespace: string;
  /** attempts while the managed apiserver does not answer (default 6, 1 s doubling) */
  attempts?: number;
  signal?: AbortSignal;
  log?: Logger;
}

/**
 * The agent name kept in hub-kubeconfig-secret for this cluster, or a new one generated and stored
 * there at once (before any CSR, so an agent restarted while its CSR waits for approval keeps it).
 */
export async function resolveAgentName(opts: ResolveAgentNameOptions): Promise<string> {
  const attempts = opts.attempts ?? 6;
  for (let attempt = 1; ; attempt++) {
    try {
      return await resolveOnce(opts);
    } catch (err) {
      if (attempt >= attempts || opts.signal?.aborted) throw err;
      const delay = 1000 * 2 ** (attempt - 1);
      opts.log?.warn({ err: describeError(err), retryInMs: delay }, 'cannot read the stored agent name yet');
      await sleep(delay, undefined, { signal: opts.signal });
    }
  }
}

async function resolveOnce(opts: ResolveAgentNameOptions): Promise<string> {
  const { agentKubeConfig, clusterName, agentNamespace: namespace, signal } = opts;
  const secrets = new ResourceClient<Secret>(agentKubeConfig, secretResource);
  const existing = await secrets.get(hubKubeconfigSecretName, namespace, { signal });
  const stored = storedAgentName(existing, clusterName);
  if (stored) return stored;
  const name = generateAgentName();
  await ensureAgentNamespace(agentKubeConfig, namespace, signal);
  // A secret for another cluster (or without a name) holds nothing this agent can use: the apply
  // names only the two identity keys, so the credential keys this field manager wrote go too.
  await secrets.apply(
    {
      metadata: { name: hubKubeconfigSecretName, namespace },
      type: 'Opaque',
      data: {
        [HubKubeconfigSecretKey.ClusterName]: b64(clusterName),
        [HubKubeconfigSecretKey.AgentName]: b64(name),
      },
    },
    { fieldManager, force: true, signal },
  );
  opts.log?.info({ agentName: name }, `generated agent name, kept in ${hubKubeconfigSecretName}`);
  return name;
}
