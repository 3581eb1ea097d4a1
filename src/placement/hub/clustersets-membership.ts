// Which ManagedClusters a ManagedClusterSet holds, and the ClusterSetEmpty / Bound conditions the hub
// writes from that, as OCM's registration hub computes them. Pure: no cluster, no I/O.
//   - ExclusiveClusterSetLabel: clusters labelled cluster.open-cluster-management.io/clusterset=<set>;
//   - LabelSelector: clusters its labelSelector matches (an empty selector matches every cluster);
//   - ClusterSetEmpty True / NoClusterMatched when none, False / ClustersSelected otherwise;
//   - a binding is Bound True / ClusterSetBound when its set exists, False / ClusterSetNotFound if not.
import {
  ClusterSetCondition,
  ClusterSetReason,
  ClusterSetSelectorType,
  clusterSetLabel,
  defaultClusterSetName,
  globalClusterSetName,
  type LabelSelector,
  type LabelSelectorRequirement,
  type ManagedCluster,
  type ManagedClusterSet,
  type ManagedClusterSetSpec,
} from '../../api/index.ts';
import type { ConditionUpdate } from '../../kube/index.ts';

/** The spec OCM keeps on the `default` set: membership by the clusterset label. */
export const defaultClusterSetSpec: ManagedClusterSetSpec = {
  clusterSelector: { selectorType: ClusterSetSelectorType.ExclusiveClusterSetLabel },
};

/** The spec OCM keeps on the `global` set: every cluster. */
export const globalClusterSetSpec: ManagedClusterSetSpec = {
  clusterSelector: { selectorType: ClusterSetSelectorType.LabelSelector, labelSelector: {} },
};

/** The sets the hub keeps, with the clusterSelector each must have. */
export const hubClusterSets: ReadonlyMap<string, ManagedClusterSetSpec> = new Map([
  [defaultClusterSetName, defaultClusterSetSpec],
  [globalClusterSetName, globalClusterSetSpec],
]);

/** With `"false"`, the hub leaves a kept set's spec alone (OCM's opt-out). */
export const clusterSetAutoUpdateAnnotation = 'cluster.open-cluster-management.io/autoupdate';

function requirementMatches(r: LabelSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'In':
      return has && (r.values ?? []).includes(labels[r.key] as string);
    case 'NotIn':
      return !has || !(r.values ?? []).includes(labels[r.key] as string);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      // An operator the apiserver would reject in a real selector matches nothing.
      return false;
  }
}

/** metav1.LabelSelector semantics: every matchLabels entry and every expression; empty matches all. */
export function labelSelectorMatches(selector: LabelSelector | undefined, labels: Record<string, string>) {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector?.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

/** Whether `cluster` is in `set`. A LabelSelector set without a selector selects nothing. */
export function clusterInSet(set: ManagedClusterSet, cluster: ManagedCluster): boolean {
  const selector = set.spec?.clusterSelector;
  const labels = cluster.metadata.labels ?? {};
  if ((selector?.selectorType ?? ClusterSetSelectorType.ExclusiveClusterSetLabel) === 'LabelSelector') {
    return selector?.labelSelector !== undefined && labelSelectorMatches(selector.labelSelector, labels);
  }
  return labels[clusterSetLabel] === set.metadata.name;
}

/** The names of the clusters in `set`, sorted. */
export function clusterSetMembers(set: ManagedClusterSet, clusters: readonly ManagedCluster[]): string[] {
  return clusters
    .filter((c) => clusterInSet(set, c))
    .map((c) => c.metadata.name ?? '')
    .sort();
}

/** The ClusterSetEmpty condition for a set with `members` clusters. */
export function clusterSetEmptyCondition(members: number): ConditionUpdate {
  return members === 0
    ? {
        type: ClusterSetCondition.Empty,
        status: 'True',
        reason: ClusterSetReason.NoClusterMatched,
        message: 'No ManagedCluster selected',
      }
    : {
        type: ClusterSetCondition.Empty,
        status: 'False',
        reason: ClusterSetReason.ClustersSelected,
        message: `${members} ManagedClusters selected`,
      };
}

/** The Bound condition of a binding whose set does (or does not) exist. */
export function bindingBoundCondition(clusterSet: string, setExists: boolean): ConditionUpdate {
  return setExists
    ? {
        type: ClusterSetCondition.Bound,
        status: 'True',
        reason: ClusterSetReason.ClusterSetBound,
        message: '',
      }
    : {
        type: ClusterSetCondition.Bound,
        status: 'False',
        reason: ClusterSetReason.ClusterSetNotFound,
        message: `ManagedClusterSet ${clusterSet} not found`,
      };
}

/** A cluster without a set gets `default` (OCM adds the label when the label is missing or empty). */
export function needsDefaultClusterSetLabel(cluster: ManagedCluster): boolean {
  return !cluster.metadata.labels?.[clusterSetLabel];
}
