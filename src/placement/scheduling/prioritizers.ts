// Prioritizers: each scores the feasible clusters from -100 to 100 and the scheduler adds the scores
// times their weights. Which run comes from `prioritizerPolicy`: mode Additive (default) starts from
// Balance 1 and Steady 1 and lets configurations override or add; Exact uses the configurations
// only; a weight of 0 turns one off. OCM's formulas, integer-truncated as in Go:
//   Balance   100 for a cluster in no other placement's decisions, else 2·trunc(100·(0.5 − n/max))
//             with n its decisions in other placements and max the most any cluster has
//   Steady    100 for a cluster already in this placement's decisions, else 0
//   ResourceAllocatableCPU/Memory  trunc((a − min)/(max − min) · 200 − 100) over the clusters that
//             report both allocatable and capacity of the resource (100 when all equal; others 0)
//   AddOn     the named score of the cluster's AddOnPlacementScore, 0 when missing; an expired one
//             (validUntil past) counts 0 and is reported as a warning
// Pure.
import type { ManagedCluster } from '../../api/cluster.ts';
import { parseQuantity } from '../../registration/agent/quantity.ts';
import {
  type AddOnPlacementScoreItem,
  BuiltInPrioritizer,
  maxClusterScore,
  type PrioritizerPolicy,
  type ScoreCoordinate,
} from './types.ts';

/** Facts a prioritizer reads besides the clusters. */
export interface PrioritizerInputs {
  /** clusters in this placement's current decisions */
  ownDecisions: ReadonlySet<string>;
  /** per cluster, how many decisions of other placements name it */
  otherDecisionCounts: ReadonlyMap<string, number>;
  /** the AddOnPlacementScore `resourceName` in namespace `clusterName` */
  addOnScore(
    clusterName: string,
    resourceName: string,
  ): { scores?: AddOnPlacementScoreItem[]; validUntil?: string } | undefined;
  now: number;
}

export interface WeightedPrioritizer {
  /** OCM's plugin name: Balance, Steady, ResourceAllocatableCPU, AddOn/<resource>/<score> */
  name: string;
  coordinate: ScoreCoordinate;
  weight: number;
}

export type PrioritizerScores = Map<string, number>;

export interface PrioritizerOutcome {
  scores: PrioritizerScores;
  /** a warning to report (expired scores) */
  warning?: string;
  /** ms since the epoch when a score used here stops being valid */
  validUntil?: number;
}

/** A configuration that cannot be used (reported as PlacementMisconfigured). */
export class PrioritizerConfigError extends Error {
  override name = 'PrioritizerConfigError';
}

function coordinateKey(c: ScoreCoordinate): string {
  const type = c.type || 'BuiltIn';
  return type === 'BuiltIn'
    ? `BuiltIn/${c.builtIn ?? ''}`
    : `${type}/${c.addOn?.resourceName ?? ''}/${c.addOn?.scoreName ?? ''}`;
}

const builtIns: ReadonlySet<string> = new Set(Object.values(BuiltInPrioritizer));

/** The prioritizers a policy runs, with their weights (0-weight ones left out), in a stable order. */
export function prioritizersOf(policy: PrioritizerPolicy | undefined): WeightedPrioritizer[] {
  const mode = policy?.mode || 'Additive';
  if (mode !== 'Additive' && mode !== 'Exact') {
    throw new PrioritizerConfigError(`incorrect prioritizer policy mode: ${mode}`);
  }
  const weights = new Map<string, { coordinate: ScoreCoordinate; weight: number }>();
  if (mode === 'Additive') {
    for (const builtIn of [BuiltInPrioritizer.Balance, BuiltInPrioritizer.Steady]) {
      const coordinate: ScoreCoordinate = { type: 'BuiltIn', builtIn };
      weights.set(coordinateKey(coordinate), { coordinate, weight: 1 });
    }
  }
  for (const config of policy?.configurations ?? []) {
    if (!config.scoreCoordinate) throw new PrioritizerConfigError('scoreCoordinate field is required');
    const coordinate = config.scoreCoordinate;
    weights.set(coordinateKey(coordinate), { coordinate, weight: config.weight ?? 1 });
  }
  const result: WeightedPrioritizer[] = [];
  for (const { coordinate, weight } of weights.values()) {
    if (weight === 0) continue;
    const type = coordinate.type || 'BuiltIn';
    if (type === 'BuiltIn') {
      if (!builtIns.has(coordinate.builtIn ?? '')) {
        throw new PrioritizerConfigError(`incorrect builtin prioritizer: ${coordinate.builtIn ?? ''}`);
      }
      result.push({ name: coordinate.builtIn as string, coordinate, weight });
    } else if (type === 'AddOn') {
      if (!coordinate.addOn) throw new PrioritizerConfigError('addOn should not be empty');
      result.push({
        name: `AddOn/${coordinate.addOn.resourceName}/${coordinate.addOn.scoreName}`,
        coordinate,
        weight,
      });
    } else {
      throw new PrioritizerConfigError(`incorrect score coordinate type: ${type}`);
    }
  }
  return result;
}

