// A ClusterManagementAddOn's install strategy as OCM's addon-manager reads it. Pure functions.
//   - lifecycle: the addon-manager acts on every ClusterManagementAddOn whose annotation
//     addon.open-cluster-management.io/lifecycle is not `self` (OCM stamps `addon-manager` on the
//     others, so addons built on OCM's Go framework leave install and rollout to it);
//   - Manual (or unset): nothing is created; users create the ManagedClusterAddOns;
//   - Placements: a ManagedClusterAddOn `<addon>` in every cluster namespace the PlacementDecisions
//     of the listed Placements select (a missing Placement selects nothing); clusters that leave
//     every decision lose the ManagedClusterAddOn, but only one this manager created: those carry
//     a controller ownerReference to the ClusterManagementAddOn (OCM's mark), while one a user made
//     carries, once adopted, a plain (non-controller) ownerReference and is never deleted here.
// The cluster a ManagedClusterAddOn is in falls under the LAST placement (in spec order) that
// decides it, as OCM's configuration graph does; outside every placement the defaults apply.
import {
  type AddOnConfig,
  addonApiGroup,
  type ClusterManagementAddOn,
  type ManagedClusterAddOn,
} from '../../../api/addon.ts';
import {
  type Placement,
  type PlacementDecision,
  placementLabel,
  type RolloutStrategy,
} from '../../../api/placement.ts';
import type { OwnerReference } from '../../../kube/index.ts';

/** CMA annotation saying who installs and rolls out the add-on. */
export const lifecycleAnnotation = 'addon.open-cluster-management.io/lifecycle';
export const LifecycleValue = { AddonManager: 'addon-manager', Self: 'self' } as const;

/** One installStrategy.placements[] entry. */
export interface PlacementStrategy {
  namespace: string;
  name: string;
  configs: AddOnConfig[];
  rolloutStrategy?: RolloutStrategy;
}

/** true unless the add-on manages its own install (lifecycle `self`). */
export function managedByAddonManager(cma: ClusterManagementAddOn): boolean {
  return cma.metadata.annotations?.[lifecycleAnnotation] !== LifecycleValue.Self;
}

export function installStrategyType(cma: ClusterManagementAddOn): 'Manual' | 'Placements' {
  return cma.spec?.installStrategy?.type === 'Placements' ? 'Placements' : 'Manual';
}

/** The placements of a Placements strategy ([] for Manual), entries without a name skipped. */
export function placementStrategies(cma: ClusterManagementAddOn): PlacementStrategy[] {
  if (installStrategyType(cma) !== 'Placements') return [];
  const out: PlacementStrategy[] = [];
  for (const raw of cma.spec?.installStrategy?.placements ?? []) {
    const name = typeof raw['name'] === 'string' ? raw['name'] : '';
    const namespace = typeof raw['namespace'] === 'string' ? raw['namespace'] : '';
    if (!name || !namespace) continue;
    const configs = Array.isArray(raw['configs']) ? (raw['configs'] as AddOnConfig[]) : [];
    const rollout = raw['rolloutStrategy'];
    out.push({
      namespace,
      name,
      configs,
      ...(rollout && typeof rollout === 'object' ? { rolloutStrategy: rollout as RolloutStrategy } : {}),
    });
  }
  return out;
}

export const placementKey = (p: { namespace?: string; name?: string }): string =>
  `${p.namespace ?? ''}/${p.name ?? ''}`;

/** The PlacementDecisions of one placement among `decisions`. */
export function decisionsOf(
  decisions: readonly PlacementDecision[],
  placement: { namespace: string; name: string },
): PlacementDecision[] {
  return decisions.filter(
    (d) =>
      d.metadata.namespace === placement.namespace && d.metadata.labels?.[placementLabel] === placement.name,
  );
}

/** Every cluster the decisions name. */
export function decidedClusters(decisions: readonly PlacementDecision[]): Set<string> {
  const out = new Set<string>();
  for (const d of decisions)
    for (const c of d.status?.decisions ?? []) if (c.clusterName) out.add(c.clusterName);
  return out;
}

