// Label, claim and cluster-set selection of ManagedClusters, with apimachinery's selector rules:
// matchLabels and matchExpressions are ANDed, an empty selector matches every cluster; In/NotIn need
// values, Exists/DoesNotExist take none, anything else is a misconfiguration (thrown, for the
// scheduler to report as PlacementMisconfigured). A claim selector reads `status.clusterClaims` as
// labels. Set membership follows the set's clusterSelector: ExclusiveClusterSetLabel (the
// `cluster.open-cluster-management.io/clusterset` label names the set) or LabelSelector. Pure.
import type { ManagedCluster } from '../../api/cluster.ts';
import {
  type ClusterClaimSelector,
  clusterSetLabel,
  type LabelSelector,
  type LabelSelectorRequirement,
} from './types.ts';

/** A selector that cannot be evaluated (the placement is misconfigured). */
export class SelectorError extends Error {
  override name = 'SelectorError';
}

export type LabelMatcher = (labels: Readonly<Record<string, string>>) => boolean;

function requirementMatcher(req: LabelSelectorRequirement): LabelMatcher {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
    case 'NotIn': {
      if (values.length === 0) {
        throw new SelectorError(
          `values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty`,
        );
      }
      const set = new Set(values);
      const inSet = (labels: Readonly<Record<string, string>>) =>
        Object.hasOwn(labels, req.key) && set.has(labels[req.key] as string);
      return req.operator === 'In' ? inSet : (labels) => !inSet(labels);
    }
    case 'Exists':
    case 'DoesNotExist': {
      if (values.length > 0) {
        throw new SelectorError(
          `values: Invalid value: ${JSON.stringify(values)}: values set must be empty for exists and does not exist`,
        );
      }
      return req.operator === 'Exists'
        ? (labels) => Object.hasOwn(labels, req.key)
        : (labels) => !Object.hasOwn(labels, req.key);
    }
    default:
      throw new SelectorError(`${JSON.stringify(req.operator)} is not a valid label selector operator`);
  }
}

/** A matcher for a metav1.LabelSelector; throws SelectorError for an invalid one. */
export function labelSelectorMatcher(selector: LabelSelector | undefined): LabelMatcher {
  const checks: LabelMatcher[] = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    checks.push((labels) => labels[key] === value);
  }
  for (const req of selector?.matchExpressions ?? []) checks.push(requirementMatcher(req));
  return (labels) => checks.every((check) => check(labels));
}

/** A cluster's claims as a label map (name → value). */
export function clusterClaims(cluster: ManagedCluster): Record<string, string> {
  const claims: Record<string, string> = {};
  for (const claim of cluster.status?.clusterClaims ?? []) claims[claim.name] = claim.value;
  return claims;
}

export type ClusterMatcher = (cluster: ManagedCluster) => boolean;

/** Label selector AND claim selector; throws SelectorError for an invalid one. */
export function labelAndClaimMatcher(
  labelSelector: LabelSelector | undefined,
  claimSelector: ClusterClaimSelector | undefined,
): ClusterMatcher {
  const byLabel = labelSelectorMatcher(labelSelector);
  const byClaim = labelSelectorMatcher({ matchExpressions: claimSelector?.matchExpressions });
  const hasClaimRules = (claimSelector?.matchExpressions?.length ?? 0) > 0;
  return (cluster) =>
    byLabel(cluster.metadata.labels ?? {}) && (!hasClaimRules || byClaim(clusterClaims(cluster)));
}

/** The clusterSelector of a ManagedClusterSet (v1beta2). */
export interface ClusterSetSelector {
  /** ExclusiveClusterSetLabel (default) or LabelSelector */
  selectorType?: string;
  labelSelector?: LabelSelector;
}

/** What a ManagedClusterSet looks like to the scheduler. */
export interface SchedulingClusterSet {
  metadata: { name?: string };
  spec?: { clusterSelector?: ClusterSetSelector };
}

/** Which clusters belong to `set`; throws SelectorError for a selector type or selector it cannot use. */
export function clusterSetMatcher(set: SchedulingClusterSet): ClusterMatcher {
  const selector = set.spec?.clusterSelector;
  const type = selector?.selectorType || 'ExclusiveClusterSetLabel';
  if (type === 'ExclusiveClusterSetLabel') {
    const name = set.metadata.name ?? '';
    return (cluster) => cluster.metadata.labels?.[clusterSetLabel] === name;
  }
  if (type === 'LabelSelector') {
    // apimachinery: a nil selector selects nothing, an empty one everything (the global set)
    if (!selector?.labelSelector) return () => false;
    const matches = labelSelectorMatcher(selector?.labelSelector);
    return (cluster) => matches(cluster.metadata.labels ?? {});
  }
  throw new SelectorError(`selectorType ${JSON.stringify(type)} is not supported`);
}
