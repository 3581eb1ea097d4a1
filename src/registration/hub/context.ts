// What every registration-hub reconciler shares: the hub clients, the caches (ManagedClusters,
// leases, and the namespaces and RBAC the hub keeps per cluster), and the one way they write a
// ManagedCluster — change one part of the informer's copy and write it back at that copy's
// resourceVersion. Several reconcilers write the same ManagedCluster (conditions, taints,
// finalizers) and the agent writes its status too; a stale write is refused (409) and retried on a
// live read instead of overwriting someone else's change. Starting from the cache saves the GET
// that would otherwise precede every write; a cache that is behind costs one refused write.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, managedClusterResource } from '../../api/index.ts';
import {
  type ConditionUpdate,
  conditionsEqualIgnoringTime,
  type Informer,
  isConflict,
  type KubeObject,
  type Lease,
  type MergePatch,
  ResourceClient,
  setCondition,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { AppliedObjects, LeaseCreations } from './applied-objects.ts';
import type { HubEventRecorder } from './events.ts';
import type { RbacBinding, RbacRole } from './resources.ts';

/** Caches of what the hub writes per cluster: only objects labelled with a cluster name. */
export interface ClusterObjectCaches {
  namespaces: Informer<KubeObject>;
  clusterRoles: Informer<RbacRole>;
  clusterRoleBindings: Informer<RbacBinding>;
  roleBindings: Informer<RbacBinding>;
}

export interface HubContext {
  kubeconfig: KubeConfig;
  clusters: ResourceClient<ManagedCluster>;
  /** every ManagedCluster this hub reconciles (all, or those matching clusterLabelSelector) */
  clusterInformer: Informer<ManagedCluster>;
  /** every `managed-cluster-lease`, in all namespaces */
  leaseInformer: Informer<Lease>;
  /** the cluster namespaces and RBAC, to write them only when they differ from what the hub wrote */
  clusterObjects: ClusterObjectCaches;
  /** what the hub last wrote to each of those objects */
  applied: AppliedObjects;
  /** cluster leases this hub created and the informer may not show yet */
  leaseCreations: LeaseCreations;
  events: HubEventRecorder;
  log: Logger;
}

export function clusterClient(kubeconfig: KubeConfig): ResourceClient<ManagedCluster> {
  return new ResourceClient<ManagedCluster>(kubeconfig, managedClusterResource);
}

/** Where a patch goes: the object (metadata, spec) or its status subresource. */
type PatchTarget = 'object' | 'status';

/** Attempts at a read-modify-write before giving up to the work queue's backoff. */
const maxConflictRetries = 5;

/**
 * Let `change` compute a merge patch from the cluster (undefined: nothing to do) and write it
 * guarded by the resourceVersion it was computed from; on 409 read live and retry. The first
 * attempt starts from `cached` (the informer's copy) when given, else from a live read. Resolves
 * with the written object, the unchanged one, or undefined when the cluster does not exist.
 */
export async function patchCluster(
  clusters: ResourceClient<ManagedCluster>,
  name: string,
  target: PatchTarget,
  change: (cluster: ManagedCluster) => MergePatch | undefined,
  cached?: ManagedCluster,
): Promise<ManagedCluster | undefined> {
  for (let attempt = 1; ; attempt++) {
    const cluster = attempt === 1 && cached ? cached : await clusters.get(name);
    if (!cluster) return undefined;
    const patch = change(cluster);
    if (!patch) return cluster;
    const guarded = {
      ...patch,
      metadata: { ...(patch.metadata ?? {}), resourceVersion: cluster.metadata.resourceVersion },
    };
    try {
      return target === 'status'
        ? await clusters.patchStatus(name, guarded)
        : await clusters.patchMerge(name, guarded);
    } catch (err) {
      if (!isConflict(err) || attempt >= maxConflictRetries) throw err;
    }
  }
}

/** `conditions` with `updates` applied, or undefined when that changes nothing but times. */
function withConditions(
  cluster: ManagedCluster,
  updates: ConditionUpdate[] | ((cluster: ManagedCluster) => ConditionUpdate[]),
): ManagedCluster['status'] | undefined {
  const before = cluster.status?.conditions ?? [];
  let after = before;
  for (const update of typeof updates === 'function' ? updates(cluster) : updates) {
    after = setCondition(after, update);
  }
  return conditionsEqualIgnoringTime(before, after) ? undefined : { conditions: after };
}

/**
 * Set conditions on the cluster's status; no write when nothing but times would change. With
 * `cached` (the informer's copy), no request at all when the cache already shows them (if the
 * cache is behind, its next update brings the reconcile back), and the patch starts from it.
 */
export async function setClusterConditions(
  clusters: ResourceClient<ManagedCluster>,
  name: string,
  updates: ConditionUpdate[] | ((cluster: ManagedCluster) => ConditionUpdate[]),
  cached?: ManagedCluster,
): Promise<void> {
  if (cached && !withConditions(cached, updates)) return;
  await patchCluster(
    clusters,
    name,
    'status',
    (cluster) => {
      const status = withConditions(cluster, updates);
      return status ? { status } : undefined;
    },
    cached,
  );
}

/** Add or remove one finalizer; starts from `cached` when given (see patchCluster). */
export async function setClusterFinalizer(
  clusters: ResourceClient<ManagedCluster>,
  name: string,
  finalizer: string,
  present: boolean,
  cached?: ManagedCluster,
): Promise<ManagedCluster | undefined> {
  return patchCluster(
    clusters,
    name,
    'object',
    (cluster) => {
      const finalizers = cluster.metadata.finalizers ?? [];
      if (finalizers.includes(finalizer) === present) return undefined;
      // Never add a finalizer to an object on its way out: nobody would remove it.
      if (present && cluster.metadata.deletionTimestamp) return undefined;
      const next = present ? [...finalizers, finalizer] : finalizers.filter((f) => f !== finalizer);
      return { metadata: { finalizers: next } };
    },
    cached,
  );
}

/** Namespaces no cluster may take over by being named like them. */
const reservedNamespaces = /^(default|kube-.*|open-cluster-management(-.*)?)$/;

/**
 * Why the hub will not manage a cluster of this name, or undefined when it will: the name must be
 * able to name its namespace (a DNS-1123 label) and must not be a system namespace, whose objects
 * the cluster's grants would otherwise reach.
 */
export function clusterNameProblem(name: string): string | undefined {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)) return 'is not a DNS-1123 label';
  if (reservedNamespaces.test(name)) return 'names a system namespace';
  return undefined;
}
