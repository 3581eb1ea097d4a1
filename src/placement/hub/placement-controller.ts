// The placement scheduling controller (OCM's SchedulingController): for every Placement, choose
// clusters from the ManagedClusterSets bound to its namespace and publish them as PlacementDecisions
// plus status (src/placement/scheduling does the choosing, placement-binder.ts the writing).
// One informer per kind — ManagedClusters, ManagedClusterSets, ManagedClusterSetBindings,
// Placements, PlacementDecisions (those labelled with a placement), AddOnPlacementScores — shared by
// all placements; a change re-queues just the placements it can affect:
//   Placement            itself
//   PlacementDecision    its placement (label cluster.open-cluster-management.io/placement)
//   ManagedCluster       placements in namespaces bound to a set holding the old or new cluster
//   ManagedClusterSet    every placement
//   ManagedClusterSetBinding  placements of its namespace
//   AddOnPlacementScore  placements whose prioritizers or CEL selectors can read it
// A pass that depends on time (a toleration with tolerationSeconds, an AddOn score's validUntil)
// asks the queue to run it again at that instant; nothing polls. Must not touch: ManagedClusters,
// sets, bindings, scores (read only).
import type { KubeConfig } from '@kubernetes/client-node';
import type { ManagedCluster } from '../../api/cluster.ts';
import { managedClusterResource } from '../../api/cluster.ts';
import {
  type AddOnPlacementScore,
  addOnPlacementScoreResource,
  type ManagedClusterSet,
  type ManagedClusterSetBinding,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../api/placement.ts';
import {
  type Controller,
  EventRecorder,
  Informer,
  type KubeObject,
  objectKey,
  type ReconcileResult,
  ResourceClient,
  runController,
  splitKey,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import {
  clusterSetMatcher,
  eligibleClusters,
  placementDisableAnnotation,
  schedule,
} from '../scheduling/index.ts';
import type { PlacementHubInformers } from './informers.ts';
import { PlacementBinder } from './placement-binder.ts';
import { DecisionCounts } from './placement-decision-counts.ts';

export interface PlacementControllerOptions {
  hubKubeConfig: KubeConfig;
  /** schedule only the Placements of this namespace (default: all namespaces) */
  namespace?: string;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /**
   * started cluster-wide informers to read from instead of its own (startPlacementHub shares them
   * between its controllers); not stopped by stop(). `namespace` only scopes informers it creates.
   */
  informers?: PlacementHubInformers;
  /** placements scheduled at once (default 2) */
  workers?: number;
  log?: Logger;
}

export interface PlacementController {
  /** true once the caches synced and placements are being scheduled */
  readonly ready: Promise<boolean>;
  /** scheduling passes finished so far (each reconcile of a Placement that exists) */
  readonly passes: number;
  /** no placement waits, is being scheduled or has a time-based requeue pending */
  isIdle(): boolean;
  /** stop scheduling (waits for running passes) and the informers */
  stop(): Promise<void>;
}

/** A time-based requeue fires this long after the instant, so the pass sees it as past. */
const requeueMarginMs = 50;
/**
 * Longest time-based requeue: a pass then computes the next one. Node turns timers beyond 2^31 - 1
 * ms (24.8 days, e.g. a validUntil a year ahead) into 1 ms ones, which would spin.
 */
export const maxRequeueMs = 60 * 60_000;

/** The delay before scheduling again for something that expires at `requeueAt` (ms since the epoch). */
export function requeueDelayMs(requeueAt: number, now: number): number {
  return Math.min(Math.max(0, requeueAt - now) + requeueMarginMs, maxRequeueMs);
}

/** Start scheduling Placements on the hub. */
export function startPlacementController(opts: PlacementControllerOptions): PlacementController {
  const kc = opts.hubKubeConfig;
  const log = opts.log ?? logger('placement-controller');
  const informerOptions = { resyncPeriodMs: opts.resyncPeriodMs };
  const scoped = { ...informerOptions, namespace: opts.namespace };
  const given = opts.informers;
  const clusters =
    given?.clusters ??
    new Informer<ManagedCluster>(new ResourceClient(kc, managedClusterResource), informerOptions);
  const sets =
    given?.clusterSets ??
    new Informer<ManagedClusterSet>(new ResourceClient(kc, managedClusterSetResource), informerOptions);
  const bindings =
    given?.bindings ??
    new Informer<ManagedClusterSetBinding>(new ResourceClient(kc, managedClusterSetBindingResource), scoped);
  const placementClient = new ResourceClient<Placement>(kc, placementResource);
  const placements = given?.placements ?? new Informer<Placement>(placementClient, scoped);
  const decisionClient = new ResourceClient<PlacementDecision>(kc, placementDecisionResource);
  const decisions =
    given?.decisions ??
    new Informer<PlacementDecision>(decisionClient, {
      ...scoped,
      labelSelector: placementLabel,
    });
  const scores = new Informer<AddOnPlacementScore>(
    new ResourceClient(kc, addOnPlacementScoreResource),
    informerOptions,
  );
  const binder = new PlacementBinder({
    placements: placementClient,
    decisions: decisionClient,
    decisionInformer: decisions,
    events: new EventRecorder(kc, 'placementController', log),
    log,
  });

  const placementKeys = (filter: (p: Placement) => boolean): string[] =>
    placements
      .list()
      .filter(filter)
      .map((p) => objectKey(p));

  /** Placements that may see `changed` clusters: namespaces bound to a set holding one of them. */
  const placementsForClusters = (changed: readonly ManagedCluster[]): string[] => {
    const holding = new Set<string>();
    for (const set of sets.list()) {
      try {
        const matches = clusterSetMatcher(set);
        if (changed.some(matches)) holding.add(set.metadata.name ?? '');
      } catch {
        // a set whose selector cannot be used holds no cluster
      }
    }
    if (holding.size === 0) return [];
    const namespaces = new Set(
      bindings
        .list()
        .filter((b) => holding.has(b.metadata.name ?? ''))
        .map((b) => b.metadata.namespace),
    );
    return placementKeys((p) => namespaces.has(p.metadata.namespace));
  };

  const readsScore = (p: Placement, resourceName: string): boolean =>
    (p.spec?.prioritizerPolicy?.configurations ?? []).some(
      (c) => c.scoreCoordinate?.addOn?.resourceName === resourceName,
    ) ||
    (p.spec?.predicates ?? []).some(
      (pr) => (pr.requiredClusterSelector?.celSelector?.celExpressions ?? []).length > 0,
    );

  const keyFunc = (obj: KubeObject, informer: Informer<KubeObject>): string | string[] | undefined => {
    if (informer === (placements as unknown as Informer<KubeObject>)) return objectKey(obj);
    if (informer === (decisions as unknown as Informer<KubeObject>)) {
      const owner = obj.metadata?.labels?.[placementLabel];
      return owner ? `${obj.metadata?.namespace}/${owner}` : undefined;
    }
    if (informer === (bindings as unknown as Informer<KubeObject>)) {
      return placementKeys((p) => p.metadata.namespace === obj.metadata?.namespace);
    }
    if (informer === (sets as unknown as Informer<KubeObject>)) return placementKeys(() => true);
    if (informer === (scores as unknown as Informer<KubeObject>)) {
      return placementKeys((p) => readsScore(p, obj.metadata?.name ?? ''));
    }
    return undefined; // clusters: handled below with their old and new state
  };

  // what every cached decision names, for the Balance prioritizer (registered in this tick, before
  // the informer can deliver its first list)
  const decisionCounts = new DecisionCounts();
  const removeDecisionCounting = decisions.addHandlers({
    add: (d) => decisionCounts.set(objectKey(d), d),
    update: (_old, d) => decisionCounts.set(objectKey(d), d),
    delete: (d) => decisionCounts.set(objectKey(d), undefined),
  });

  let passes = 0;
  const reconcile = async (key: string): Promise<ReconcileResult> => {
    const cached = placements.get(key);
    if (!cached) {
      binder.forget(key);
      return {};
    }
    const placement = binder.effectivePlacement(key, cached);
    if (placement.metadata.deletionTimestamp) return {};
    if (placement.metadata.annotations?.[placementDisableAnnotation] === 'true') return {};
    const namespace = splitKey(key).namespace ?? '';
    const setsByName = new Map(sets.list().map((s) => [s.metadata.name ?? '', s]));
    const eligible = eligibleClusters(
      placement.spec?.clusterSets,
      bindings.list().filter((b) => b.metadata.namespace === namespace),
      setsByName,
      clusters.list(),
    );
    const own = binder.ownDecisions(placement);
    const ownDecisions = new Set(own.flatMap((d) => (d.status?.decisions ?? []).map((c) => c.clusterName)));
    const otherDecisionCounts = decisionCounts.others(own.map((d) => objectKey(d)));
    const now = Date.now();
    const result = schedule(placement, {
      eligible,
      ownDecisions,
      otherDecisionCounts,
      addOnScore: (cluster, resourceName) => scores.getByName(resourceName, cluster)?.status,
      now,
    });
    if (result.status.code !== 'Success') {
      log.info({ placement: key, ...result.status }, 'placement scheduled with a problem');
    }
    await binder.bind(placement, result);
    passes++;
    if (result.requeueAt !== undefined) {
      return { requeueAfterMs: requeueDelayMs(result.requeueAt, now) };
    }
    return {};
  };

  const controller: Controller = runController({
    name: 'placement-scheduling',
    informers: [clusters, sets, bindings, placements, decisions, scores] as unknown as Informer<KubeObject>[],
    keyFunc,
    reconcile,
    workers: opts.workers ?? 2,
    log,
  });
  const removeClusterHandlers = clusters.addHandlers({
    add: (c) => enqueue(placementsForClusters([c])),
    update: (old, c) => enqueue(placementsForClusters([old, c])),
    delete: (c) => enqueue(placementsForClusters([c])),
  });
  function enqueue(keys: readonly string[]): void {
    for (const key of keys) controller.queue.add(key);
  }

  return {
    ready: controller.ready,
    get passes() {
      return passes;
    },
    isIdle: () => controller.queue.isIdle(),
    async stop() {
      removeClusterHandlers();
      removeDecisionCounting();
      await controller.stop();
    },
  };
}
