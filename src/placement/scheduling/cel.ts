// The CEL selector of a Placement predicate (`requiredClusterSelector.celSelector.celExpressions`),
// with OCM's ManagedCluster library: the variable `managedCluster` (the ManagedCluster object as
// JSON) and the functions
//   managedCluster.scores("<AddOnPlacementScore name>") → [{name, value}] of that cluster's scores
//   "<v1>".versionIsGreaterThan("<v2>"), .versionIsLessThan(…)   semantic versions, "v" prefix optional
//   "<q1>".quantityIsGreaterThan("<q2>"), .quantityIsLessThan(…)  Kubernetes quantities
// All expressions must be true; one that does not compile makes the placement misconfigured, one
// that fails or is not a bool for a cluster leaves that cluster out. Expressions come from hub
// users, so their size and count are bounded. Pure besides a bounded cache of parsed expressions.
import { Environment } from '@marcbachmann/cel-js';
import type { ManagedCluster } from '../../api/cluster.ts';
import { celCompiler, celExpressionsMaxCount, toCelValue } from '../../cel/programs.ts';
import { errorMessage } from '../../errors.ts';
import { parseQuantity } from '../../registration/agent/quantity.ts';
import { type ClusterMatcher, SelectorError } from './selectors.ts';
import type { AddOnPlacementScoreItem } from './types.ts';

/** The scores of AddOnPlacementScore `resourceName` in cluster `clusterName`'s namespace, if any. */
export type ScoreLookup = (
  clusterName: string,
  resourceName: string,
) => readonly AddOnPlacementScoreItem[] | undefined;

/** Score lookups of the evaluations running now, by the context object handed to the program. */
const lookups = new WeakMap<object, { clusterName: string; lookup: ScoreLookup }>();

const SEMVER = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/** -1, 0 or 1 as semver orders a and b; throws for text that is not a semantic version. */
export function compareVersions(a: string, b: string): number {
  const x = SEMVER.exec(a.trim());
  const y = SEMVER.exec(b.trim());
  if (!x) throw new Error(`${JSON.stringify(a)} is not a semantic version`);
  if (!y) throw new Error(`${JSON.stringify(b)} is not a semantic version`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(x[i]) - Number(y[i]);
    if (d !== 0) return Math.sign(d);
  }
  const pa = x[4];
  const pb = y[4];
  if (pa === pb) return 0;
  if (pa === undefined) return 1;
  if (pb === undefined) return -1;
  const ia = pa.split('.');
  const ib = pb.split('.');
  for (let i = 0; i < Math.max(ia.length, ib.length); i++) {
    const ea = ia[i];
    const eb = ib[i];
    if (ea === undefined) return -1;
    if (eb === undefined) return 1;
    const na = /^\d+$/.test(ea);
    const nb = /^\d+$/.test(eb);
    if (na && nb && Number(ea) !== Number(eb)) return Math.sign(Number(ea) - Number(eb));
    if (na !== nb) return na ? -1 : 1;
    if (ea !== eb) return ea < eb ? -1 : 1;
  }
  return 0;
}

function compareQuantities(a: string, b: string): number {
  const d = parseQuantity(a).nanos - parseQuantity(b).nanos;
  return d === 0n ? 0 : d > 0n ? 1 : -1;
}

function scoresOf(cluster: unknown, resourceName: string): unknown[] {
  const entry = cluster && typeof cluster === 'object' ? lookups.get(cluster) : undefined;
  if (!entry) return [];
  const items = entry.lookup(entry.clusterName, resourceName) ?? [];
  return items.map((item) => ({ name: item.name, value: BigInt(Math.trunc(item.value)) }));
}

const environment = new Environment({
  homogeneousAggregateLiterals: false,
  limits: { maxAstNodes: 2000, maxDepth: 64, maxListElements: 256, maxMapEntries: 256 },
})
  .registerVariable('managedCluster', 'dyn')
  .registerFunction('dyn.scores(string): list', scoresOf)
  .registerFunction(
    'string.versionIsGreaterThan(string): bool',
    (a: string, b: string) => compareVersions(a, b) > 0,
  )
  .registerFunction(
    'string.versionIsLessThan(string): bool',
    (a: string, b: string) => compareVersions(a, b) < 0,
  )
  .registerFunction(
    'string.quantityIsGreaterThan(string): bool',
    (a: string, b: string) => compareQuantities(a, b) > 0,
  )
  .registerFunction(
    'string.quantityIsLessThan(string): bool',
    (a: string, b: string) => compareQuantities(a, b) < 0,
  );
const compile = celCompiler(environment);

/**
 * A matcher that is true when every expression is true for the cluster; throws SelectorError when
 * an expression does not compile or the list is too long.
 */
export function celClusterMatcher(expressions: readonly string[], scores: ScoreLookup): ClusterMatcher {
  if (expressions.length > celExpressionsMaxCount) {
    throw new SelectorError(`a CEL selector holds at most ${celExpressionsMaxCount} expressions`);
  }
  const programs = expressions.map((expression) => {
    try {
      return compile(expression);
    } catch (err) {
      throw new SelectorError(
        `compilation failed: ${JSON.stringify(expression)}: ${errorMessage(err).split('\n')[0]}`,
      );
    }
  });
  return (cluster: ManagedCluster) => {
    if (programs.length === 0) return true;
    const managedCluster = toCelValue(cluster) as object;
    lookups.set(managedCluster, { clusterName: cluster.metadata.name ?? '', lookup: scores });
    try {
      return programs.every((program) => {
        try {
          return program({ managedCluster }) === true;
        } catch {
          return false;
        }
      });
    } finally {
      lookups.delete(managedCluster);
    }
  };
}
