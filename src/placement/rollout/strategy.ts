// OCM's rollout strategies (cluster v1alpha1 RolloutStrategy) as pure functions: given a Placement's
// decision groups and where each cluster's workload stands, which clusters get the workload now,
// which timed out and which lost their decision. The rules follow sdk-go's RolloutHandler:
//   - All: every decided cluster at once; progressDeadline turns a stuck cluster TimeOut.
//   - Progressive: mandatory decision groups first (group by group, no failure tolerated), then
//     the other clusters in name order, at most maxConcurrency (count or percentage) at a time;
//     the rollout stops when more than maxFailures clusters failed or timed out.
//   - ProgressivePerGroup: mandatory groups first, then one decision group after the other by
//     index; maxFailures counts per group.
//   - A succeeded cluster still within minSuccessTime (soak) holds its step open; Progressing and
//     Failed clusters hold it until progressDeadline ("None": forever).
// The caller owns time (`now`) and all I/O.
import { type RolloutConfig, type RolloutStrategy, RolloutType } from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { parseGoDuration } from '../../serviceaccount/duration.ts';
import { clustersOf, groupsBesides, groupsWith, mandatoryGroupKeys } from './groups.ts';
import type { ClusterGroup, ClusterRolloutStatus, RolloutResult } from './types.ts';

/** progressDeadline "None" (or unset): no deadline. */
const noDeadline = Number.POSITIVE_INFINITY;

/** progressDeadline: "None", unset, or a Go duration starting `<digits><h|m|s>` (OCM's pattern). */
export function parseProgressDeadline(text: string | undefined): number {
  if (text === undefined || text === '' || text === 'None') return noDeadline;
  if (!/^[0-9]+[hms]/.test(text)) throw new InvalidArgumentError(`invalid progressDeadline "${text}"`);
  return parseGoDuration(text);
}

/** minSuccessTime: a Go duration, default 0. */
export function parseMinSuccessTime(text: string | undefined): number {
  if (text === undefined || text === '') return 0;
  return parseGoDuration(text);
}

/**
 * A count or a percentage of `total` (rounded up), as OCM's calculateRolloutSize: a value that
 * comes out at or below 0, or above `total`, means `fallback`. A string that is not a percentage
 * is an error.
 */
export function rolloutSize(value: number | string | undefined, total: number, fallback: number): number {
  let size: number;
  if (value === undefined) size = 0;
  else if (typeof value === 'number') size = Math.trunc(value);
  else {
    const percent = /^([0-9]+(?:\.[0-9]*)?)%$/.exec(value);
    if (!percent?.[1]) {
      throw new InvalidArgumentError(`"${value}" is not a count nor a percentage (e.g. 2 or "25%")`);
    }
    size = Math.ceil((Number(percent[1]) / 100) * total);
  }
  return size <= 0 || size > total ? fallback : size;
}

/** Where the rollout of one Placement's clusters goes next. Throws InvalidArgumentError on a bad strategy. */
export function nextRollout(
  strategy: RolloutStrategy | undefined,
  groups: readonly ClusterGroup[],
  existing: readonly ClusterRolloutStatus[],
  now: number = Date.now(),
): RolloutResult {
  const type = strategy?.type ?? RolloutType.All;
  switch (type) {
    case RolloutType.All:
      return rolloutAll(strategy?.all ?? {}, groups, existing, now);
    case RolloutType.Progressive:
      return rolloutProgressive(strategy?.progressive ?? {}, groups, existing, now);
    case RolloutType.ProgressivePerGroup:
      return rolloutProgressivePerGroup(strategy?.progressivePerGroup ?? {}, groups, existing, now);
    default:
      throw new InvalidArgumentError(`unknown rollout strategy type "${String(type)}"`);
  }
}

/** Split `existing` into clusters still decided and clusters no longer decided. */
function splitRemoved(groups: readonly ClusterGroup[], existing: readonly ClusterRolloutStatus[]) {
  const decided = new Set(clustersOf(groups));
  return {
    current: existing.filter((s) => decided.has(s.clusterName)),
    removed: existing.filter((s) => !decided.has(s.clusterName)).map((s) => ({ ...s })),
  };
}

