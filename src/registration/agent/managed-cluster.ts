// The ManagedCluster on the hub as the agent first creates it (with the bootstrap credential, which
// may only create and get it): this cluster's apiserver URL and CA bundle for hub services, and the
// lease interval. The hub decides the rest (hubAcceptsClient, taints); later spec changes the agent
// makes (new client configs) go through the status session with the agent's own identity.
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { type ClientConfig, type ManagedCluster, managedClusterResource } from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { isAlreadyExists, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { b64 } from './kinds.ts';

/** This cluster's apiserver as hub services should reach it: URL and base64 CA bundle. */
export function managedClusterClientConfigs(managed: KubeConfig): ClientConfig[] {
  const cluster = managed.getCurrentCluster();
  if (!cluster) throw new InvalidArgumentError('managed kubeconfig: no current cluster');
  let caBundle: string | undefined;
  if (cluster.caData) caBundle = cluster.caData;
  else if (cluster.caFile) caBundle = b64(readFileSync(cluster.caFile, 'utf8'));
  return [{ url: cluster.server.replace(/\/$/, ''), ...(caBundle ? { caBundle } : {}) }];
}

export interface EnsureManagedClusterOptions {
  clusterName: string;
  clientConfigs: ClientConfig[];
  leaseDurationSeconds: number;
  signal?: AbortSignal;
  log: Logger;
}

/** Create the ManagedCluster unless it exists (created by us earlier, or by a hub admin). */
export async function ensureManagedCluster(
  hub: KubeConfig,
  opts: EnsureManagedClusterOptions,
): Promise<void> {
  const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
  const { clusterName, signal } = opts;
  if (await clusters.get(clusterName, undefined, { signal })) return;
  try {
    await clusters.create(
      {
        metadata: { name: clusterName },
        spec: {
          hubAcceptsClient: false,
          managedClusterClientConfigs: opts.clientConfigs,
          leaseDurationSeconds: opts.leaseDurationSeconds,
        },
      },
      { signal },
    );
    opts.log.info('ManagedCluster created on the hub: waiting for a hub admin to accept it');
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}
