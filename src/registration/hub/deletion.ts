// ManagedClusterDeletionReconciler: what happens between `kubectl delete managedcluster X` and the
// object going away. While the api-resource-cleanup finalizer holds it: delete every ManifestWork
// and ManagedClusterAddOn in the cluster namespace and wait until they are gone (their own
// finalizers belong to the agents, which clean the managed cluster first), reporting what remains
// in the Deleting condition; then remove the cluster's RBAC and namespace, then the finalizer.
//
// The ManifestWorks and add-ons of a cluster are watched only while that cluster is being deleted
// (one namespace-scoped informer each), so the hub never caches every ManifestWork it serves and
// still hears at once when the last one goes.
import {
  type ManagedCluster,
  managedClusterAddOnResource,
  managedClusterFinalizer,
  manifestWorkResource,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import { Informer, type KubeObject, ResourceClient, type ResourceDescriptor } from '../../kube/index.ts';
import type { ManagedClusterAcceptReconciler } from './accept.ts';
import { type HubContext, setClusterConditions, setClusterFinalizer } from './context.ts';
import { ManagedClusterDeleting } from './resources.ts';

/** Kinds deleted from the cluster namespace before the namespace itself, in this order. */
const namespacedKinds: readonly ResourceDescriptor[] = [manifestWorkResource, managedClusterAddOnResource];

/** Names quoted per kind in the Deleting message; the rest are counted. */
const maxNamesInMessage = 5;

/** How long a namespace watch may take to list before the reconcile fails and is retried. */
const watchSyncTimeoutMs = 30_000;

interface NamespaceWatch {
  informers: Informer<KubeObject>[];
}

/** "manifestworks w1, w2 (+3 more); managedclusteraddons a1": what still holds the cluster. */
export function remainingMessage(remaining: ReadonlyMap<string, readonly string[]>): string {
  const parts: string[] = [];
  for (const [plural, names] of remaining) {
    if (names.length === 0) continue;
    const shown = names.slice(0, maxNamesInMessage).join(', ');
    const more = names.length > maxNamesInMessage ? ` (+${names.length - maxNamesInMessage} more)` : '';
    parts.push(`${plural} ${shown}${more}`);
  }
  return `waiting for these to be deleted from the cluster namespace: ${parts.join('; ')}`;
}

export class ManagedClusterDeletionReconciler {
  private readonly ctx: HubContext;
  private readonly accept: ManagedClusterAcceptReconciler;
  private readonly requeue: (cluster: string) => void;
  private readonly clients: ResourceClient<KubeObject>[];
  private readonly watches = new Map<string, NamespaceWatch>();

  /** `requeue` puts a cluster back on the queue when something in its namespace changes. */
  constructor(ctx: HubContext, accept: ManagedClusterAcceptReconciler, requeue: (cluster: string) => void) {
    this.ctx = ctx;
    this.accept = accept;
    this.requeue = requeue;
    this.clients = namespacedKinds.map((kind) => new ResourceClient<KubeObject>(ctx.kubeconfig, kind));
  }

  /** One step of deleting `cluster` (it has a deletionTimestamp). */
  async reconcile(cluster: ManagedCluster): Promise<void> {
    const name = cluster.metadata.name ?? '';
    if (!cluster.metadata.finalizers?.includes(managedClusterFinalizer)) {
      await this.forget(name);
      return;
    }
    const watch = await this.watch(name);
    const remaining = new Map<string, string[]>();
    for (const [i, informer] of watch.informers.entries()) {
      const client = this.clients[i]!;
      const objects = informer.list();
      remaining.set(client.descriptor.plural, objects.map((o) => o.metadata?.name ?? '').sort());
      for (const obj of objects) {
        if (obj.metadata?.deletionTimestamp || !obj.metadata?.name) continue;
        await client.delete(obj.metadata.name, name, {
          ignoreNotFound: true,
          propagationPolicy: 'Background',
        });
      }
    }
    if ([...remaining.values()].some((names) => names.length > 0)) {
      // The informers bring us back here when each of them goes.
      await this.report(
        cluster,
        'False',
        ManagedClusterDeleting.ResourceRemaining,
        remainingMessage(remaining),
      );
      return;
    }
    try {
      await this.accept.removeClusterResources(name);
    } catch (err) {
      const reason = ManagedClusterDeleting.DeletingError;
      await this.report(cluster, 'False', reason, errorMessage(err)).catch(() => undefined);
      throw err;
    }
    await setClusterFinalizer(this.ctx.clusters, name, managedClusterFinalizer, false);
    this.ctx.log.info({ cluster: name }, 'cluster deleted: namespace and RBAC removed, finalizer dropped');
    await this.forget(name);
  }

  /** Stop watching the namespace of a cluster that is gone or no longer ours to clean. */
  async forget(name: string): Promise<void> {
    const watch = this.watches.get(name);
    if (!watch) return;
    this.watches.delete(name);
    await Promise.all(watch.informers.map((informer) => informer.stop()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.watches.keys()].map((name) => this.forget(name)));
  }

  private async watch(name: string): Promise<NamespaceWatch> {
    let watch = this.watches.get(name);
    if (!watch) {
      const informers = this.clients.map(
        (client) =>
          new Informer<KubeObject>(client, {
            namespace: name,
            resyncPeriodMs: 0,
            log: this.ctx.log.child({ cluster: name, resource: client.descriptor.plural }),
          }),
      );
      for (const informer of informers) {
        const requeue = () => this.requeue(name);
        informer.addHandlers({ add: requeue, update: requeue, delete: requeue });
        informer.start();
      }
      watch = { informers };
      this.watches.set(name, watch);
    }
    for (const informer of watch.informers) await informer.waitForSync(watchSyncTimeoutMs);
    return watch;
  }

  private async report(
    cluster: ManagedCluster,
    status: 'True' | 'False',
    reason: string,
    message: string,
  ): Promise<void> {
    const update = { type: ManagedClusterDeleting.type, status, reason, message };
    await setClusterConditions(this.ctx.clusters, cluster.metadata.name ?? '', [update], cluster);
  }
}