function rolloutAll(
  config: RolloutConfig,
  groups: readonly ClusterGroup[],
  existing: readonly ClusterRolloutStatus[],
  now: number,
): RolloutResult {
  const deadline = parseProgressDeadline(config.progressDeadline);
  const { current, removed } = splitRemoved(groups, existing);
  const all = clustersOf(groups).length;
  const result = perCluster(groups, all, all, 0, deadline, current, now);
  return { ...result, clustersRemoved: removed };
}

function rolloutProgressive(
  config: NonNullable<RolloutStrategy['progressive']>,
  groups: readonly ClusterGroup[],
  existing: readonly ClusterRolloutStatus[],
  now: number,
): RolloutResult {
  const minSuccess = parseMinSuccessTime(config.minSuccessTime);
  const deadline = parseProgressDeadline(config.progressDeadline);
  const { current, removed } = splitRemoved(groups, existing);
  const maxFailures = rolloutSize(config.maxFailures, clustersOf(groups).length, 0);

  const mandatoryKeys = mandatoryGroupKeys(config.mandatoryDecisionGroups);
  const mandatory = groupsWith(groups, mandatoryKeys);
  if (mandatory.length > 0) {
    const first = perGroup(mandatory, 0, minSuccess, deadline, current, now);
    if (first.clustersToRollout.length > 0 || first.clustersTimeOut.length > 0) {
      return { ...first, clustersRemoved: removed };
    }
  }
  const rest = groupsBesides(groups, mandatoryKeys);
  const restCount = clustersOf(rest).length;
  const size = rolloutSize(config.maxConcurrency, restCount, restCount);
  const result = perCluster(rest, size, maxFailures, minSuccess, deadline, current, now);
  return { ...result, clustersRemoved: removed };
}

function rolloutProgressivePerGroup(
  config: NonNullable<RolloutStrategy['progressivePerGroup']>,
  groups: readonly ClusterGroup[],
  existing: readonly ClusterRolloutStatus[],
  now: number,
): RolloutResult {
  const minSuccess = parseMinSuccessTime(config.minSuccessTime);
  const deadline = parseProgressDeadline(config.progressDeadline);
  rolloutSize(config.maxFailures, 1, 0); // reject a malformed value before rolling anything out
  const { current, removed } = splitRemoved(groups, existing);

  const mandatoryKeys = mandatoryGroupKeys(config.mandatoryDecisionGroups);
  const mandatory = groupsWith(groups, mandatoryKeys);
  if (mandatory.length > 0) {
    const first = perGroup(mandatory, 0, minSuccess, deadline, current, now);
    if (first.clustersToRollout.length > 0 || first.clustersTimeOut.length > 0) {
      return { ...first, clustersRemoved: removed };
    }
  }
  const result = perGroup(
    groupsBesides(groups, mandatoryKeys),
    config.maxFailures,
    minSuccess,
    deadline,
    current,
    now,
  );
  return { ...result, clustersRemoved: removed };
}

/**
 * Sort one existing cluster into "still rolling out" or "timed out" (OCM's determineRolloutStatus).
 * Returns the status as judged (TimeOut when its deadline passed).
 */
function judge(
  status: ClusterRolloutStatus,
  minSuccessMs: number,
  deadlineMs: number,
  now: number,
  rollout: ClusterRolloutStatus[],
  timedOut: ClusterRolloutStatus[],
): ClusterRolloutStatus {
  const s = { ...status };
  switch (s.status) {
    case 'ToApply':
      rollout.push(s);
      break;
    case 'Succeeded': {
      const soakEnds = (s.lastTransitionTime ?? now) + minSuccessMs;
      if (now < soakEnds) {
        s.recheckTime = soakEnds;
        rollout.push(s);
      }
      break;
    }
    case 'TimeOut':
    case 'Skip':
      break;
    default: {
      // Progressing, Failed
      const ends = deadlineMs === noDeadline ? undefined : (s.lastTransitionTime ?? now) + deadlineMs;
      if (ends !== undefined) s.recheckTime = ends;
      if (ends === undefined || now < ends) rollout.push(s);
      else {
        s.status = 'TimeOut';
        timedOut.push(s);
      }
    }
  }
  return s;
}

