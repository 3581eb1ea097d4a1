// ManagedClusterAcceptReconciler: what `spec.hubAcceptsClient` grants, in OCM's shape (rbac.ts).
// Once per hub: the shared ClusterRoles the namespace RoleBindings point at. Every cluster the hub
// sees gets the api-resource-cleanup finalizer and its ClusterRole/Binding (reading its own
// ManagedCluster). Accepted: the cluster namespace, the full ClusterRole, one RoleBinding per agent
// concern, the managed-cluster-lease, HubAcceptedManagedCluster True and a ManagedClusterAccepted
// event. Denied after being accepted: the RoleBindings go, the ClusterRole shrinks back,
// HubAcceptedManagedCluster False and a ManagedClusterDenied event (a cluster never accepted gets no
// condition, as in OCM).
//
// The work RoleBinding carries the manifest-work-cleanup finalizer: deleting it (deny, delete)
// leaves it in force while ManifestWorks remain in the namespace, so the work agent can still
// release its finalizers on them; the hub drops the finalizer once none is left. Deletion is not
// handled here (deletion.ts), but removeClusterResources is: it owns the objects it knows how to name.
//
// The reconcile runs on every change of the ManagedCluster (the agent's status among them) and on
// every change of the objects it keeps: each object is written only when what the hub wants of it
// changed or the cache shows someone else's change (applied-objects.ts), so an accepted cluster
// whose spec stays the same costs no request, and an edited or deleted grant is restored at once.
import {
  clusterNameLabel,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterReason,
  managedClusterFinalizer,
  managedClusterLeaseName,
  managedClusterResource,
  manifestWorkResource,
} from '../../api/index.ts';
import {
  type Informer,
  isConditionTrue,
  isNotFound,
  type KubeObject,
  type Lease,
  type ReconcileResult,
  ResourceClient,
  toApiError,
} from '../../kube/index.ts';
import { type ApplyDecision, appliedKey, echoWaitMs } from './applied-objects.ts';
import { type HubContext, patchCluster, setClusterConditions } from './context.ts';
import { ensureClusterLease } from './lease.ts';
import { clusterRbac, sharedClusterRoles } from './rbac.ts';
import {
  clusterRbacName,
  clusterRoleBindingResource,
  clusterRoleResource,
  hubAcceptedMessage,
  hubDeniedMessage,
  hubFieldManager,
  manifestWorkCleanupFinalizer,
  namespaceGrants,
  namespaceRbacName,
  namespaceResource,
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
  roleResource,
} from './resources.ts';
import { taintsOf } from './taints.ts';

const apply = { fieldManager: hubFieldManager, force: true };
const gone = { ignoreNotFound: true };

/** While a deleted work RoleBinding waits for the namespace's ManifestWorks to go, look this often. */
const workCleanupPollMs = 30_000;

export class ManagedClusterAcceptReconciler {
  private readonly ctx: HubContext;
  private readonly leases: ResourceClient<Lease>;
  private readonly namespaces: ResourceClient;
  private readonly clusterRoles: ResourceClient<RbacRole>;
  private readonly clusterRoleBindings: ResourceClient<RbacBinding>;
  private readonly roles: ResourceClient<RbacRole>;
  private readonly roleBindings: ResourceClient<RbacBinding>;
  private readonly works: ResourceClient<KubeObject>;
  private sharedRolesApplied: Promise<void> | undefined;

  constructor(ctx: HubContext, leases: ResourceClient<Lease>) {
    this.ctx = ctx;
    this.leases = leases;
    const kc = ctx.kubeconfig;
    this.namespaces = new ResourceClient<KubeObject>(kc, namespaceResource);
    this.clusterRoles = new ResourceClient<RbacRole>(kc, clusterRoleResource);
    this.clusterRoleBindings = new ResourceClient<RbacBinding>(kc, clusterRoleBindingResource);
    this.roles = new ResourceClient<RbacRole>(kc, roleResource);
    this.roleBindings = new ResourceClient<RbacBinding>(kc, roleBindingResource);
    this.works = new ResourceClient<KubeObject>(kc, manifestWorkResource);
  }

