// What `tether clusterset bind|unbind|set` and `tether get clustersets|placements` do on the hub, as
// clusteradm does it (../shared/ocm/clusteradm.md): bind creates the binding named after the set
// (an existing one is success, left as is), unbind deletes it (a missing one is success), set labels
// clusters with the set and appends managed namespaces; the listings read sets with their bindings
// and placements with their decisions. The CLI module formats; nothing here prints.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  ClusterSetCondition,
  clusterSetLabel,
  type ManagedCluster,
  type ManagedClusterSet,
  type ManagedClusterSetBinding,
  managedClusterResource,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  type Placement,
  PlacementCondition,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../api/index.ts';
import { TetherError } from '../../errors.ts';
import {
  findCondition,
  isAlreadyExists,
  isConflict,
  type KubeObject,
  namespaceResource,
  ResourceClient,
} from '../../kube/index.ts';
import { clusterSetMembers } from '../hub/clustersets-membership.ts';

function clients(kc: KubeConfig) {
  return {
    clusters: new ResourceClient<ManagedCluster>(kc, managedClusterResource),
    sets: new ResourceClient<ManagedClusterSet>(kc, managedClusterSetResource),
    bindings: new ResourceClient<ManagedClusterSetBinding>(kc, managedClusterSetBindingResource),
    placements: new ResourceClient<Placement>(kc, placementResource),
    decisions: new ResourceClient<PlacementDecision>(kc, placementDecisionResource),
    namespaces: new ResourceClient<KubeObject>(kc, namespaceResource),
  };
}

async function requireSet(kc: KubeConfig, name: string): Promise<ManagedClusterSet> {
  const set = await clients(kc).sets.get(name);
  if (!set) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `no ManagedClusterSet named ${name}: list them with tether get clustersets`,
    );
  }
  return set;
}

/** Bind `set` to `namespace`; 'exists' when the binding was there already (it is not updated). */
export async function bindClusterSet(
  kc: KubeConfig,
  set: string,
  namespace: string,
): Promise<'created' | 'exists'> {
  await requireSet(kc, set);
  try {
    await clients(kc).bindings.create({ metadata: { name: set, namespace }, spec: { clusterSet: set } });
    return 'created';
  } catch (err) {
    if (isAlreadyExists(err)) return 'exists';
    throw err;
  }
}

/** Remove the binding of `set` from `namespace`; false when there was none. */
export async function unbindClusterSet(kc: KubeConfig, set: string, namespace: string): Promise<boolean> {
  return clients(kc).bindings.delete(set, namespace, { ignoreNotFound: true });
}

export interface SetClustersResult {
  /** clusters whose label changed to the set */
  moved: string[];
  /** clusters that were in the set already */
  unchanged: string[];
  /** managed namespaces added to the set's spec */
  addedNamespaces: string[];
}

/**
 * Put `clusters` into `set` by their clusterset label (replacing another set's), and append
 * `namespaces` to its spec.managedNamespaces. The set must exist; every cluster must exist.
 */
export async function setClusterSetMembers(
  kc: KubeConfig,
  set: string,
  clusters: readonly string[],
  namespaces: readonly string[] = [],
): Promise<SetClustersResult> {
  if (clusters.length === 0 && namespaces.length === 0) {
    throw new TetherError('TETHER_INVALID_ARGUMENT', 'give --clusters, --namespaces or both');
  }
  const existingSet = await requireSet(kc, set);
  const c = clients(kc);
  const result: SetClustersResult = { moved: [], unchanged: [], addedNamespaces: [] };
  for (const name of clusters) {
    for (let attempt = 0; ; attempt++) {
      const cluster = await c.clusters.get(name);
      if (!cluster) throw new TetherError('TETHER_INVALID_ARGUMENT', `no ManagedCluster named ${name}`);
      if (cluster.metadata.labels?.[clusterSetLabel] === set) {
        result.unchanged.push(name);
        break;
      }
      try {
        await c.clusters.patchMerge(name, {
          metadata: { resourceVersion: cluster.metadata.resourceVersion, labels: { [clusterSetLabel]: set } },
        });
        result.moved.push(name);
        break;
      } catch (err) {
        if (!isConflict(err) || attempt >= 3) throw err;
      }
    }
  }
  const present = new Set((existingSet.spec?.managedNamespaces ?? []).map((n) => n.name));
  const added = [...new Set(namespaces)].filter((n) => !present.has(n));
  if (added.length > 0) {
    await c.sets.patchMerge(set, {
      metadata: { resourceVersion: existingSet.metadata.resourceVersion },
      spec: {
        managedNamespaces: [
          ...(existingSet.spec?.managedNamespaces ?? []),
          ...added.map((name) => ({ name })),
        ],
      },
    });
    result.addedNamespaces = added;
  }
  return result;
}

