// Writes one scheduling result: the Placement's PlacementDecisions and its status. Decisions are
// created with the Placement as controller owner (the garbage collector removes them with it),
// their labels and status.decisions patched only when they differ from the cached object, and
// decisions the layout no longer names deleted; status (numberOfSelectedClusters, decisionGroups,
// PlacementSatisfied, PlacementMisconfigured) is written only when it changed, so a placement whose
// inputs did not change causes no write and no new resourceVersion. Events on the Placement:
// DecisionCreate, DecisionUpdate + ScoreUpdate (when an existing decision's clusters change),
// DecisionDelete. What it wrote overlays the caches until they catch up (placement-recent-writes.ts),
// so a pass right after a write neither repeats it nor decides from the state before it.
// Must not touch: anything but PlacementDecisions, Placement status and Events.
import {
  type DecisionGroupStatus,
  type Placement,
  type PlacementDecision,
  placementLabel,
  placementResource,
} from '../../api/placement.ts';
import {
  conditionsEqualIgnoringTime,
  type EventRecorder,
  type Informer,
  isAlreadyExists,
  objectKey,
  type ResourceClient,
  setCondition,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { type DesiredDecision, PlacementEventReason, type ScheduleResult } from '../scheduling/index.ts';
import { RecentWrites } from './placement-recent-writes.ts';

/** The event message limit OCM keeps to (the apiserver allows 1024). */
const maxEventMessageLength = 1000;

export interface PlacementBinderContext {
  placements: ResourceClient<Placement>;
  decisions: ResourceClient<PlacementDecision>;
  decisionInformer: Informer<PlacementDecision>;
  events: EventRecorder;
  log: Logger;
}

function sameLabels(current: Record<string, string> | undefined, wanted: Record<string, string>): boolean {
  return Object.entries(wanted).every(([k, v]) => current?.[k] === v);
}

function sameDecisions(current: PlacementDecision | undefined, wanted: DesiredDecision): boolean {
  const have = current?.status?.decisions ?? [];
  return (
    have.length === wanted.decisions.length &&
    have.every(
      (d, i) =>
        d.clusterName === wanted.decisions[i]?.clusterName && d.reason === wanted.decisions[i]?.reason,
    )
  );
}

function sameGroups(
  current: readonly DecisionGroupStatus[] | undefined,
  wanted: readonly DecisionGroupStatus[],
): boolean {
  const have = current ?? [];
  return (
    have.length === wanted.length &&
    have.every((g, i) => {
      const w = wanted[i] as DecisionGroupStatus;
      return (
        (g.decisionGroupIndex ?? 0) === w.decisionGroupIndex &&
        (g.decisionGroupName ?? '') === w.decisionGroupName &&
        (g.clusterCount ?? 0) === w.clusterCount &&
        (g.decisions ?? []).join('\n') === (w.decisions ?? []).join('\n')
      );
    })
  );
}

/** Wait for every write; then fail with the first error, if any. */
async function settleAll(writes: readonly Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(writes);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** "cluster:score " pairs, cut as OCM cuts them. */
function scoreMessage(scores: ReadonlyMap<string, number>): string {
  let text = '';
  for (const [cluster, score] of scores) {
    const pair = `${cluster}:${score} `;
    if (text.length + pair.length > maxEventMessageLength) return `${text}......`;
    text += pair;
  }
  return text;
}

export class PlacementBinder {
  private readonly ctx: PlacementBinderContext;
  private readonly decisionWrites = new RecentWrites<PlacementDecision>();
  private readonly placementWrites = new RecentWrites<Placement>();

  constructor(ctx: PlacementBinderContext) {
    this.ctx = ctx;
  }

  /** The cached Placement, or the one this binder wrote if the cache does not show it yet. */
  effectivePlacement(key: string, cached: Placement): Placement {
    return this.placementWrites.resolve(key, cached) ?? cached;
  }

  /** The placement `key` (namespace/name) is gone: forget what was written for it. */
  forget(key: string): void {
    this.placementWrites.forget((k) => k === key);
    this.decisionWrites.forget((k) => k.startsWith(`${key}-decision-`));
  }

  /** Entries kept for writes the caches have not shown yet (for tests and metrics). */
  get pendingWrites(): number {
    return this.decisionWrites.size + this.placementWrites.size;
  }

  /** The PlacementDecisions of `placement`: the cache, overlaid with this binder's recent writes. */
  ownDecisions(placement: Placement): PlacementDecision[] {
    const namespace = placement.metadata.namespace;
    const name = placement.metadata.name;
    const owned = (d: PlacementDecision) =>
      d.metadata.namespace === namespace && d.metadata.labels?.[placementLabel] === name;
    const keys = new Set(this.ctx.decisionInformer.list().filter(owned).map(objectKey));
    for (const key of this.decisionWrites.pendingKeys()) keys.add(key);
    const result: PlacementDecision[] = [];
    for (const key of keys) {
      const decision = this.decisionWrites.resolve(key, this.ctx.decisionInformer.get(key));
      if (decision && owned(decision)) result.push(decision);
    }
    return result;
  }

  async bind(placement: Placement, result: ScheduleResult): Promise<void> {
    const wanted = new Set<string>();
    for (const decision of result.layout.objects) wanted.add(decision.name);
    // the decision objects are independent: write them side by side
    await settleAll(
      result.layout.objects.map((decision) => this.writeDecision(placement, decision, result.scores)),
    );
    const stale = this.ownDecisions(placement).filter((d) => !wanted.has(d.metadata.name ?? ''));
    await settleAll(stale.map((decision) => this.deleteDecision(placement, decision)));
    await this.writeStatus(placement, result);
  }

  private async deleteDecision(placement: Placement, stale: PlacementDecision): Promise<void> {
    const namespace = placement.metadata.namespace ?? '';
    const name = stale.metadata.name ?? '';
    await this.ctx.decisions.delete(name, namespace, { ignoreNotFound: true });
    this.decisionWrites.removed(objectKey(stale), stale);
    this.event(
      placement,
      PlacementEventReason.DecisionDelete,
      `Decision ${name} is deleted with placement ${placement.metadata.name} in namespace ${namespace}`,
    );
  }

  private async writeDecision(
    placement: Placement,
    wanted: DesiredDecision,
    scores: ReadonlyMap<string, number>,
  ): Promise<void> {
    const namespace = placement.metadata.namespace ?? '';
    const placementName = placement.metadata.name ?? '';
    const key = `${namespace}/${wanted.name}`;
    let current = this.decisionWrites.resolve(key, this.ctx.decisionInformer.get(key));
    let created = false;
    if (!current) {
      try {
        current = await this.ctx.decisions.create({
          metadata: {
            name: wanted.name,
            namespace,
            labels: wanted.labels,
            ownerReferences: [
              {
                apiVersion: placementResource.group + '/' + placementResource.version,
                kind: placementResource.kind,
                name: placementName,
                uid: placement.metadata.uid ?? '',
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
        });
        this.decisionWrites.wrote(key, current);
        created = true;
        this.event(
          placement,
          PlacementEventReason.DecisionCreate,
          `Decision ${wanted.name} is created with placement ${placementName} in namespace ${namespace}`,
        );
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        // created by an earlier pass the cache has not shown yet
        current = await this.ctx.decisions.get(wanted.name, namespace);
        if (!current) throw err;
      }
    }
    if (!sameLabels(current.metadata.labels, wanted.labels)) {
      current = await this.ctx.decisions.patchMerge(
        wanted.name,
        { metadata: { labels: wanted.labels } },
        namespace,
      );
      this.decisionWrites.wrote(key, current);
    }
    if (sameDecisions(current, wanted)) return;
    current = await this.ctx.decisions.patchStatus(
      wanted.name,
      { status: { decisions: wanted.decisions } },
      namespace,
    );
    this.decisionWrites.wrote(key, current);
    if (created) return;
    this.event(
      placement,
      PlacementEventReason.DecisionUpdate,
      `Decision ${wanted.name} is updated with placement ${placementName} in namespace ${namespace}`,
    );
    this.event(placement, PlacementEventReason.ScoreUpdate, scoreMessage(scores));
  }

  private async writeStatus(placement: Placement, result: ScheduleResult): Promise<void> {
    const status = placement.status ?? {};
    let conditions = status.conditions ?? [];
    for (const condition of result.conditions) {
      conditions = setCondition(conditions, condition, placement.metadata.generation);
    }
    const numberOfSelectedClusters = result.selected.length;
    const decisionGroups = result.layout.groups;
    const unchanged =
      status.numberOfSelectedClusters === numberOfSelectedClusters &&
      sameGroups(status.decisionGroups, decisionGroups) &&
      conditionsEqualIgnoringTime(status.conditions, conditions);
    if (unchanged) return;
    const written = await this.ctx.placements.patchStatus(
      placement.metadata.name ?? '',
      { status: { numberOfSelectedClusters, decisionGroups, conditions } },
      placement.metadata.namespace,
    );
    this.placementWrites.wrote(objectKey(placement), written);
  }

  /** Record an event without waiting for it (best effort: the recorder logs and never throws). */
  private event(placement: Placement, reason: string, message: string): void {
    const namespace = placement.metadata.namespace ?? '';
    void this.ctx.events.record(
      namespace,
      {
        apiVersion: `${placementResource.group}/${placementResource.version}`,
        kind: placementResource.kind,
        name: placement.metadata.name ?? '',
        namespace,
        uid: placement.metadata.uid,
      },
      reason,
      message,
    );
  }
}