  /** Bring a cluster that is not being deleted in line with spec.hubAcceptsClient. */
  async reconcile(cluster: ManagedCluster): Promise<ReconcileResult | undefined> {
    const name = cluster.metadata.name ?? '';
    const { clusters, clusterObjects } = this.ctx;
    const live = cluster.metadata.finalizers?.includes(managedClusterFinalizer)
      ? cluster
      : await this.addFinalizer(cluster);
    if (!live || live.metadata.deletionTimestamp) return undefined;
    await this.ensureSharedClusterRoles();
    const accepted = live.spec?.hubAcceptsClient === true;
    const wasAccepted = isConditionTrue(live.status?.conditions, ManagedClusterCondition.HubAccepted);
    const rbac = clusterRbac(name, accepted);
    /** some object's cache has not shown our last write yet: look again when it has */
    let lagging = false;
    const note = (decision: ApplyDecision) => {
      lagging ||= decision === 'wait';
    };
    // Independent writes go side by side: a cluster's accept is a few round trips, not a dozen.
    const namespace = { metadata: { name, labels: { [clusterNameLabel]: name } } };
    const firstWrites = await Promise.all([
      this.applyIfChanged(this.clusterRoles, clusterObjects.clusterRoles, rbac.clusterRole),
      this.applyIfChanged(
        this.clusterRoleBindings,
        clusterObjects.clusterRoleBindings,
        rbac.clusterRoleBinding,
      ),
      ...(accepted ? [this.applyIfChanged(this.namespaces, clusterObjects.namespaces, namespace)] : []),
    ]);
    for (const decision of firstWrites) note(decision);
    if (!accepted) {
      const again = lagging ? { requeueAfterMs: echoWaitMs } : undefined;
      const waiting = await this.removeNamespaceGrants(name);
      await setClusterConditions(
        clusters,
        name,
        (current) =>
          isConditionTrue(current.status?.conditions, ManagedClusterCondition.HubAccepted)
            ? [
                {
                  type: ManagedClusterCondition.HubAccepted,
                  status: 'False',
                  reason: ManagedClusterReason.HubClusterAdminDenied,
                  message: hubDeniedMessage,
                },
              ]
            : [],
        live,
      );
      if (wasAccepted) {
        await this.ctx.events.record(
          clusterSubject(live),
          'ManagedClusterDenied',
          `managed cluster ${name} is denied by hub cluster admin`,
        );
      }
      return waiting ? { requeueAfterMs: workCleanupPollMs } : again;
    }
    // In the namespace, now that it exists: the agents' grants and the lease.
    const lease = this.ctx.leaseInformer.getByName(managedClusterLeaseName, name);
    const [recreates] = await Promise.all([
      Promise.all(
        rbac.roleBindings.map((binding) => {
          const decision = this.decide(roleBindingResource.kind, clusterObjects.roleBindings, binding);
          note(decision);
          return decision === 'apply' ? this.applyRoleBinding(binding) : false;
        }),
      ),
      ensureClusterLease(this.leases, live, lease, this.ctx.leaseCreations),
    ]);
    const recreate = recreates.some(Boolean);
    await setClusterConditions(
      clusters,
      name,
      [
        {
          type: ManagedClusterCondition.HubAccepted,
          status: 'True',
          reason: ManagedClusterReason.HubClusterAdminAccepted,
          message: hubAcceptedMessage,
        },
      ],
      live,
    );
    if (!wasAccepted) {
      await this.ctx.events.record(
        clusterSubject(live),
        'ManagedClusterAccepted',
        `managed cluster ${name} is accepted by hub cluster admin`,
      );
    }
    if (recreate) return { requeueAfterMs: 200 };
    return lagging ? { requeueAfterMs: echoWaitMs } : undefined;
  }

  /**
   * The hub's first write to a cluster: its finalizer, and in the same patch the taint its
   * conditions call for (a new cluster has no Available yet: unreachable), which the taint
   * reconciler leaves to this write (taints.ts). One request instead of two racing ones.
   */
  private addFinalizer(cluster: ManagedCluster): Promise<ManagedCluster | undefined> {
    const name = cluster.metadata.name ?? '';
    return patchCluster(
      this.ctx.clusters,
      name,
      'object',
      (current) => {
        const finalizers = current.metadata.finalizers ?? [];
        // Never add a finalizer to an object on its way out: nobody would remove it.
        if (finalizers.includes(managedClusterFinalizer) || current.metadata.deletionTimestamp)
          return undefined;
        const taints = taintsOf(current);
        return {
          metadata: { finalizers: [...finalizers, managedClusterFinalizer] },
          ...(taints ? { spec: { taints: taints.length > 0 ? taints : null } } : {}),
        };
      },
      cluster,
    );
  }

  /** Whether `desired` must be written, against the cache and what the hub last wrote. */
  private decide<T extends KubeObject>(kind: string, cache: Informer<T>, desired: T): ApplyDecision {
    const { name = '', namespace } = desired.metadata ?? {};
    return this.ctx.applied.decide(appliedKey(kind, desired), desired, cache.getByName(name, namespace));
  }

  /** Apply `desired` unless the cache shows it as the hub last wrote it. */
  private async applyIfChanged<T extends KubeObject>(
    client: ResourceClient<T>,
    cache: Informer<T>,
    desired: T,
  ): Promise<ApplyDecision> {
    const kind = client.descriptor.kind;
    const decision = this.decide(kind, cache, desired);
    if (decision === 'apply') {
      this.ctx.applied.record(appliedKey(kind, desired), desired, await client.apply(desired, apply));
    }
    return decision;
  }

