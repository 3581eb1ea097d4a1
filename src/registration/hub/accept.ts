// ManagedClusterAcceptReconciler: what `spec.hubAcceptsClient` grants. Every cluster the hub sees
// gets the api-resource-cleanup finalizer and a ClusterRole/Binding reading its own ManagedCluster.
// Accepted: the cluster namespace, the full ClusterRole, one Role + RoleBinding per agent concern in
// the namespace, the managed-cluster-lease, and HubAcceptedManagedCluster True. Denied after being
// accepted: the namespace grants go, the ClusterRole shrinks back, HubAcceptedManagedCluster False
// (a cluster never accepted gets no condition, as in OCM). Deletion is not handled here
// (deletion.ts), but removeClusterResources is: it owns the objects it knows how to name.
import {
  clusterNameLabel,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterReason,
  managedClusterFinalizer,
  managedClusterLeaseName,
} from '../../api/index.ts';
import { isConditionTrue, type KubeObject, type Lease, ResourceClient } from '../../kube/index.ts';
import { type HubContext, setClusterConditions, setClusterFinalizer } from './context.ts';
import { ensureClusterLease } from './lease.ts';
import { clusterRbac } from './rbac.ts';
import {
  clusterRbacName,
  clusterRoleBindingResource,
  clusterRoleResource,
  hubAcceptedMessage,
  hubDeniedMessage,
  hubFieldManager,
  namespaceGrants,
  namespaceRbacName,
  namespaceResource,
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
  roleResource,
} from './resources.ts';

const apply = { fieldManager: hubFieldManager, force: true };
const gone = { ignoreNotFound: true };

export class ManagedClusterAcceptReconciler {
  private readonly ctx: HubContext;
  private readonly leases: ResourceClient<Lease>;
  private readonly namespaces: ResourceClient;
  private readonly clusterRoles: ResourceClient<RbacRole>;
  private readonly clusterRoleBindings: ResourceClient<RbacBinding>;
  private readonly roles: ResourceClient<RbacRole>;
  private readonly roleBindings: ResourceClient<RbacBinding>;

  constructor(ctx: HubContext, leases: ResourceClient<Lease>) {
    this.ctx = ctx;
    this.leases = leases;
    const kc = ctx.kubeconfig;
    this.namespaces = new ResourceClient<KubeObject>(kc, namespaceResource);
    this.clusterRoles = new ResourceClient<RbacRole>(kc, clusterRoleResource);
    this.clusterRoleBindings = new ResourceClient<RbacBinding>(kc, clusterRoleBindingResource);
    this.roles = new ResourceClient<RbacRole>(kc, roleResource);
    this.roleBindings = new ResourceClient<RbacBinding>(kc, roleBindingResource);
  }

  /** Bring a cluster that is not being deleted in line with spec.hubAcceptsClient. */
  async reconcile(cluster: ManagedCluster): Promise<void> {
    const name = cluster.metadata.name ?? '';
    const { clusters } = this.ctx;
    const live = cluster.metadata.finalizers?.includes(managedClusterFinalizer)
      ? cluster
      : await setClusterFinalizer(clusters, name, managedClusterFinalizer, true);
    if (!live || live.metadata.deletionTimestamp) return;
    const accepted = live.spec?.hubAcceptsClient === true;
    const rbac = clusterRbac(name, accepted);
    // Bindings after the roles they name, so a binding never points at a missing or stale role.
    await this.clusterRoles.apply(rbac.clusterRole, apply);
    await this.clusterRoleBindings.apply(rbac.clusterRoleBinding, apply);
    if (!accepted) {
      await this.removeNamespaceGrants(name);
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
      return;
    }
    await this.namespaces.apply({ metadata: { name, labels: { [clusterNameLabel]: name } } }, apply);
    for (const role of rbac.roles) await this.roles.apply(role, apply);
    for (const binding of rbac.roleBindings) await this.roleBindings.apply(binding, apply);
    const lease = this.ctx.leaseInformer.getByName(managedClusterLeaseName, name);
    await ensureClusterLease(this.leases, live, lease);
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
  }

  /** Take away the namespace grants (bindings first: a role without binding grants nothing). */
  async removeNamespaceGrants(name: string): Promise<void> {
    for (const grant of namespaceGrants) {
      await this.roleBindings.delete(namespaceRbacName(name, grant), name, gone);
    }
    for (const grant of namespaceGrants) await this.roles.delete(namespaceRbacName(name, grant), name, gone);
  }

  /** Remove everything accepting created: RBAC, then the cluster namespace (and the lease in it). */
  async removeClusterResources(name: string): Promise<void> {
    await this.clusterRoleBindings.delete(clusterRbacName(name), undefined, gone);
    await this.clusterRoles.delete(clusterRbacName(name), undefined, gone);
    await this.removeNamespaceGrants(name);
    // Only a namespace that is the cluster's (labelled when accepted); never one it merely shares a name with.
    const namespace = await this.namespaces.get(name);
    if (namespace?.metadata?.labels?.[clusterNameLabel] !== name) return;
    await this.namespaces.delete(name, undefined, {
      ...gone,
      preconditions: { uid: namespace.metadata.uid },
    });
  }
}