export interface ClusterSetRow {
  name: string;
  boundNamespaces: string[];
  /** message of ClusterSetEmpty ('' before the hub wrote it) */
  status: string;
  managedNamespaces: string[];
  clusters: string[];
}

/** Every ManagedClusterSet with the namespaces bound to it and its clusters, sorted by name. */
export async function listClusterSets(kc: KubeConfig): Promise<ClusterSetRow[]> {
  const c = clients(kc);
  const [sets, bindings, clusters] = await Promise.all([c.sets.list(), c.bindings.list(), c.clusters.list()]);
  return sets.items
    .map((set) => ({
      name: set.metadata.name ?? '',
      boundNamespaces: bindings.items
        .filter((b) => b.spec?.clusterSet === set.metadata.name)
        .map((b) => b.metadata.namespace ?? '')
        .sort(),
      status: findCondition(set.status?.conditions, ClusterSetCondition.Empty)?.message ?? '',
      managedNamespaces: (set.spec?.managedNamespaces ?? []).map((n) => n.name),
      clusters: clusterSetMembers(set, clusters.items),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export interface PlacementRow {
  name: string;
  namespace: string;
  clusterSets: string[];
  numberOfSelectedClusters: number;
  /** status/reason of the first condition, as clusteradm's table shows them ('' when none) */
  firstConditionStatus: string;
  firstConditionReason: string;
  /** 'true' | 'false' | 'unknown' */
  satisfied: string;
  misconfigured: string;
  /** cluster names of its PlacementDecisions, in decision order */
  selectedClusters: string[];
  decisionNames: string[];
}

const boolWord = (status: string | undefined) =>
  status === 'True' ? 'true' : status === 'False' ? 'false' : 'unknown';

/** Placements (in `namespace`, else all) with their decisions; `name` narrows to one. */
export async function listPlacements(
  kc: KubeConfig,
  namespace?: string,
  name?: string,
): Promise<PlacementRow[]> {
  const c = clients(kc);
  if (namespace && !(await c.namespaces.get(namespace))) {
    throw new TetherError('TETHER_INVALID_ARGUMENT', `namespace ${namespace} not found`);
  }
  const fieldSelector = name ? `metadata.name=${name}` : undefined;
  const [placements, decisions] = await Promise.all([
    c.placements.list({ namespace, fieldSelector }),
    c.decisions.list({ namespace }),
  ]);
  return placements.items
    .map((p): PlacementRow => {
      const own = decisions.items
        .filter(
          (d) =>
            d.metadata.namespace === p.metadata.namespace &&
            d.metadata.labels?.[placementLabel] === p.metadata.name,
        )
        .sort((a, b) =>
          (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '', 'en', { numeric: true }),
        );
      const first = p.status?.conditions?.[0];
      return {
        name: p.metadata.name ?? '',
        namespace: p.metadata.namespace ?? '',
        clusterSets: p.spec?.clusterSets ?? [],
        numberOfSelectedClusters: p.status?.numberOfSelectedClusters ?? 0,
        firstConditionStatus: first?.status ?? '',
        firstConditionReason: first?.reason ?? '',
        satisfied: boolWord(findCondition(p.status?.conditions, PlacementCondition.Satisfied)?.status),
        misconfigured: boolWord(
          findCondition(p.status?.conditions, PlacementCondition.Misconfigured)?.status,
        ),
        selectedClusters: own
          .flatMap((d) => (d.status?.decisions ?? []).map((x) => x.clusterName))
          .filter(Boolean),
        decisionNames: own.map((d) => d.metadata.name ?? ''),
      };
    })
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}