export function balanceScores(
  clusters: readonly ManagedCluster[],
  inputs: PrioritizerInputs,
): PrioritizerScores {
  let max = 0;
  for (const count of inputs.otherDecisionCounts.values()) max = Math.max(max, count);
  const scores: PrioritizerScores = new Map();
  for (const cluster of clusters) {
    const name = cluster.metadata.name ?? '';
    const count = inputs.otherDecisionCounts.get(name);
    scores.set(name, count ? 2 * Math.trunc(maxClusterScore * (0.5 - count / max)) : maxClusterScore);
  }
  return scores;
}

export function steadyScores(
  clusters: readonly ManagedCluster[],
  inputs: PrioritizerInputs,
): PrioritizerScores {
  const scores: PrioritizerScores = new Map();
  for (const cluster of clusters) {
    const name = cluster.metadata.name ?? '';
    scores.set(name, inputs.ownDecisions.has(name) ? maxClusterScore : 0);
  }
  return scores;
}

function quantityValue(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return Number(parseQuantity(String(value)).nanos) / 1e9;
  } catch {
    return undefined;
  }
}

/** Scores by allocatable `resource` (cpu or memory); clusters not reporting it get no score. */
export function allocatableScores(
  clusters: readonly ManagedCluster[],
  resource: 'cpu' | 'memory',
): PrioritizerScores {
  const values = new Map<string, number>();
  for (const cluster of clusters) {
    const allocatable = quantityValue(cluster.status?.allocatable?.[resource]);
    const capacity = quantityValue(cluster.status?.capacity?.[resource]);
    if (allocatable !== undefined && capacity !== undefined)
      values.set(cluster.metadata.name ?? '', allocatable);
  }
  const scores: PrioritizerScores = new Map();
  if (values.size === 0) return scores;
  const min = Math.min(...values.values());
  const max = Math.max(...values.values());
  for (const [name, value] of values) {
    scores.set(
      name,
      max === min ? maxClusterScore : Math.trunc(((value - min) / (max - min) - 0.5) * 2 * 100),
    );
  }
  return scores;
}

export function addOnScores(
  clusters: readonly ManagedCluster[],
  resourceName: string,
  scoreName: string,
  inputs: PrioritizerInputs,
): PrioritizerOutcome {
  const scores: PrioritizerScores = new Map();
  const expired: string[] = [];
  let validUntil: number | undefined;
  for (const cluster of clusters) {
    const name = cluster.metadata.name ?? '';
    scores.set(name, 0);
    const score = inputs.addOnScore(name, resourceName);
    if (!score) continue;
    if (score.validUntil) {
      const until = Date.parse(score.validUntil);
      if (!Number.isNaN(until) && inputs.now > until) {
        expired.push(`${name}/${resourceName}`);
        continue;
      }
      if (!Number.isNaN(until) && (validUntil === undefined || until < validUntil)) validUntil = until;
    }
    const item = score.scores?.find((s) => s.name === scoreName);
    if (item) scores.set(name, Math.trunc(item.value));
  }
  const warning = expired.length > 0 ? `AddOnPlacementScores ${expired.join(' ')} expired` : undefined;
  return { scores, warning, validUntil };
}

/** Run one prioritizer over the feasible clusters. */
export function runPrioritizer(
  p: WeightedPrioritizer,
  clusters: readonly ManagedCluster[],
  inputs: PrioritizerInputs,
): PrioritizerOutcome {
  if (p.coordinate.addOn && (p.coordinate.type || 'BuiltIn') === 'AddOn') {
    return addOnScores(clusters, p.coordinate.addOn.resourceName, p.coordinate.addOn.scoreName, inputs);
  }
  switch (p.coordinate.builtIn) {
    case BuiltInPrioritizer.Balance:
      return { scores: balanceScores(clusters, inputs) };
    case BuiltInPrioritizer.Steady:
      return { scores: steadyScores(clusters, inputs) };
    case BuiltInPrioritizer.ResourceAllocatableCPU:
      return { scores: allocatableScores(clusters, 'cpu') };
    case BuiltInPrioritizer.ResourceAllocatableMemory:
      return { scores: allocatableScores(clusters, 'memory') };
    default:
      throw new PrioritizerConfigError(`incorrect builtin prioritizer: ${p.coordinate.builtIn ?? ''}`);
  }
}