  /** The shared ClusterRoles, applied by the first reconcile (again after a failure). */
  private async ensureSharedClusterRoles(): Promise<void> {
    this.sharedRolesApplied ??= (async () => {
      for (const role of sharedClusterRoles()) await this.clusterRoles.apply(role, apply);
    })();
    try {
      await this.sharedRolesApplied;
    } catch (err) {
      this.sharedRolesApplied = undefined;
      throw err;
    }
  }

  /**
   * Apply one namespace RoleBinding; true when it must be applied again shortly: it was on its way
   * out (a deny before this accept), so its cleanup finalizer was released to let the deletion end.
   */
  private async applyRoleBinding(binding: RbacBinding): Promise<boolean> {
    const { name = '', namespace = '' } = binding.metadata ?? {};
    const key = appliedKey(roleBindingResource.kind, binding);
    try {
      const applied = await this.roleBindings.apply(binding, apply);
      if (!applied.metadata?.deletionTimestamp) {
        this.ctx.applied.record(key, binding, applied);
        return false;
      }
      await this.releaseWorkCleanup(namespace, applied);
      return true;
    } catch (err) {
      // roleRef is immutable: a binding from before the shared ClusterRoles (to a per-cluster Role
      // of the same name) is replaced, and that Role removed.
      if (toApiError(err)?.status !== 422) throw err;
      await this.roleBindings.delete(name, namespace, gone);
      await this.roles.delete(name, namespace, gone);
      this.ctx.applied.record(key, binding, await this.roleBindings.apply(binding, apply));
      return false;
    }
  }

  /**
   * Take away the namespace grants. The work binding stays in force (Terminating) while
   * ManifestWorks remain in the namespace; true while it does. Only bindings the cache shows, or
   * the hub wrote and the cache may not show yet, are deleted: a cluster that never had them (one
   * waiting for acceptance, reconciled at each change) costs no request.
   */
  async removeNamespaceGrants(name: string): Promise<boolean> {
    const { applied, clusterObjects } = this.ctx;
    let workMayExist = false;
    for (const grant of namespaceGrants) {
      const binding = { metadata: { name: namespaceRbacName(name, grant), namespace: name } };
      const key = appliedKey(roleBindingResource.kind, binding);
      const mayExist =
        clusterObjects.roleBindings.getByName(binding.metadata.name, name) || applied.remembers(key);
      if (!mayExist) continue;
      if (grant === 'work') workMayExist = true;
      applied.forget(key);
      await this.roleBindings.delete(binding.metadata.name, name, gone);
    }
    if (!workMayExist) return false;
    const work = await this.roleBindings.get(namespaceRbacName(name, 'work'), name);
    if (!work) return false;
    if ((await this.works.list({ namespace: name })).items.length > 0) return true;
    await this.releaseWorkCleanup(name, work);
    return false;
  }

  private async releaseWorkCleanup(namespace: string, binding: RbacBinding): Promise<void> {
    const finalizers = binding.metadata?.finalizers ?? [];
    if (!finalizers.includes(manifestWorkCleanupFinalizer)) return;
    try {
      await this.roleBindings.patchMerge(
        binding.metadata?.name ?? '',
        {
          metadata: {
            resourceVersion: binding.metadata?.resourceVersion,
            finalizers: finalizers.filter((f) => f !== manifestWorkCleanupFinalizer),
          },
        },
        namespace,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Remove everything accepting created: RBAC, then the cluster namespace (and the lease in it).
   * The caller has seen the namespace's ManifestWorks gone.
   */
  async removeClusterResources(name: string): Promise<void> {
    if (await this.removeNamespaceGrants(name)) {
      throw new Error(`ManifestWorks remain in namespace ${name}: its work RoleBinding stays`);
    }
    const named = { metadata: { name: clusterRbacName(name) } };
    this.ctx.applied.forget(appliedKey(clusterRoleBindingResource.kind, named));
    this.ctx.applied.forget(appliedKey(clusterRoleResource.kind, named));
    this.ctx.applied.forget(appliedKey(namespaceResource.kind, { metadata: { name } }));
    await this.clusterRoleBindings.delete(clusterRbacName(name), undefined, gone);
    await this.clusterRoles.delete(clusterRbacName(name), undefined, gone);
    // Only a namespace that is the cluster's (labelled when accepted); never one it merely shares a name with.
    const namespace = await this.namespaces.get(name);
    if (namespace?.metadata?.labels?.[clusterNameLabel] !== name) return;
    await this.namespaces.delete(name, undefined, {
      ...gone,
      preconditions: { uid: namespace.metadata.uid },
    });
  }
}

function clusterSubject(cluster: ManagedCluster) {
  return {
    apiVersion: `${managedClusterResource.group}/${managedClusterResource.version}`,
    kind: managedClusterResource.kind,
    name: cluster.metadata.name ?? '',
    uid: cluster.metadata.uid,
  };
}
