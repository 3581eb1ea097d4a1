// Which clusters may hold tunnels, as the hub says: a cluster's agent certificate proves *which*
// cluster it is; the hub's ManagedCluster says whether that cluster is still welcome. Only a
// ManagedCluster that exists, is not being deleted and has `spec.hubAcceptsClient: true` may
// connect, and when the hub denies or deletes one, every live tunnel of that cluster is closed at
// once (the informer's watch event, not a poll). This module owns that decision and the watch; it
// does not touch sessions itself — the proxy-server subscribes to revocations.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, managedClusterResource } from '../api/index.ts';
import { Informer, ResourceClient } from '../kube/index.ts';
import { type Logger, logger as makeLogger } from '../log.ts';

/** The hub's say on which clusters may hold tunnels (injected into ProxyServer). */
export interface ClusterAdmission {
  /** undefined when `cluster` may connect now; otherwise why it may not */
  refusal(cluster: string): string | undefined;
  /** calls `listener` whenever a cluster stops being accepted; returns an unsubscribe function */
  onRevoked(listener: (cluster: string, why: string) => void): () => void;
}

/** Why `mc` may not hold tunnels, or undefined when it may. */
export function managedClusterRefusal(name: string, mc: ManagedCluster | undefined): string | undefined {
  if (!mc) return `ManagedCluster ${name} does not exist on the hub`;
  if (mc.metadata?.deletionTimestamp) return `ManagedCluster ${name} is being deleted`;
  if (mc.spec?.hubAcceptsClient !== true)
    return `ManagedCluster ${name} is not accepted (hubAcceptsClient is not true)`;
  return undefined;
}

/** ClusterAdmission backed by a list+watch of the hub's ManagedClusters. */
export class HubClusterAdmission implements ClusterAdmission {
  private readonly informer: Informer<ManagedCluster>;
  private readonly listeners = new Set<(cluster: string, why: string) => void>();
  private readonly log: Logger;

  constructor(hubKubeConfig: KubeConfig, opts: { log?: Logger } = {}) {
    this.log = opts.log ?? makeLogger('cluster-admission');
    this.informer = new Informer<ManagedCluster>(new ResourceClient(hubKubeConfig, managedClusterResource), {
      name: 'managedclusters (proxy-server admission)',
      log: this.log,
    });
    this.informer.addHandlers({
      update: (_old, mc) => this.check(mc.metadata?.name ?? '', mc),
      delete: (mc) => this.revoke(mc.metadata?.name ?? '', `ManagedCluster ${mc.metadata?.name} was deleted`),
    });
  }

  /** Starts the watch; resolves once the first list has arrived (or rejects after timeoutMs). */
  async start(timeoutMs: number): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync(timeoutMs);
  }

  get synced(): boolean {
    return this.informer.hasSynced();
  }

  refusal(cluster: string): string | undefined {
    if (!this.informer.hasSynced()) return "the hub's ManagedClusters are not loaded yet";
    return managedClusterRefusal(cluster, this.informer.getByName(cluster));
  }

  onRevoked(listener: (cluster: string, why: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private check(name: string, mc: ManagedCluster): void {
    const why = managedClusterRefusal(name, mc);
    if (why) this.revoke(name, why);
  }

  private revoke(cluster: string, why: string): void {
    if (!cluster) return;
    for (const l of this.listeners) {
      try {
        l(cluster, why);
      } catch (err) {
        this.log.error({ cluster, err: (err as Error).message }, 'revocation listener failed');
      }
    }
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }
}
