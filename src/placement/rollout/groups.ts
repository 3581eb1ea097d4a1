// The decision groups of a Placement as a rollout sees them: every cluster of its PlacementDecisions,
// grouped by the decision-group-index / decision-group-name labels, groups ordered by index (OCM's
// PlacementDecisionClustersTracker). Also the lookup of mandatory groups by key. Pure functions.
import {
  decisionGroupIndexLabel,
  decisionGroupNameLabel,
  type MandatoryDecisionGroup,
  type PlacementDecision,
} from '../../api/index.ts';
import type { ClusterGroup, GroupKey } from './types.ts';

const groupId = (key: GroupKey) => `${key.groupIndex}/${key.groupName}`;

/**
 * The clusters of `decisions` (one Placement's PlacementDecisions) by decision group, ordered by
 * group index then name; clusters sorted by name; a cluster listed twice counts once, in its first
 * group. A decision without a group index label counts as group 0.
 */
export function clusterGroupsOf(decisions: readonly PlacementDecision[]): ClusterGroup[] {
  const groups = new Map<string, { key: GroupKey; clusters: Set<string> }>();
  const seen = new Set<string>();
  for (const decision of decisions) {
    const labels = decision.metadata.labels ?? {};
    const index = Number.parseInt(labels[decisionGroupIndexLabel] ?? '0', 10);
    const key: GroupKey = {
      groupIndex: Number.isFinite(index) ? index : 0,
      groupName: labels[decisionGroupNameLabel] ?? '',
    };
    let group = groups.get(groupId(key));
    if (!group) {
      group = { key, clusters: new Set() };
      groups.set(groupId(key), group);
    }
    for (const d of decision.status?.decisions ?? []) {
      if (!d.clusterName || seen.has(d.clusterName)) continue;
      seen.add(d.clusterName);
      group.clusters.add(d.clusterName);
    }
  }
  return [...groups.values()]
    .sort((a, b) =>
      a.key.groupIndex !== b.key.groupIndex
        ? a.key.groupIndex - b.key.groupIndex
        : a.key.groupName.localeCompare(b.key.groupName),
    )
    .map((g) => ({ key: g.key, clusters: [...g.clusters].sort() }));
}

/** OCM's reading of a mandatory group: by name when it has one, else by index (default 0). */
export function mandatoryGroupKeys(groups: readonly MandatoryDecisionGroup[] | undefined): GroupKey[] {
  return (groups ?? []).map((g) =>
    g.groupName
      ? { groupName: g.groupName, groupIndex: -1 }
      : { groupName: '', groupIndex: g.groupIndex ?? 0 },
  );
}

function matches(group: GroupKey, keys: readonly GroupKey[]): boolean {
  return keys.some((k) =>
    k.groupName ? k.groupName === group.groupName : k.groupIndex === group.groupIndex,
  );
}

/** The groups `keys` name. */
export function groupsWith(groups: readonly ClusterGroup[], keys: readonly GroupKey[]): ClusterGroup[] {
  return groups.filter((g) => matches(g.key, keys));
}

/** The groups `keys` do not name. */
export function groupsBesides(groups: readonly ClusterGroup[], keys: readonly GroupKey[]): ClusterGroup[] {
  return groups.filter((g) => !matches(g.key, keys));
}

/** Every cluster of `groups`, sorted. */
export function clustersOf(groups: readonly ClusterGroup[]): string[] {
  return groups.flatMap((g) => g.clusters).sort();
}