/** A placement strategy with the Placement (undefined when missing) and the clusters it decides. */
export interface PlacementNode extends PlacementStrategy {
  placement?: Placement;
  decisions: PlacementDecision[];
  clusters: Set<string>;
}

/** The strategy's placements resolved against the caches; a missing Placement decides nothing. */
export function placementNodes(
  cma: ClusterManagementAddOn,
  placements: (namespace: string, name: string) => Placement | undefined,
  decisions: readonly PlacementDecision[],
): PlacementNode[] {
  return placementStrategies(cma).map((s) => {
    const placement = placements(s.namespace, s.name);
    const own = placement ? decisionsOf(decisions, s) : [];
    return { ...s, ...(placement ? { placement } : {}), decisions: own, clusters: decidedClusters(own) };
  });
}

/** The node a cluster falls under: the last one deciding it, or undefined (defaults). */
export function nodeOfCluster<T extends { clusters: Set<string> }>(
  nodes: readonly T[],
  cluster: string,
): T | undefined {
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i] as T;
    if (node.clusters.has(cluster)) return node;
  }
  return undefined;
}

/** The controller ownerReference this manager puts on the ManagedClusterAddOns it creates. */
export function controllerOwnerRef(cma: ClusterManagementAddOn): OwnerReference {
  return { ...adoptionOwnerRef(cma), controller: true, blockOwnerDeletion: true };
}

/** The ownerReference an adopted (user-made) ManagedClusterAddOn gets: not a controller. */
export function adoptionOwnerRef(cma: ClusterManagementAddOn): OwnerReference {
  return {
    apiVersion: `${addonApiGroup}/v1alpha1`,
    kind: 'ClusterManagementAddOn',
    name: cma.metadata.name ?? '',
    uid: cma.metadata.uid ?? '',
  };
}

const isCmaRef = (r: OwnerReference, cma: ClusterManagementAddOn) =>
  r.kind === 'ClusterManagementAddOn' &&
  r.name === cma.metadata.name &&
  (!r.uid || r.uid === cma.metadata.uid);

/** Created by this manager for `cma` (controller ownerReference to it). */
export function createdByInstallStrategy(mca: ManagedClusterAddOn, cma: ClusterManagementAddOn): boolean {
  return (mca.metadata.ownerReferences ?? []).some((r) => r.controller === true && isCmaRef(r, cma));
}

/** Any ownerReference to `cma` (OCM's IsOwnedByCMA). */
export function ownedByCma(mca: ManagedClusterAddOn, cma: ClusterManagementAddOn): boolean {
  return (mca.metadata.ownerReferences ?? []).some((r) => isCmaRef(r, cma));
}

/** What the install strategy changes: clusters to get a new ManagedClusterAddOn, ones to delete. */
export interface InstallPlan {
  create: string[];
  delete: ManagedClusterAddOn[];
}

/**
 * Placements: create where a decision has no ManagedClusterAddOn; delete the ones this manager
 * created whose cluster no placement decides (not those already being deleted). Manual: nothing.
 */
export function installPlan(
  cma: ClusterManagementAddOn,
  nodes: readonly PlacementNode[],
  existing: readonly ManagedClusterAddOn[],
): InstallPlan {
  if (installStrategyType(cma) !== 'Placements' || !managedByAddonManager(cma))
    return { create: [], delete: [] };
  const required = new Set<string>();
  for (const n of nodes) for (const c of n.clusters) required.add(c);
  const have = new Set(existing.map((m) => m.metadata.namespace ?? ''));
  return {
    create: [...required].filter((c) => !have.has(c)).sort(),
    delete: existing.filter(
      (m) =>
        !required.has(m.metadata.namespace ?? '') &&
        !m.metadata.deletionTimestamp &&
        createdByInstallStrategy(m, cma),
    ),
  };
}
