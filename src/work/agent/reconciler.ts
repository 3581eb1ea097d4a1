// ManifestWorkReconciler: one ManifestWork (the key is its name in the cluster namespace) →
// finalizer on the hub, AppliedManifestWork on the managed cluster, every manifest applied,
// resources dropped from the work removed, status written back to the hub. Reads both caches;
// writes only when something changed, so the events our own writes cause end in no-ops: a work
// already applied at this generation is not applied again until its resync is due.
import {
  type AppliedManifestResourceMeta,
  type AppliedManifestWork,
  type Manifest,
  type ManifestWork,
  ManifestWorkCondition,
  ManifestWorkReason,
  manifestWorkFinalizer,
  UpdateStrategyType,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import type {
  Informer,
  OwnerReference,
  ReconcileResult,
  ResourceClient,
  ResourceDescriptor,
} from '../../kube/index.ts';
import { isNotFound } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import {
  type AppliedWorkStore,
  appliedResourceKey,
  ownerReferenceOf,
  sortAppliedResources,
} from './applied-work.ts';
import type { ManifestApplier, ManifestOutcome } from './apply.ts';
import type { ManagedClients } from './clients.ts';
import { deleteAppliedResources, removeOwnerReference, resourceDeletedMessage } from './deletion.ts';
import { maxEventsPerWorkPerPass, type WorkEventRecorder } from './events.ts';
import type { FeedbackWatcher } from './feedback-watch.ts';
import type { WorkFinalizer } from './finalize.ts';
import { buildWorkStatus, isManifestComplete, statusEqual } from './status.ts';

export interface ReconcilerOptions {
  clusterName: string;
  works: ResourceClient<ManifestWork>;
  workInformer: Informer<ManifestWork>;
  appliedInformer: Informer<AppliedManifestWork>;
  applied: AppliedWorkStore;
  applier: ManifestApplier;
  finalizer: WorkFinalizer;
  clients: ManagedClients;
  /** re-apply and re-read status this often even when nothing changed */
  resyncIntervalMs: number;
  log: Logger;
  /** the agent's events (created, updated, deleted resources); none when absent */
  events?: WorkEventRecorder;
  /** watches for feedbackScrapeType Watch; without it such resources are polled (and Degraded says so) */
  feedbackWatcher?: FeedbackWatcher;
}

/** What the last full pass of a work established. */
interface SyncMemo {
  uid: string;
  generation: number;
  appliedUid: string;
  at: number;
}

/** Backoff for manifests that keep failing, per work: fast for kinds not served yet, slower otherwise. */
const unknownKindBackoff = { baseMs: 200, maxMs: 5_000 };
const failureBackoff = { baseMs: 1_000, maxMs: 60_000 };
const pendingDeletionRecheckMs = 1_000;

export class ManifestWorkReconciler {
  private readonly o: ReconcilerOptions;
  private readonly memo = new Map<string, SyncMemo>();
  private readonly failures = new Map<string, number>();
  /** uid of each deleted work whose finalizer we removed (later events about it are moot) */
  private readonly released = new Map<string, string>();
  /** the AppliedManifestWorks as our own last writes returned them (the cache may lag behind) */
  private readonly written = new Map<string, AppliedManifestWork>();
  /** the ManifestWorks as our own last hub writes returned them (finalizer, status) */
  private readonly writtenWorks = new Map<string, ManifestWork>();

  constructor(options: ReconcilerOptions) {
    this.o = options;
  }

  readonly reconcile = async (name: string): Promise<ReconcileResult | undefined> => {
    const work = newer(this.o.workInformer.getByName(name, this.o.clusterName), this.writtenWorks.get(name));
    if (!work) {
      this.forget(name);
      this.released.delete(name);
      return this.o.finalizer.evictOrphan(name);
    }
    if (work.metadata.deletionTimestamp) {
      this.forget(name);
      if (this.released.get(name) === work.metadata.uid) return undefined;
      const outcome = await this.o.finalizer.finalizeWork(work);
      if (outcome.requeueAfterMs === undefined) this.released.set(name, work.metadata.uid ?? '');
      return outcome;
    }
    return this.sync(work);
  };

  private forget(name: string): void {
    this.o.feedbackWatcher?.set(name, []);
    this.memo.delete(name);
    this.failures.delete(name);
    this.written.delete(name);
    this.writtenWorks.delete(name);
  }

  /** The newer of the cached AppliedManifestWork and the one our last write returned. */
  private freshest(name: string, cached: AppliedManifestWork | undefined): AppliedManifestWork | undefined {
    return newer(cached, this.written.get(name));
  }

  private async sync(cached: ManifestWork): Promise<ReconcileResult | undefined> {
    const name = cached.metadata.name ?? '';
    let known = this.freshest(name, this.o.appliedInformer.getByName(this.o.applied.nameFor(name)));
    let work: ManifestWork;
    let applied: AppliedManifestWork;
    if (known?.metadata.deletionTimestamp) {
      // Deleted on the managed cluster: clean up; a fresh one follows once it is gone.
      work = await this.ensureFinalizer(cached);
      this.memo.delete(name);
      known = await this.o.applied.get(name);
      if (known?.metadata.deletionTimestamp) {
        const why = 'its AppliedManifestWork is being deleted';
        const outcome = await this.o.finalizer.releaseAppliedWork(known, why);
        return { requeueAfterMs: outcome.requeueAfterMs ?? pendingDeletionRecheckMs };
      }
      applied = await this.o.applied.ensure(name, known);
    } else {
      // The hub finalizer and the AppliedManifestWork are written at once (nothing is applied
      // before both exist): one round trip less for every new work.
      [work, applied] = await this.finalizerAndAppliedWork(cached, known);
    }
    this.written.set(name, applied);
    if (work !== cached) this.writtenWorks.set(name, work);

    const memo = this.memo.get(name);
    const now = Date.now();
    // A watched object (feedbackScrapeType Watch) changed: a full pass now, not at the next resync.
    const watchedChanged = this.o.feedbackWatcher?.takeChanged(name) ?? false;
    if (
      !watchedChanged &&
      memo &&
      memo.uid === work.metadata.uid &&
      memo.generation === (work.metadata.generation ?? 0) &&
      memo.appliedUid === applied.metadata.uid &&
      now - memo.at < this.o.resyncIntervalMs * 0.85
    ) {
      return { requeueAfterMs: memo.at + this.o.resyncIntervalMs - now };
    }

    const outcomes = await this.applyAll(work, applied);
    const unwatched = this.watchFeedback(name, outcomes);
    // The record of what was applied and the hub status do not depend on each other (OCM's agent
    // writes them from separate controllers): both go out at once.
    const [tracked, reported] = await Promise.allSettled([
      this.trackAppliedResources(work, applied, outcomes),
      this.writeStatus(work, outcomes, unwatched),
    ]);
    if (tracked.status === 'rejected') throw tracked.reason;
    if (reported.status === 'rejected') throw reported.reason;
    const pending = tracked.value;

    const unknownKind = outcomes.some((o) => o.unknownKind);
    const failed = outcomes.some((o) => o.error && !o.applyConflict);
    if (!failed && pending === 0) {
      this.failures.delete(name);
      this.memo.set(name, {
        uid: work.metadata.uid ?? '',
        generation: work.metadata.generation ?? 0,
        appliedUid: applied.metadata.uid ?? '',
        at: now,
      });
      return { requeueAfterMs: jitter(this.o.resyncIntervalMs) };
    }
    this.memo.delete(name);
    if (pending > 0 && !failed) return { requeueAfterMs: pendingDeletionRecheckMs };
    const attempt = this.failures.get(name) ?? 0;
    this.failures.set(name, attempt + 1);
    const backoff = unknownKind ? unknownKindBackoff : failureBackoff;
    const delay = Math.min(backoff.baseMs * 2 ** Math.min(attempt, 20), backoff.maxMs);
    if (pending > 0) return { requeueAfterMs: Math.min(delay, pendingDeletionRecheckMs) };
    return { requeueAfterMs: delay };
  }

  /**
   * ensureFinalizer and the AppliedManifestWork side by side. When the work vanished before our
   * finalizer went on, an AppliedManifestWork this call created (nothing applied for it yet) is
   * let go at once rather than waiting out the orphan grace period.
   */
  private async finalizerAndAppliedWork(
    cached: ManifestWork,
    known: AppliedManifestWork | undefined,
  ): Promise<[ManifestWork, AppliedManifestWork]> {
    const name = cached.metadata.name ?? '';
    const [work, applied] = await Promise.allSettled([
      this.ensureFinalizer(cached),
      this.o.applied.ensure(name, known),
    ]);
    if (work.status === 'rejected') {
      if (!known && applied.status === 'fulfilled' && isNotFound(work.reason)) {
        await this.o.finalizer.releaseAppliedWork(applied.value, `manifestwork ${name} is gone`);
      }
      throw work.reason;
    }
    if (applied.status === 'rejected') throw applied.reason;
    return [work.value, applied.value];
  }

  /** Our finalizer goes on before anything is applied, so a deleted work waits for its clean-up. */
  private async ensureFinalizer(work: ManifestWork): Promise<ManifestWork> {
    const finalizers = work.metadata.finalizers ?? [];
    if (finalizers.includes(manifestWorkFinalizer)) return work;
    return this.o.works.patchMerge(
      work.metadata.name ?? '',
      {
        metadata: {
          resourceVersion: work.metadata.resourceVersion,
          finalizers: [...finalizers, manifestWorkFinalizer],
        },
      },
      this.o.clusterName,
    );
  }

  private async applyAll(work: ManifestWork, applied: AppliedManifestWork): Promise<ManifestOutcome[]> {
    const manifests = work.spec?.workload?.manifests ?? [];
    const recorded = new Set(
      (applied.status?.appliedResources ?? []).map((r) => `${r.group ?? ''}/${r.namespace ?? ''}/${r.name}`),
    );
    const owner = ownerReferenceOf(applied);
    const outcomes: ManifestOutcome[] = [];
    // A complete work is no longer updated at all; otherwise each complete manifest is not.
    const workComplete = isWorkComplete(work);
    const previous = work.status?.resourceStatus?.manifests ?? [];
    for (const [ordinal, manifest] of manifests.entries()) {
      const completed =
        workComplete || isManifestComplete(previous.find((m) => m.resourceMeta.ordinal === ordinal));
      const outcome = await this.o.applier.apply({
        completed,
        ordinal,
        manifest,
        configs: work.spec?.manifestConfigs ?? [],
        deleteOption: work.spec?.deleteOption,
        owner,
        likelyNew: !recorded.has(recordKeyOf(manifest)),
        executor: work.spec?.executor?.subject?.serviceAccount,
      });
      if (outcome.error) {
        // A kind not served yet is expected while its CRD is on the way: quiet until it lasts.
        const level =
          outcome.unknownKind && (this.failures.get(work.metadata.name ?? '') ?? 0) < 5 ? 'debug' : 'info';
        this.o.log[level](
          {
            work: work.metadata.name,
            ordinal,
            kind: outcome.meta.kind,
            name: outcome.meta.name,
            err: outcome.error,
          },
          'manifest not applied',
        );
      }
      outcomes.push(outcome);
    }
    this.recordApplyEvents(outcomes);
    return outcomes;
  }

  /**
   * Record what exists because of the work and remove what the work no longer lists. Returns how
   * many removed resources are still terminating.
   */
  private async trackAppliedResources(
    work: ManifestWork,
    applied: AppliedManifestWork,
    outcomes: readonly ManifestOutcome[],
  ): Promise<number> {
    const previous = applied.status?.appliedResources ?? [];
    const previousByKey = new Map(previous.map((r) => [appliedResourceKey(r), r]));
    const current = new Map<string, AppliedManifestResourceMeta>();
    // ReadOnly objects are only read: never recorded (as OCM), and never deleted when they leave the record.
    const readOnly = new Set<string>();
    for (const o of outcomes) {
      const { descriptor, meta } = o;
      if (!descriptor || !meta.name) continue;
      const entry = {
        group: descriptor.group || undefined,
        version: descriptor.version,
        resource: descriptor.plural,
        namespace: meta.namespace || undefined,
        name: meta.name,
      };
      const key = appliedResourceKey(entry);
      if (o.strategy === UpdateStrategyType.ReadOnly) {
        readOnly.add(key);
        continue;
      }
      if (o.live.state === 'present') {
        current.set(key, { ...entry, uid: o.live.object.metadata?.uid });
      } else {
        // Not readable right now: keep the record rather than forgetting (and orphaning) it.
        const kept = previousByKey.get(key);
        if (kept) current.set(key, kept);
      }
    }
    const dropped = previous.filter(
      (r) => !current.has(appliedResourceKey(r)) && !readOnly.has(appliedResourceKey(r)),
    );
    await this.disownReadOnly(
      previous.filter((r) => readOnly.has(appliedResourceKey(r))),
      ownerReferenceOf(applied),
    );
    let pending = 0;
    if (dropped.length > 0) {
      const owner = ownerReferenceOf(applied);
      const result = await deleteAppliedResources(dropped, owner, this.o.clients, this.o.log);
      if (this.o.events) {
        for (const r of result.deleted.slice(0, maxEventsPerWorkPerPass)) {
          this.o.events.record(
            'ResourceDeleted',
            resourceDeletedMessage(r, `it is removed from manifestwork ${work.metadata.name}`),
          );
        }
      }
      pending = result.pending.length;
      if (result.errors.length > 0) {
        this.o.log.warn(
          { work: work.metadata.name, errors: result.errors },
          'could not remove dropped resources',
        );
      }
      // Still terminating or not removable yet: stay recorded, so the next pass looks again.
      for (const r of [...result.pending, ...result.failed]) current.set(appliedResourceKey(r), r);
      if (result.failed.length > 0) pending += result.failed.length;
    }
    const next = sortAppliedResources([...current.values()]);
    if (!sameResources(previous, next)) {
      try {
        const name = work.metadata.name ?? '';
        this.written.set(name, await this.o.applied.setAppliedResources(applied, next));
      } catch (err) {
        throw new Error(`record applied resources of ${work.metadata.name}: ${errorMessage(err)}`);
      }
    }
    return pending;
  }

  /** Objects that turned ReadOnly leave the record; our ownerReference goes so no clean-up deletes them. */
  private async disownReadOnly(
    resources: readonly AppliedManifestResourceMeta[],
    owner: OwnerReference,
  ): Promise<void> {
    for (const r of resources) {
      const client = this.o.clients.forApplied(r);
      const obj = await client.get(r.name, r.namespace);
      if (obj) await removeOwnerReference(client, obj, owner.uid);
    }
  }

  /** library-go's events for what an apply created or replaced, as OCM's work agent emits them. */
  private recordApplyEvents(outcomes: readonly ManifestOutcome[]): void {
    if (!this.o.events) return;
    const acted = outcomes.filter((o) => o.action).slice(0, maxEventsPerWorkPerPass);
    for (const { action, meta } of acted) {
      const where = `${meta.kind}/${meta.name}${meta.namespace ? ` -n ${meta.namespace}` : ''}`;
      this.o.events.record(
        `${meta.kind}${action === 'created' ? 'Created' : 'Updated'}`,
        action === 'created'
          ? `Created ${where} because it was missing`
          : `Updated ${where} because it changed`,
      );
    }
  }

  /** Watch the objects whose feedback the work wants by Watch; the ordinals that could not be. */
  private watchFeedback(name: string, outcomes: readonly ManifestOutcome[]): number[] {
    const watcher = this.o.feedbackWatcher;
    const wanted = outcomes.filter(
      (o) => o.config?.feedbackScrapeType === 'Watch' && o.descriptor && o.meta.name,
    );
    if (!watcher) return wanted.map((o) => o.meta.ordinal);
    const targets = wanted.map((o) => ({
      descriptor: o.descriptor as ResourceDescriptor,
      namespace: o.meta.namespace,
      name: o.meta.name ?? '',
      ordinal: o.meta.ordinal,
    }));
    const refused = new Set(watcher.set(name, targets));
    return targets.filter((t) => refused.has(t)).map((t) => t.ordinal);
  }

  private async writeStatus(
    work: ManifestWork,
    outcomes: readonly ManifestOutcome[],
    unwatched: readonly number[],
  ): Promise<void> {
    const status = buildWorkStatus(work.status, outcomes, work.metadata.generation, new Date(), unwatched);
    if (statusEqual(work.status, status)) return;
    const name = work.metadata.name ?? '';
    this.writtenWorks.set(name, await this.o.works.patchStatus(name, { status }, this.o.clusterName));
  }
}

/**
 * The newer of a cached object and the answer to our own last write of it: the cache may not have
 * seen that write yet, and acting on the older copy would rewrite what is already there or earn a
 * conflict. Only the same object (uid) counts.
 */
function newer<T extends ManifestWork | AppliedManifestWork>(
  cached: T | undefined,
  written: T | undefined,
): T | undefined {
  if (!cached || !written || written.metadata.uid !== cached.metadata.uid) return cached;
  const rv = (o: T) => Number(o.metadata.resourceVersion ?? 0);
  return rv(written) > rv(cached) ? written : cached;
}

/** The work's Complete condition (aggregated from its Complete rules) is True. */
function isWorkComplete(work: ManifestWork): boolean {
  return (work.status?.conditions ?? []).some(
    (c) =>
      c.type === ManifestWorkCondition.Complete &&
      c.status === 'True' &&
      c.reason === ManifestWorkReason.ManifestsComplete,
  );
}

/** group/namespace/name of a manifest, as recorded in appliedResources (before discovery knows the plural). */
function recordKeyOf(manifest: Manifest | undefined): string {
  const apiVersion = typeof manifest?.apiVersion === 'string' ? manifest.apiVersion : '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return `${group}/${manifest?.metadata?.namespace ?? ''}/${manifest?.metadata?.name ?? ''}`;
}

function sameResources(
  a: readonly AppliedManifestResourceMeta[],
  b: readonly AppliedManifestResourceMeta[],
): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    return (
      y !== undefined &&
      appliedResourceKey(x) === appliedResourceKey(y) &&
      x.version === y.version &&
      (x.uid ?? '') === (y.uid ?? '')
    );
  });
}

/** Spread resyncs of works that were applied together over 10% of the interval. */
function jitter(ms: number): number {
  return Math.round(ms * (0.9 + Math.random() * 0.1));
}
