// Tear-down paths of the work agent. (1) A ManifestWork being deleted: delete its applied
// resources, then its AppliedManifestWork, then the hub finalizer — resources held by finalizers
// keep both objects until the apiserver has really removed them. (2) An AppliedManifestWork
// deleted on the managed cluster: remove its resources and let it go (a live ManifestWork then
// gets a fresh one). (3) An AppliedManifestWork whose ManifestWork vanished while nobody removed
// it (the agent was away): after a grace period it is deleted like (2). While (1) runs, the work
// carries OCM's Deleting condition; each resource removed is a ResourceDeleted event (events.ts).
// Owns no state.
import {
  type AppliedManifestWork,
  type ManifestWork,
  ManifestWorkCondition,
  ManifestWorkReason,
  manifestWorkFinalizer,
} from '../../api/index.ts';
import {
  type Condition,
  findCondition,
  formatTime,
  isNotFound,
  type ResourceClient,
  setCondition,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { type AppliedWorkStore, ownerReferenceOf } from './applied-work.ts';
import type { ManagedClients } from './clients.ts';
import { deleteAppliedResources, resourceDeletedMessage } from './deletion.ts';
import { maxEventsPerWorkPerPass, type WorkEventRecorder } from './events.ts';

/** How soon to look again at resources still terminating. */
const pendingRecheckMs = 1000;

export interface FinalizeOutcome {
  /** look at the key again after this long */
  requeueAfterMs?: number;
}

export interface WorkFinalizerOptions {
  works: ResourceClient<ManifestWork>;
  clusterName: string;
  applied: AppliedWorkStore;
  clients: ManagedClients;
  evictionGracePeriodMs: number;
  log: Logger;
  /** the agent's events (ResourceDeleted); none when absent */
  events?: WorkEventRecorder;
}

export class WorkFinalizer {
  private readonly o: WorkFinalizerOptions;
  /** when this process started an eviction (the stored time has seconds only) */
  private readonly evictionStarts = new Map<string, number>();

  constructor(options: WorkFinalizerOptions) {
    this.o = options;
  }

  /** The ManifestWork has a deletionTimestamp. */
  async finalizeWork(work: ManifestWork): Promise<FinalizeOutcome> {
    const name = work.metadata.name ?? '';
    if (!(work.metadata.finalizers ?? []).includes(manifestWorkFinalizer)) return {};
    // The finalizer comes off at the resourceVersion the status write returned: the cache may not
    // have seen that write yet, and its resourceVersion would only earn a conflict.
    const marked = await this.markDeleting(work);
    // Read it fresh: the cache may not have seen our last step yet.
    const applied = await this.o.applied.get(name);
    if (applied) {
      const outcome = await this.releaseAppliedWork(applied, `manifestwork ${name} is being deleted`);
      if (outcome.requeueAfterMs !== undefined) return outcome;
    }
    if (marked) await this.removeWorkFinalizer(marked);
    this.o.log.info({ work: name }, 'applied resources removed: released the ManifestWork');
    return {};
  }

  /**
   * Delete what `applied` (read fresh by the caller) recorded and, once nothing is left, let the
   * AppliedManifestWork go: finalizer off, then deleted. While resources are still terminating it
   * is marked deleted (so everyone sees it is going), keeps only those in its record, and the
   * caller is asked to look again.
   */
  async releaseAppliedWork(applied: AppliedManifestWork, why: string): Promise<FinalizeOutcome> {
    const resources = applied.status?.appliedResources ?? [];
    const owner = ownerReferenceOf(applied);
    const { pending, errors, deleted } = await deleteAppliedResources(
      resources,
      owner,
      this.o.clients,
      this.o.log,
    );
    if (this.o.events) {
      for (const r of deleted.slice(0, maxEventsPerWorkPerPass)) {
        this.o.events.record('ResourceDeleted', resourceDeletedMessage(r, why));
      }
    }
    if (errors.length > 0) throw new Error(`cleaning up ${applied.metadata.name}: ${errors.join('; ')}`);
    const deleting = Boolean(applied.metadata.deletionTimestamp);
    if (pending.length > 0) {
      if (!deleting) await this.o.applied.delete(applied);
      this.o.log.info(
        { appliedWork: applied.metadata.name, pending: pending.length, why },
        'waiting for resources to go',
      );
      if (pending.length !== resources.length) {
        await this.o.applied.setAppliedResources(applied, pending).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
      }
      return { requeueAfterMs: pendingRecheckMs };
    }
    await this.o.applied.removeFinalizer(applied);
    if (!deleting) await this.o.applied.delete(applied);
    return {};
  }

  /** An AppliedManifestWork of ours whose ManifestWork is not on the hub. */
  async evictOrphan(workName: string, now = Date.now()): Promise<FinalizeOutcome> {
    const applied = await this.o.applied.get(workName);
    if (!applied || applied.spec.agentID !== this.o.applied.agentId) {
      this.evictionStarts.delete(workName);
      return {};
    }
    if (applied.metadata.deletionTimestamp) {
      return this.releaseAppliedWork(applied, `manifestwork ${workName} is gone`);
    }
    const started = applied.status?.evictionStartTime;
    if (!started) {
      await this.o.applied.markEviction(applied, formatTime(new Date(now)));
      this.evictionStarts.set(workName, now);
      this.o.log.info(
        { work: workName, gracePeriodMs: this.o.evictionGracePeriodMs },
        'manifestwork is gone from the hub: evicting its applied resources after the grace period',
      );
      return { requeueAfterMs: this.o.evictionGracePeriodMs };
    }
    const startedAt = this.evictionStarts.get(workName) ?? Date.parse(started);
    const remaining = startedAt + this.o.evictionGracePeriodMs - now;
    if (remaining > 0) return { requeueAfterMs: remaining };
    this.evictionStarts.delete(workName);
    this.o.log.info({ work: workName }, 'eviction grace period over: deleting the AppliedManifestWork');
    return this.releaseAppliedWork(applied, `manifestwork ${workName} is gone`);
  }

  /**
   * OCM's Deleting condition on a work whose deletion the agent is carrying out (written once).
   * Returns the work as it is now, or undefined when it is gone.
   */
  private async markDeleting(work: ManifestWork): Promise<ManifestWork | undefined> {
    const conditions = (work.status?.conditions ?? []) as Condition[];
    if (findCondition(conditions, ManifestWorkCondition.Deleting)?.status === 'True') return work;
    const next = setCondition(
      conditions,
      {
        type: ManifestWorkCondition.Deleting,
        status: 'True',
        reason: ManifestWorkReason.ManifestWorkDeleting,
        message: 'The work agent is deleting the resources this work applied',
      },
      work.metadata.generation,
    );
    try {
      return await this.o.works.patchStatus(
        work.metadata.name ?? '',
        { status: { conditions: next } },
        this.o.clusterName,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return undefined;
    }
  }

  private async removeWorkFinalizer(work: ManifestWork): Promise<void> {
    const finalizers = work.metadata.finalizers ?? [];
    try {
      await this.o.works.patchMerge(
        work.metadata.name ?? '',
        {
          metadata: {
            resourceVersion: work.metadata.resourceVersion,
            finalizers: finalizers.filter((f) => f !== manifestWorkFinalizer),
          },
        },
        this.o.clusterName,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
