// The placement hub's shared caches: one informer (one LIST + one WATCH) per kind for the cluster-set
// controllers, the scheduler and the ManifestWorkReplicaSet controller, instead of one per kind and
// controller. All cluster-wide; PlacementDecisions only those labelled with a placement (what both
// the scheduler and the ManifestWorkReplicaSet controller read). runController leaves informers
// that were started before it alone, so whoever creates these starts them first and stops them
// after every controller using them stopped. An informer does not replay its cache to handlers
// added later: controllers register theirs in the same tick the informers start (before the first
// list can arrive), as startPlacementHub does.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ManagedCluster,
  type ManagedClusterSet,
  type ManagedClusterSetBinding,
  managedClusterResource,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../api/index.ts';
import { Informer, type KubeObject, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

export interface PlacementHubInformers {
  readonly clusters: Informer<ManagedCluster>;
  readonly clusterSets: Informer<ManagedClusterSet>;
  readonly bindings: Informer<ManagedClusterSetBinding>;
  readonly placements: Informer<Placement>;
  /** PlacementDecisions labelled cluster.open-cluster-management.io/placement */
  readonly decisions: Informer<PlacementDecision>;
}

export interface SharedPlacementInformers extends PlacementHubInformers {
  stop(): Promise<void>;
}

/** Create and start the shared informers. */
export function startPlacementHubInformers(opts: {
  kubeconfig: KubeConfig;
  resyncPeriodMs?: number;
  log: Logger;
}): SharedPlacementInformers {
  const kc = opts.kubeconfig;
  const informer = <T extends KubeObject>(
    client: ResourceClient<T>,
    name: string,
    labelSelector?: string,
  ): Informer<T> =>
    new Informer<T>(client, {
      resyncPeriodMs: opts.resyncPeriodMs,
      log: opts.log.child({ informer: name }),
      ...(labelSelector ? { labelSelector } : {}),
    });
  const informers = {
    clusters: informer(new ResourceClient<ManagedCluster>(kc, managedClusterResource), 'managedclusters'),
    clusterSets: informer(
      new ResourceClient<ManagedClusterSet>(kc, managedClusterSetResource),
      'managedclustersets',
    ),
    bindings: informer(
      new ResourceClient<ManagedClusterSetBinding>(kc, managedClusterSetBindingResource),
      'managedclustersetbindings',
    ),
    placements: informer(new ResourceClient<Placement>(kc, placementResource), 'placements'),
    decisions: informer(
      new ResourceClient<PlacementDecision>(kc, placementDecisionResource),
      'placementdecisions',
      placementLabel,
    ),
  };
  const all = Object.values(informers) as Informer<KubeObject>[];
  for (const i of all) i.start();
  return {
    ...informers,
    stop: async () => {
      await Promise.all(all.map((i) => i.stop()));
    },
  };
}
