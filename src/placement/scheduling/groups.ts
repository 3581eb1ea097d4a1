// Decision groups and PlacementDecision objects, as OCM's scheduler lays them out. The selected
// clusters are grouped by `decisionStrategy.groupStrategy`: each decisionGroup takes the selected
// clusters its groupClusterSelector matches (not taken by an earlier group), the rest form a group
// named ""; every group is cut, sorted by cluster name, into groups of clustersPerDecisionGroup (a
// count, or a percentage of all selected clusters rounded up; default all). Each group becomes
// PlacementDecisions of at most 100 decisions named <placement>-decision-<n> (n from 1, counting
// on across groups) labelled with the placement and the group's index (from 0) and name. There is
// always at least one (maybe empty) decision object. Pure.
import type { ManagedCluster } from '../../api/cluster.ts';
import { labelAndClaimMatcher } from './selectors.ts';
import {
  type ClusterDecision,
  type DecisionGroupStatus,
  decisionGroupIndexLabel,
  decisionGroupNameLabel,
  type GroupStrategy,
  maxDecisionsPerObject,
  placementLabel,
} from './types.ts';

/** A clustersPerDecisionGroup that cannot be used (reported as PlacementMisconfigured). */
export class GroupStrategyError extends Error {
  override name = 'GroupStrategyError';
}

export interface ClusterGroup {
  name: string;
  clusters: string[];
}

/** Clusters per group for `total` selected clusters; all of them when unset, 0, negative or too large. */
export function groupLength(perGroup: number | string | undefined, total: number): number {
  let length = total;
  if (typeof perGroup === 'number') length = Math.trunc(perGroup);
  else if (typeof perGroup === 'string') {
    if (!perGroup.endsWith('%')) {
      throw new GroupStrategyError(`${perGroup} invalid type: string is not a percentage`);
    }
    const percent = Number.parseFloat(perGroup.slice(0, -1));
    if (Number.isNaN(percent))
      throw new GroupStrategyError(`${perGroup} invalid type: string is not a percentage`);
    length = Math.ceil((percent / 100) * total);
  }
  return length <= 0 || length > total ? total : length;
}

function divide(name: string, clusters: string[], length: number): ClusterGroup[] {
  const sorted = [...clusters].sort();
  const groups: ClusterGroup[] = [];
  for (let i = 0; i < sorted.length; i += Math.max(length, 1)) {
    groups.push({ name, clusters: sorted.slice(i, i + Math.max(length, 1)) });
  }
  return groups;
}

/** The decision groups of the selected clusters (at least one, maybe empty). */
export function decisionGroups(
  strategy: GroupStrategy | undefined,
  selected: readonly ManagedCluster[],
): ClusterGroup[] {
  const length = groupLength(strategy?.clustersPerDecisionGroup, selected.length);
  const left = new Set(selected.map((c) => c.metadata.name ?? ''));
  const groups: ClusterGroup[] = [];
  for (const group of strategy?.decisionGroups ?? []) {
    const matches = labelAndClaimMatcher(
      group.groupClusterSelector?.labelSelector,
      group.groupClusterSelector?.claimSelector,
    );
    const matched: string[] = [];
    for (const cluster of selected) {
      const name = cluster.metadata.name ?? '';
      if (left.has(name) && matches(cluster)) {
        matched.push(name);
        left.delete(name);
      }
    }
    groups.push(...divide(group.groupName, matched, length));
  }
  groups.push(...divide('', [...left], length));
  return groups.length > 0 ? groups : [{ name: '', clusters: [] }];
}

/** A PlacementDecision the scheduler wants to exist. */
export interface DesiredDecision {
  name: string;
  labels: Record<string, string>;
  decisions: ClusterDecision[];
}

export interface DecisionLayout {
  objects: DesiredDecision[];
  groups: DecisionGroupStatus[];
}

/** The PlacementDecision objects and status.decisionGroups for these groups. */
export function layoutDecisions(placementName: string, groups: readonly ClusterGroup[]): DecisionLayout {
  const objects: DesiredDecision[] = [];
  const statuses: DecisionGroupStatus[] = [];
  let index = 1;
  groups.forEach((group, groupIndex) => {
    const slices: string[][] = [];
    for (let i = 0; i < group.clusters.length; i += maxDecisionsPerObject) {
      slices.push(group.clusters.slice(i, i + maxDecisionsPerObject));
    }
    if (slices.length === 0) slices.push([]);
    const names: string[] = [];
    for (const slice of slices) {
      const name = `${placementName}-decision-${index++}`;
      names.push(name);
      objects.push({
        name,
        labels: {
          [placementLabel]: placementName,
          [decisionGroupNameLabel]: group.name,
          [decisionGroupIndexLabel]: String(groupIndex),
        },
        decisions: slice.map((clusterName) => ({ clusterName, reason: '' })),
      });
    }
    statuses.push({
      decisionGroupIndex: groupIndex,
      decisionGroupName: group.name,
      decisions: names,
      clusterCount: group.clusters.length,
    });
  });
  return { objects, groups: statuses };
}
