// Which clusters may hold tunnels, as the hub says: a cluster's agent certificate proves *which*
// cluster it is; the hub's ManagedCluster says whether that cluster is still welcome. Only a
// ManagedCluster that exists, is not being deleted and has `spec.hubAcceptsClient: true` may
// connect, and when the hub denies or deletes one, every live tunnel of that cluster is closed at
// once (the informer's watch event, not a poll). An addon identity (the cluster-proxy addon's,
// agent-identity.ts) needs one thing more: the addon enabled on that cluster — its
// ManagedClusterAddOn exists in the cluster namespace and is not being deleted — so disabling the
// addon ends its tunnels at once, although its certificate stays valid until it expires. This
// module owns those decisions and the watches; it does not touch sessions itself — the
// proxy-server subscribes to revocations.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../api/addon.ts';
import { type ManagedCluster, managedClusterResource } from '../api/index.ts';
import { Informer, ResourceClient } from '../kube/index.ts';
import { type Logger, logger as makeLogger } from '../log.ts';
import { clusterProxyAddonName } from './agent-identity.ts';

/** The hub's say on which clusters may hold tunnels (injected into ProxyServer). */
export interface ClusterAdmission {
  /**
   * undefined when `cluster` may connect now — with `addon`: that addon's agent of the cluster —
   * otherwise why it may not
   */
  refusal(cluster: string, addon?: string): string | undefined;
  /**
   * calls `listener` whenever a cluster stops being accepted (addon undefined: every tunnel of it)
   * or an addon is disabled on it (only that addon's tunnels); returns an unsubscribe function
   */
  onRevoked(listener: (cluster: string, why: string, addon?: string) => void): () => void;
}

/** Why `mc` may not hold tunnels, or undefined when it may. */
export function managedClusterRefusal(name: string, mc: ManagedCluster | undefined): string | undefined {
  if (!mc) return `ManagedCluster ${name} does not exist on the hub`;
  if (mc.metadata?.deletionTimestamp) return `ManagedCluster ${name} is being deleted`;
  if (mc.spec?.hubAcceptsClient !== true)
    return `ManagedCluster ${name} is not accepted (hubAcceptsClient is not true)`;
  return undefined;
}

/** Why addon `addon`'s agent of `cluster` may not hold tunnels (given its ManagedClusterAddOn), or undefined. */
export function addonRefusal(
  cluster: string,
  addon: string,
  mca: ManagedClusterAddOn | undefined,
): string | undefined {
  if (!mca)
    return `addon ${addon} is not enabled on cluster ${cluster} (no ManagedClusterAddOn ${cluster}/${addon})`;
  if (mca.metadata?.deletionTimestamp) return `addon ${addon} is being disabled on cluster ${cluster}`;
  return undefined;
}

/**
 * ClusterAdmission backed by a list+watch of the hub's ManagedClusters and of the cluster-proxy
 * ManagedClusterAddOns. Without the right to list the latter, only addon identities are refused.
 */
export class HubClusterAdmission implements ClusterAdmission {
  private readonly informer: Informer<ManagedCluster>;
  private readonly addonInformer: Informer<ManagedClusterAddOn>;
  private readonly listeners = new Set<(cluster: string, why: string, addon?: string) => void>();
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
    this.addonInformer = new Informer<ManagedClusterAddOn>(
      new ResourceClient(hubKubeConfig, managedClusterAddOnResource),
      {
        name: 'managedclusteraddons (proxy-server admission)',
        fieldSelector: `metadata.name=${clusterProxyAddonName}`,
        log: this.log,
      },
    );
    const addonGone = (mca: ManagedClusterAddOn, why: string): void =>
      this.revoke(mca.metadata?.namespace ?? '', why, mca.metadata?.name ?? clusterProxyAddonName);
    this.addonInformer.addHandlers({
      update: (_old, mca) => {
        if (mca.metadata?.deletionTimestamp)
          addonGone(mca, `addon ${mca.metadata.name} is being disabled on cluster ${mca.metadata.namespace}`);
      },
      delete: (mca) =>
        addonGone(mca, `addon ${mca.metadata?.name} was disabled on cluster ${mca.metadata?.namespace}`),
    });
  }

  /**
   * Starts the watches; resolves once the first list of ManagedClusters has arrived (or rejects
   * after timeoutMs). ManagedClusterAddOns load alongside: until they have, addon identities are
   * refused (an agent retries), and a proxy-server that may not list them says so after timeoutMs.
   */
  async start(timeoutMs: number): Promise<void> {
    this.informer.start();
    this.addonInformer.start();
    this.addonInformer
      .waitForSync(timeoutMs)
      .catch((err: Error) =>
        this.log.warn(
          { err: err.message },
          'cannot list managedclusteraddons: addon identities (cluster-proxy) are refused until it can (it needs list and watch on managedclusteraddons.addon.open-cluster-management.io)',
        ),
      );
    await this.informer.waitForSync(timeoutMs);
  }

  get synced(): boolean {
    return this.informer.hasSynced();
  }

  refusal(cluster: string, addon?: string): string | undefined {
    if (!this.informer.hasSynced()) return "the hub's ManagedClusters are not loaded yet";
    const why = managedClusterRefusal(cluster, this.informer.getByName(cluster));
    if (why || addon === undefined) return why;
    if (addon !== clusterProxyAddonName) return `addon ${addon} may not hold tunnels`;
    if (!this.addonInformer.hasSynced()) return "the hub's ManagedClusterAddOns are not loaded yet";
    return addonRefusal(cluster, addon, this.addonInformer.getByName(addon, cluster));
  }

  onRevoked(listener: (cluster: string, why: string, addon?: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private check(name: string, mc: ManagedCluster): void {
    const why = managedClusterRefusal(name, mc);
    if (why) this.revoke(name, why);
  }

  private revoke(cluster: string, why: string, addon?: string): void {
    if (!cluster) return;
    for (const l of this.listeners) {
      try {
        l(cluster, why, addon);
      } catch (err) {
        this.log.error({ cluster, err: (err as Error).message }, 'revocation listener failed');
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all([this.informer.stop(), this.addonInformer.stop()]);
  }
}
