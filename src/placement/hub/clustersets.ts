// The hub's cluster-set controllers, as OCM's registration hub runs them:
//   - keeps the `default` (ExclusiveClusterSetLabel) and `global` (LabelSelector {}) sets: creates
//     them, recreates them when deleted, and rolls back edits of their clusterSelector unless the set
//     is annotated cluster.open-cluster-management.io/autoupdate=false;
//   - labels every ManagedCluster without cluster.open-cluster-management.io/clusterset with
//     `default` (OCM's mutating webhook does this on write; tether's hub does it right after);
//   - writes ClusterSetEmpty on every ManagedClusterSet and Bound on every ManagedClusterSetBinding.
// Owns those writes only; Placements and their decisions belong to the placement controller.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  ClusterSetCondition,
  clusterSetLabel,
  defaultClusterSetName,
  type ManagedCluster,
  type ManagedClusterSet,
  type ManagedClusterSetBinding,
  managedClusterResource,
  managedClusterSetBindingResource,
  managedClusterSetResource,
} from '../../api/index.ts';
import { canonicalJson } from '../../kube/canonical-json.ts';
import {
  type Condition,
  type Controller,
  findCondition,
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeObject,
  ResourceClient,
  runController,
  setCondition,
  splitKey,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import {
  bindingBoundCondition,
  clusterSetAutoUpdateAnnotation,
  clusterSetEmptyCondition,
  clusterSetMembers,
  hubClusterSets,
  needsDefaultClusterSetLabel,
} from './clustersets-membership.ts';
import type { PlacementHubInformers } from './informers.ts';

export interface ClusterSetControllerOptions {
  kubeconfig: KubeConfig;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /** how often the kept sets are checked even without an event (default 10 s, as OCM) */
  keptSetsCheckMs?: number;
  /** started informers to read from instead of its own (startPlacementHub shares them); not stopped by stop() */
  informers?: Pick<PlacementHubInformers, 'clusters' | 'clusterSets' | 'bindings'>;
  log: Logger;
}

export interface ClusterSetControllers {
  /** the caches, for other hub controllers to share (started; stopped by stop() unless given) */
  readonly clusters: Informer<ManagedCluster>;
  readonly clusterSets: Informer<ManagedClusterSet>;
  readonly bindings: Informer<ManagedClusterSetBinding>;
  /** resolves once every controller's caches synced */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

const sameJson = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

/** Start the cluster-set controllers (this replica leads, or runs alone). */
export function startClusterSetControllers(o: ClusterSetControllerOptions): ClusterSetControllers {
  const { kubeconfig, log } = o;
  const clusterClient = new ResourceClient<ManagedCluster>(kubeconfig, managedClusterResource);
  const setClient = new ResourceClient<ManagedClusterSet>(kubeconfig, managedClusterSetResource);
  const bindingClient = new ResourceClient<ManagedClusterSetBinding>(
    kubeconfig,
    managedClusterSetBindingResource,
  );
  const informerOptions = (name: string) => ({
    resyncPeriodMs: o.resyncPeriodMs,
    log: log.child({ informer: name }),
  });
  const given = o.informers;
  const clusters =
    given?.clusters ?? new Informer<ManagedCluster>(clusterClient, informerOptions('managedclusters'));
  const clusterSets =
    given?.clusterSets ?? new Informer<ManagedClusterSet>(setClient, informerOptions('managedclustersets'));
  const bindings =
    given?.bindings ??
    new Informer<ManagedClusterSetBinding>(bindingClient, informerOptions('managedclustersetbindings'));
  // the informers this function created: started here, stopped by stop()
  const own = given ? [] : ([clusters, clusterSets, bindings] as Informer<KubeObject>[]);
  for (const informer of own) informer.start();

  const controllers: Controller[] = [];
  const run = (name: string, options: Omit<Parameters<typeof runController>[0], 'name' | 'log'>) => {
    const controller = runController({ ...options, name, log: log.child({ controller: name }) });
    controllers.push(controller);
    return controller;
  };

  // ---- the kept sets: default and global ----
  const keptSets = run('managedclusterset-kept', {
    informers: [clusterSets as Informer<KubeObject>],
    keyFunc: (obj) => (hubClusterSets.has(obj.metadata?.name ?? '') ? obj.metadata?.name : undefined),
    reconcile: async (name) => {
      const spec = hubClusterSets.get(name);
      if (!spec) return;
      const requeue = { requeueAfterMs: o.keptSetsCheckMs ?? 10_000 };
      const existing = clusterSets.getByName(name);
      if (!existing) {
        try {
          await setClient.create({ metadata: { name }, spec: structuredClone(spec) });
          log.info({ clusterSet: name }, 'ManagedClusterSet created');
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
        return requeue;
      }
      if (existing.metadata.deletionTimestamp) return requeue;
      if (existing.metadata.annotations?.[clusterSetAutoUpdateAnnotation] === 'false') return requeue;
      if (!sameJson(existing.spec?.clusterSelector, spec.clusterSelector)) {
        // A replace, not a merge patch: a merge patch cannot turn a selector back into `{}`.
        await setClient.replace({
          ...existing,
          spec: { ...existing.spec, clusterSelector: structuredClone(spec.clusterSelector) },
        });
        log.info({ clusterSet: name }, 'ManagedClusterSet clusterSelector rolled back');
      }
      return requeue;
    },
  });
  void keptSets.ready.then((ok) => {
    if (ok) for (const name of hubClusterSets.keys()) keptSets.queue.add(name);
  });

  // ---- the default set label on clusters without a set ----
  run('managedcluster-clusterset-label', {
    informers: [clusters as Informer<KubeObject>],
    keyFunc: (obj) => obj.metadata?.name,
    workers: 4,
    reconcile: async (name) => {
      const cluster = clusters.getByName(name);
      if (!cluster || cluster.metadata.deletionTimestamp || !needsDefaultClusterSetLabel(cluster)) return;
      try {
        await clusterClient.patchMerge(name, {
          metadata: {
            resourceVersion: cluster.metadata.resourceVersion,
            labels: { [clusterSetLabel]: defaultClusterSetName },
          },
        });
      } catch (err) {
        if (isNotFound(err)) return;
        // A newer version is on its way through the informer and brings the key back.
        if (isConflict(err)) return;
        throw err;
      }
    },
  });

  // ---- ClusterSetEmpty on every set ----
  run('managedclusterset-status', {
    informers: [clusterSets, clusters] as Informer<KubeObject>[],
    // A cluster change can move any set's count (label and selector sets alike): sets are few.
    keyFunc: (obj, informer) =>
      informer === (clusterSets as Informer<KubeObject>) ? obj.metadata?.name : clusterSets.keys(),
    workers: 2,
    reconcile: async (name) => {
      const set = clusterSets.getByName(name);
      if (!set || set.metadata.deletionTimestamp) return;
      const members = clusterSetMembers(set, clusters.list()).length;
      const conditions = setCondition(set.status?.conditions, clusterSetEmptyCondition(members));
      if (sameCondition(set.status?.conditions, conditions, ClusterSetCondition.Empty)) return;
      await setClient.patchStatus(name, {
        metadata: { resourceVersion: set.metadata.resourceVersion },
        status: { conditions },
      });
    },
  });

  // ---- Bound on every binding ----
  run('managedclustersetbinding', {
    informers: [bindings, clusterSets] as Informer<KubeObject>[],
    keyFunc: (obj, informer) => {
      if (informer === (bindings as Informer<KubeObject>))
        return `${obj.metadata?.namespace}/${obj.metadata?.name}`;
      const setName = obj.metadata?.name;
      return bindings
        .list()
        .filter((b) => b.spec?.clusterSet === setName)
        .map((b) => `${b.metadata.namespace}/${b.metadata.name}`);
    },
    workers: 2,
    reconcile: async (key) => {
      const { namespace, name } = splitKey(key);
      const binding = bindings.getByName(name, namespace);
      if (!binding || binding.metadata.deletionTimestamp) return;
      const setName = binding.spec?.clusterSet ?? '';
      const set = setName ? clusterSets.getByName(setName) : undefined;
      const exists = set !== undefined && !set.metadata.deletionTimestamp;
      const conditions = setCondition(binding.status?.conditions, bindingBoundCondition(setName, exists));
      if (sameCondition(binding.status?.conditions, conditions, ClusterSetCondition.Bound)) return;
      await bindingClient.patchStatus(
        name,
        { metadata: { resourceVersion: binding.metadata.resourceVersion }, status: { conditions } },
        namespace,
      );
    },
  });

  const ready = Promise.all(controllers.map((c) => c.ready)).then((all) => all.every(Boolean));
  return {
    clusters,
    clusterSets,
    bindings,
    ready,
    stop: async () => {
      await Promise.all(controllers.map((c) => c.stop()));
      await Promise.all(own.map((informer) => informer.stop()));
    },
  };
}

/** Whether `type` already says what it is about to say (lastTransitionTime aside). */
function sameCondition(
  before: readonly Condition[] | undefined,
  after: readonly Condition[],
  type: string,
): boolean {
  const a = findCondition(before, type);
  const b = findCondition(after, type);
  return (
    a !== undefined &&
    b !== undefined &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message
  );
}
