// Which clusters a Placement may choose from: those of the ManagedClusterSets bound to its
// namespace by a ManagedClusterSetBinding (OCM counts a binding whose set exists; its Bound
// condition is not consulted), narrowed to spec.clusterSets when that is given, minus clusters
// being deleted. Pure.
import type { ManagedCluster } from '../../api/cluster.ts';
import { clusterSetMatcher, type SchedulingClusterSet } from './selectors.ts';

/** What a ManagedClusterSetBinding looks like to the scheduler (its name is the set's name). */
export interface SchedulingClusterSetBinding {
  metadata: { name?: string; namespace?: string };
  spec?: { clusterSet?: string };
}

export interface EligibleClusters {
  /** bindings in the namespace whose set exists */
  validBindings: number;
  /** sets bound to the namespace (∩ spec.clusterSets when given), sorted */
  clusterSets: string[];
  /** their member clusters that are not being deleted, sorted by name */
  clusters: ManagedCluster[];
}

/** The set a binding binds: OCM requires metadata.name == spec.clusterSet and uses the name. */
function boundSetName(binding: SchedulingClusterSetBinding): string {
  return binding.metadata.name ?? binding.spec?.clusterSet ?? '';
}

export function eligibleClusters(
  requestedSets: readonly string[] | undefined,
  bindings: readonly SchedulingClusterSetBinding[],
  sets: ReadonlyMap<string, SchedulingClusterSet>,
  clusters: readonly ManagedCluster[],
): EligibleClusters {
  const bound = new Set<string>();
  for (const binding of bindings) {
    const name = boundSetName(binding);
    if (sets.has(name)) bound.add(name);
  }
  const validBindings = bound.size;
  let names = [...bound];
  if (requestedSets && requestedSets.length > 0) {
    const requested = new Set(requestedSets);
    names = names.filter((name) => requested.has(name));
  }
  names.sort();
  const chosen = new Map<string, ManagedCluster>();
  for (const name of names) {
    let matches: (cluster: ManagedCluster) => boolean;
    try {
      matches = clusterSetMatcher(sets.get(name) as SchedulingClusterSet);
    } catch {
      continue; // a set whose selector cannot be used has no members
    }
    for (const cluster of clusters) {
      if (!cluster.metadata.deletionTimestamp && matches(cluster))
        chosen.set(cluster.metadata.name ?? '', cluster);
    }
  }
  const members = [...chosen.values()].sort((a, b) => cmp(a.metadata.name, b.metadata.name));
  return { validBindings, clusterSets: names, clusters: members };
}

function cmp(a = '', b = ''): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
