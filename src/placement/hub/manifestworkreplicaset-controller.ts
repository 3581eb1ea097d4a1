// The ManifestWorkReplicaSet controller (OCM's work hub controller of the same name): for each
// placementRef, one ManifestWork per cluster the Placement's PlacementDecisions select, rolled out
// by the ref's rolloutStrategy (src/placement/rollout); works of clusters that left the decision, or
// of refs that left the spec, are deleted; status.summary, placementSummary and the conditions
// PlacementVerified, PlacementRolledOut and ManifestworkApplied follow. The finalizer
// work.open-cluster-management.io/manifest-work-cleanup holds a deleted set until its works are
// deleted (with cascadeDeletionPolicy Foreground: until they are gone).
// Re-syncs on changes of the set, of its works (by label), of its Placements and their decisions.
// Owns the sets' finalizer and status and the works labelled with a set; touches nothing else.
//
// Identity needs: manifestworkreplicasets get/list/watch/patch (+ /status patch); manifestworks
// get/list/watch/create/update/delete; placements and placementdecisions get/list/watch.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ManifestWork,
  type ManifestWorkReplicaSet,
  ManifestWorkReplicaSetCondition,
  ManifestWorkReplicaSetReason,
  type ManifestWorkReplicaSetStatus,
  manifestWorkReplicaSetFinalizer,
  manifestWorkReplicaSetLabel,
  manifestWorkReplicaSetPlacementLabel,
  manifestWorkReplicaSetResource,
  manifestWorkResource,
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import {
  type Condition,
  type ConditionUpdate,
  type Controller,
  findCondition,
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeObject,
  objectKey,
  type ReconcileResult,
  ResourceClient,
  runController,
  setCondition,
  splitKey,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { type ClusterRolloutStatus, clusterGroupsOf, clustersOf, nextRollout } from '../rollout/index.ts';
import type { PlacementHubInformers } from './informers.ts';
import {
  desiredWork,
  manifestworkAppliedCondition,
  replicaSetKeyOfWork,
  replicaSetLabelValue,
  sameJson,
  workCounts,
  workIsCurrent,
  workRolloutStatus,
} from './manifestworkreplicaset-works.ts';

export interface ManifestWorkReplicaSetControllerOptions {
  kubeconfig: KubeConfig;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /**
   * started informers of Placements and (placement-labelled) PlacementDecisions to read from instead
   * of its own (startPlacementHub shares them); not stopped by stop()
   */
  informers?: Pick<PlacementHubInformers, 'placements' | 'decisions'>;
  /** concurrent reconciles of different sets (default 2) */
  workers?: number;
  log?: Logger;
}

export interface ManifestWorkReplicaSetController {
  /** true once the caches synced and the controller reconciles */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** OCM re-checks a set at least this often while a rollout waits (its resync period). */
const maxRequeueMs = 30 * 60_000;

/** Start the controller (this replica leads, or runs alone). */
export function startManifestWorkReplicaSetController(
  opts: ManifestWorkReplicaSetControllerOptions,
): ManifestWorkReplicaSetController {
  const log = opts.log ?? logger('manifestworkreplicaset');
  const kc = opts.kubeconfig;
  const setClient = new ResourceClient<ManifestWorkReplicaSet>(kc, manifestWorkReplicaSetResource);
  const workClient = new ResourceClient<ManifestWork>(kc, manifestWorkResource);
  const informer = <T extends KubeObject>(client: ResourceClient<T>, name: string, labelSelector?: string) =>
    new Informer<T>(client, {
      resyncPeriodMs: opts.resyncPeriodMs,
      log: log.child({ informer: name }),
      ...(labelSelector ? { labelSelector } : {}),
    });
  const sets = informer(setClient, 'manifestworkreplicasets');
  const works = informer(workClient, 'manifestworks', manifestWorkReplicaSetLabel);
  const placements =
    opts.informers?.placements ??
    informer(new ResourceClient<Placement>(kc, placementResource), 'placements');
  const decisions =
    opts.informers?.decisions ??
    informer(
      new ResourceClient<PlacementDecision>(kc, placementDecisionResource),
      'placementdecisions',
      placementLabel,
    );

  const setsUsing = (namespace: string | undefined, placement: string | undefined) =>
    placement
      ? sets
          .list()
          .filter(
            (s) =>
              s.metadata.namespace === namespace && s.spec?.placementRefs?.some((r) => r.name === placement),
          )
          .map(objectKey)
      : [];

  const controller: Controller = runController({
    name: 'manifestworkreplicaset',
    informers: [sets, works, placements, decisions] as Informer<KubeObject>[],
    keyFunc: (obj, from) => {
      if (from === (sets as Informer<KubeObject>)) return objectKey(obj);
      if (from === (works as Informer<KubeObject>)) return replicaSetKeyOfWork(obj as ManifestWork);
      if (from === (placements as Informer<KubeObject>))
        return setsUsing(obj.metadata?.namespace, obj.metadata?.name);
      return setsUsing(obj.metadata?.namespace, obj.metadata?.labels?.[placementLabel]);
    },
    workers: opts.workers ?? 2,
    log: log.child({ controller: 'manifestworkreplicaset' }),
    reconcile: (key) => reconcile(key),
  });

  async function reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace, name } = splitKey(key);
    const mwrs = sets.getByName(name, namespace);
    if (!mwrs) return undefined;
    if (mwrs.metadata.deletionTimestamp) {
      await finalize(mwrs);
      return undefined;
    }
    const finalizers = mwrs.metadata.finalizers ?? [];
    if (!finalizers.includes(manifestWorkReplicaSetFinalizer)) {
      // The update brings the set back through the informer, finalizer in place, before any work exists.
      await patchSet(
        mwrs,
        { metadata: { finalizers: [...finalizers, manifestWorkReplicaSetFinalizer] } },
        false,
      );
      return;
    }
    const { status, recheckAfterMs } = await deploy(mwrs);
    await writeStatus(mwrs, status);
    return recheckAfterMs !== undefined ? { requeueAfterMs: recheckAfterMs } : undefined;
  }

  /** Merge-patch the set (or its status); a conflict means a newer version is on its way. */
  async function patchSet(mwrs: ManifestWorkReplicaSet, patch: Record<string, unknown>, status: boolean) {
    const { name = '', namespace, resourceVersion } = mwrs.metadata;
    const body = { ...patch, metadata: { ...(patch['metadata'] as object), resourceVersion } };
    try {
      if (status) await setClient.patchStatus(name, body, namespace);
      else await setClient.patchMerge(name, body, namespace);
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return;
      throw err;
    }
  }

  async function finalize(mwrs: ManifestWorkReplicaSet): Promise<void> {
    if (!mwrs.metadata.finalizers?.includes(manifestWorkReplicaSetFinalizer)) return;
    // From the apiserver, not the cache: a work created just before the delete must not be missed.
    const { items } = await workClient.list({
      labelSelector: `${manifestWorkReplicaSetLabel}=${replicaSetLabelValue(mwrs)}`,
    });
    for (const w of items) {
      if (w.metadata.deletionTimestamp) continue;
      await workClient.delete(w.metadata.name ?? '', w.metadata.namespace, { ignoreNotFound: true });
    }
    // Foreground: the set stays until its works are gone; their deletion brings it back here.
    if (mwrs.spec?.cascadeDeletionPolicy === 'Foreground' && items.length > 0) return;
    await patchSet(
      mwrs,
      {
        metadata: {
          finalizers: (mwrs.metadata.finalizers ?? []).filter((f) => f !== manifestWorkReplicaSetFinalizer),
        },
      },
      false,
    );
    log.info(
      { manifestWorkReplicaSet: objectKey(mwrs), works: items.length },
      'ManifestWorkReplicaSet finalized',
    );
  }

  async function applyWork(mwrs: ManifestWorkReplicaSet, cluster: string, placement: string): Promise<void> {
    const want = desiredWork(mwrs, cluster, placement);
    let existing = works.getByName(want.metadata.name, cluster);
    if (!existing) {
      try {
        await workClient.create(want);
        return;
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      // A work of that name without the set's label: OCM's applier takes it over.
      existing = await workClient.get(want.metadata.name, cluster);
      if (!existing) throw new Error(`ManifestWork ${cluster}/${want.metadata.name} vanished; retrying`);
    }
    if (workIsCurrent(existing, mwrs, placement)) return;
    await workClient.replace({
      ...existing,
      metadata: {
        ...existing.metadata,
        labels: { ...(existing.metadata.labels ?? {}), ...want.metadata.labels },
      },
      spec: want.spec,
    });
  }

  async function deleteWork(w: ManifestWork): Promise<void> {
    if (w.metadata.deletionTimestamp) return;
    await workClient.delete(w.metadata.name ?? '', w.metadata.namespace, { ignoreNotFound: true });
  }

  async function deploy(
    mwrs: ManifestWorkReplicaSet,
  ): Promise<{ status: ManifestWorkReplicaSetStatus; recheckAfterMs?: number }> {
    const key = objectKey(mwrs);
    const ns = mwrs.metadata.namespace;
    const refs = mwrs.spec?.placementRefs ?? [];
    const owned = works.list().filter((w) => replicaSetKeyOfWork(w) === key);
    let conditions: Condition[] | undefined = mwrs.status?.conditions;
    const set = (update: ConditionUpdate) => {
      conditions = setCondition(conditions, update);
    };
    const verified = (reason: string, message = ''): ConditionUpdate => ({
      type: ManifestWorkReplicaSetCondition.PlacementVerified,
      status: reason === ManifestWorkReplicaSetReason.AsExpected ? 'True' : 'False',
      reason,
      message,
    });
    const errors: unknown[] = [];
    let recheckAfterMs: number | undefined;

    // Works of placements no longer referenced go.
    const refNames = new Set(refs.map((r) => r.name));
    for (const w of owned) {
      const p = w.metadata.labels?.[manifestWorkReplicaSetPlacementLabel];
      if (!p || !refNames.has(p)) await deleteWork(w).catch((err: unknown) => errors.push(err));
    }

    const claimed = new Set<string>();
    let count = 0;
    let decidedTotal = 0;
    let succeededTotal = 0;
    const strategyErrors: string[] = [];
    const placementSummary: NonNullable<ManifestWorkReplicaSetStatus['placementSummary']> = [];
    for (const ref of refs) {
      if (!placements.getByName(ref.name, ns)) {
        set(
          verified(ManifestWorkReplicaSetReason.PlacementDecisionNotFound, `Placement ${ref.name} not found`),
        );
        return { status: { ...(mwrs.status ?? {}), conditions } };
      }
      const placementWorks = owned.filter(
        (w) =>
          w.metadata.labels?.[manifestWorkReplicaSetPlacementLabel] === ref.name &&
          !w.metadata.deletionTimestamp,
      );
      const existing: ClusterRolloutStatus[] = [];
      const applied = new Set<string>();
      const succeeded = new Set<string>();
      for (const w of placementWorks) {
        const cluster = w.metadata.namespace ?? '';
        // A work still carrying an older template rolls out again in its turn (ToApply).
        if (!workIsCurrent(w, mwrs, ref.name)) continue;
        const s = workRolloutStatus(cluster, w);
        existing.push(s);
        applied.add(cluster);
        if (s.status === 'Succeeded') succeeded.add(cluster);
      }
      // One work per cluster and set (named after the set): a cluster an earlier placementRef
      // already decided stays with that ref, so two refs never take the work from each other.
      const groups = clusterGroupsOf(
        decisions
          .list()
          .filter((d) => d.metadata.namespace === ns && d.metadata.labels?.[placementLabel] === ref.name),
      ).map((g) => ({ ...g, clusters: g.clusters.filter((c) => !claimed.has(c)) }));
      const earlier = new Set(claimed);
      for (const c of clustersOf(groups)) claimed.add(c);
      const decided = new Set(clustersOf(groups));
      let rollout: ReturnType<typeof nextRollout>;
      try {
        rollout = nextRollout(ref.rolloutStrategy, groups, existing);
      } catch (err) {
        strategyErrors.push(`placementRef ${ref.name}: ${errorMessage(err)}`);
        continue;
      }
      if (rollout.recheckAfterMs !== undefined) {
        recheckAfterMs = Math.min(recheckAfterMs ?? maxRequeueMs, rollout.recheckAfterMs);
      }
      for (const c of rollout.clustersToRollout) {
        if (c.status !== 'ToApply') continue;
        try {
          await applyWork(mwrs, c.clusterName, ref.name);
          applied.add(c.clusterName);
        } catch (err) {
          errors.push(err);
        }
      }
      // Clusters that left the decision lose their work, whatever template it carries.
      for (const w of placementWorks) {
        const cluster = w.metadata.namespace ?? '';
        // (A cluster an earlier ref decided keeps the work: that ref relabels it in its turn.)
        if (decided.has(cluster) || earlier.has(cluster)) continue;
        try {
          await deleteWork(w);
          applied.delete(cluster);
          succeeded.delete(cluster);
        } catch (err) {
          errors.push(err);
        }
      }
      decidedTotal += decided.size;
      placementSummary.push({
        name: ref.name,
        availableDecisionGroups: `${groups.length} (${applied.size} / ${decided.size} clusters applied)`,
        summary: { total: applied.size },
      });
      count += applied.size;
      succeededTotal += succeeded.size;
    }

    const current = works
      .list()
      .filter(
        (w) =>
          replicaSetKeyOfWork(w) === key &&
          refNames.has(w.metadata.labels?.[manifestWorkReplicaSetPlacementLabel] ?? ''),
      );
    const summary =
      count === 0
        ? { ...(mwrs.status?.summary ?? {}), total: 0, applied: 0, available: 0, degraded: 0, progressing: 0 }
        : { ...(mwrs.status?.summary ?? {}), total: count, ...workCounts(current) };
    if (strategyErrors.length > 0)
      set(verified(ManifestWorkReplicaSetReason.NotAsExpected, strategyErrors.join('; ')));
    else if (count === 0) set(verified(ManifestWorkReplicaSetReason.PlacementDecisionEmpty));
    else set(verified(ManifestWorkReplicaSetReason.AsExpected));
    const complete = decidedTotal === succeededTotal;
    set({
      type: ManifestWorkReplicaSetCondition.PlacementRolledOut,
      status: complete ? 'True' : 'False',
      reason: complete ? ManifestWorkReplicaSetReason.Complete : ManifestWorkReplicaSetReason.Progressing,
      message: '',
    });
    set(
      manifestworkAppliedCondition(
        summary,
        findCondition(conditions, ManifestWorkReplicaSetCondition.PlacementVerified)?.reason,
      ),
    );
    if (errors.length > 0) {
      // Write what is known, then let the queue retry with backoff.
      await writeStatus(mwrs, { ...(mwrs.status ?? {}), conditions, summary, placementSummary });
      throw errors[0];
    }
    return {
      status: { ...(mwrs.status ?? {}), conditions, summary, placementSummary },
      ...(recheckAfterMs !== undefined ? { recheckAfterMs } : {}),
    };
  }

  async function writeStatus(mwrs: ManifestWorkReplicaSet, status: ManifestWorkReplicaSetStatus) {
    if (sameJson(status, mwrs.status ?? {})) return;
    // Merge patch: null drops keys the new status has not (e.g. placementSummary when a Placement is missing).
    await patchSet(mwrs, { status: { placementSummary: null, ...status } }, true);
  }

  return {
    ready: controller.ready,
    stop: () => controller.stop(),
  };
}