function recheckAfter(rollout: readonly ClusterRolloutStatus[], now: number): number | undefined {
  let min: number | undefined;
  for (const s of rollout) {
    if (s.recheckTime === undefined) continue;
    const after = s.recheckTime - now;
    if (after > 0 && (min === undefined || after < min)) min = after;
  }
  return min;
}

function result(
  rollout: ClusterRolloutStatus[],
  timedOut: ClusterRolloutStatus[],
  breach: boolean,
  now: number,
): RolloutResult {
  const after = recheckAfter(rollout, now);
  return {
    clustersToRollout: rollout,
    clustersTimeOut: timedOut,
    clustersRemoved: [],
    maxFailureBreach: breach,
    ...(after !== undefined ? { recheckAfterMs: after } : {}),
  };
}

/** Clusters in name order, at most `size` rolling at once (OCM's progressivePerCluster). */
function perCluster(
  groups: readonly ClusterGroup[],
  size: number,
  maxFailures: number,
  minSuccessMs: number,
  deadlineMs: number,
  existing: readonly ClusterRolloutStatus[],
  now: number,
): RolloutResult {
  const rollout: ClusterRolloutStatus[] = [];
  const timedOut: ClusterRolloutStatus[] = [];
  const known = new Set<string>();
  let failures = 0;
  let breach = false;
  const sorted = [...existing].sort((a, b) =>
    a.clusterName < b.clusterName ? -1 : a.clusterName > b.clusterName ? 1 : 0,
  );
  for (const status of sorted) {
    if (!status.clusterName) continue;
    known.add(status.clusterName);
    let judged = status;
    // After a breach only clusters that already have the workload are followed.
    if (!breach || status.status !== 'ToApply') {
      judged = judge(status, minSuccessMs, deadlineMs, now, rollout, timedOut);
    }
    if (judged.status === 'TimeOut' || judged.status === 'Failed') {
      failures++;
      breach = failures > maxFailures;
    }
    if (rollout.length >= size) return result(rollout, timedOut, breach, now);
  }
  if (breach) return result(rollout, timedOut, breach, now);

  const groupOf = new Map<string, ClusterGroup['key']>();
  for (const g of groups) for (const c of g.clusters) groupOf.set(c, g.key);
  for (const cluster of [...groupOf.keys()].sort()) {
    if (known.has(cluster)) continue;
    const key = groupOf.get(cluster);
    rollout.push({ clusterName: cluster, status: 'ToApply', ...(key ? { groupKey: key } : {}) });
    if (rollout.length >= size) break;
  }
  return result(rollout, timedOut, false, now);
}

/** One decision group after the other (OCM's progressivePerGroup); maxFailures counts per group. */
function perGroup(
  groups: readonly ClusterGroup[],
  maxFailures: number | string | undefined,
  minSuccessMs: number,
  deadlineMs: number,
  existing: readonly ClusterRolloutStatus[],
  now: number,
): RolloutResult {
  const rollout: ClusterRolloutStatus[] = [];
  const timedOut: ClusterRolloutStatus[] = [];
  const known = new Map<string, ClusterRolloutStatus['status']>();
  for (const status of existing) {
    // ToApply clusters are taken again below, in their group's turn.
    if (!status.clusterName || status.status === 'ToApply') continue;
    known.set(status.clusterName, judge(status, minSuccessMs, deadlineMs, now, rollout, timedOut).status);
  }
  let totalFailures = 0;
  let breach = false;
  for (const group of groups) {
    const allowed = rolloutSize(maxFailures, group.clusters.length, 0);
    let groupFailures = 0;
    for (const cluster of [...group.clusters].sort()) {
      const status = known.get(cluster);
      if (status !== undefined) {
        if (status === 'TimeOut' || status === 'Failed') {
          groupFailures++;
          breach = groupFailures > allowed;
        }
        continue;
      }
      rollout.push({ clusterName: cluster, status: 'ToApply', groupKey: group.key });
    }
    totalFailures += groupFailures;
    if (rollout.length - totalFailures > 0 || breach) return result(rollout, timedOut, breach, now);
  }
  return result(rollout, timedOut, breach, now);
}
