// The ManagedCluster on the hub as the agent first creates it (with the bootstrap credential, which
// may only create and get it): this cluster's apiserver URL and CA bundle for hub services, and the
// lease interval. The hub decides the rest (hubAcceptsClient, taints); later spec changes the agent
// makes (new client configs) go through the status session with the agent's own identity.
// ManagedClusterRecreator brings it back when a hub admin deletes it while the agent runs.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { type ClientConfig, type ManagedCluster, managedClusterResource } from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { isAlreadyExists, isForbidden, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { type BootstrapSource, loadBootstrapKubeconfig } from './bootstrap-kubeconfig.ts';
import { describeError } from './describe-error.ts';
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

/**
 * Create the ManagedCluster unless it exists (created by us earlier, or by a hub admin): one
 * request either way, the apiserver's AlreadyExists being the answer to "does it exist" (a read
 * follows only when creating is forbidden).
 */
export async function ensureManagedCluster(
  hub: KubeConfig,
  opts: EnsureManagedClusterOptions,
): Promise<void> {
  const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
  const { clusterName, signal } = opts;
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
    if (isAlreadyExists(err)) return;
    // A bootstrap identity that may read but not create (the cluster was made by a hub admin).
    if (isForbidden(err) && (await clusters.get(clusterName, undefined, { signal }))) return;
    throw err;
  }
}

export interface ManagedClusterRecreatorOptions extends BootstrapSource {
  clusterName: string;
  /** the managed cluster itself: its apiserver address and CA go into the ManagedCluster */
  managedKubeConfig: KubeConfig;
  leaseDurationSeconds: number;
  /** the current hub credential, tried when there is no bootstrap kubeconfig */
  hubKubeConfig(): KubeConfig | undefined;
  /** first retry delay while the old cluster is still being deleted (default 1 s), doubling to 10 s */
  retryBaseMs?: number;
  log: Logger;
}

/**
 * Recreates the ManagedCluster when a hub admin deletes it while the agent runs (OCM's agent does
 * it when it restarts; this one does not wait for a restart). Woken by the hub session when the
 * cluster is deleting or gone; checks with the bootstrap kubeconfig (its identity may get and
 * create ManagedClusters; the agent's own RBAC goes with the cluster), waits for a deletion in
 * progress to finish, then creates the cluster as at first join. The hub admin accepts it again;
 * the agent's certificate stays valid meanwhile and its hub session resumes once the hub grants
 * the cluster's RBAC again.
 */
export class ManagedClusterRecreator {
  private readonly opts: ManagedClusterRecreatorOptions;
  private readonly abort = new AbortController();
  private wakeUp: () => void = () => {};
  private pending = false;
  private running?: Promise<void>;

  constructor(opts: ManagedClusterRecreatorOptions) {
    this.opts = opts;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** The cluster may be deleting or gone: check (and recreate) soon. */
  wake(): void {
    this.pending = true;
    this.wakeUp();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.wakeUp();
    await this.running;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const base = this.opts.retryBaseMs ?? 1000;
    while (!signal.aborted) {
      if (!this.pending) {
        await new Promise<void>((resolve) => {
          this.wakeUp = resolve;
        });
        this.wakeUp = () => {};
        continue;
      }
      this.pending = false;
      for (let attempt = 0; !signal.aborted; attempt++) {
        let done = false;
        try {
          done = await this.checkOnce();
        } catch (err) {
          if (signal.aborted) return;
          this.opts.log.warn({ err: describeError(err) }, 'cannot check whether the ManagedCluster exists');
        }
        if (done) break;
        await sleep(Math.min(base * 2 ** attempt, 10_000), undefined, { signal }).catch(() => {});
      }
    }
  }

  /** true when there is nothing more to do: the cluster exists (again) and is not being deleted. */
  private async checkOnce(): Promise<boolean> {
    const { clusterName, log } = this.opts;
    const signal = this.abort.signal;
    let hub: KubeConfig | undefined;
    try {
      hub = (await loadBootstrapKubeconfig(this.opts, signal)).kubeconfig;
    } catch {
      hub = this.opts.hubKubeConfig();
    }
    if (!hub) return true;
    const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
    const cluster = await clusters.get(clusterName, undefined, { signal });
    if (cluster) return !cluster.metadata.deletionTimestamp;
    log.warn('the ManagedCluster was deleted on the hub: creating it again');
    await ensureManagedCluster(hub, {
      clusterName,
      clientConfigs: managedClusterClientConfigs(this.opts.managedKubeConfig),
      leaseDurationSeconds: this.opts.leaseDurationSeconds,
      signal,
      log,
    });
    return true;
  }
}
