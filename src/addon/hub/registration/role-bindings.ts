// The RoleBindings an add-on's agent identity gets on the hub from `registration.hubRoleBindings`
// (an AddOnTemplate's hubPermissions): existing Roles / ClusterRoles bound to the add-on's
// per-cluster group, in the cluster's namespace or another one. Each is named after add-on,
// cluster and role, and labelled with add-on and cluster, so that the ones no longer asked for —
// and all of them once the ManagedClusterAddOn is gone — are found and removed (a binding outside
// the cluster namespace cannot be owned by the ManagedClusterAddOn and would otherwise stay).
import { addonNameLabel, type ManagedClusterAddOn } from '../../../api/addon.ts';
import { addonClusterGroup } from '../../../api/addon-registration.ts';
import { clusterNameLabel } from '../../../api/cluster.ts';
import type { ResourceClient } from '../../../kube/index.ts';
import type { RbacBinding } from '../../../registration/hub/resources.ts';
import type { AddonHubRoleBinding } from '../../sdk/types.ts';
import { addonOwnerReference } from '../addon-owner.ts';

const rbacGroup = 'rbac.authorization.k8s.io';
const managedByLabel = 'app.kubernetes.io/managed-by';
const managedBy = 'tether-addon-registration';

/** The binding's name: one per add-on, cluster and role (RBAC names may hold ':'). */
export function hubRoleBindingName(addon: string, cluster: string, b: AddonHubRoleBinding): string {
  return `open-cluster-management:${addon}:${cluster}:${b.roleRef.kind.toLowerCase()}:${b.roleRef.name}:agent`;
}

export function hubRoleBindingObject(
  addon: string,
  mca: ManagedClusterAddOn,
  b: AddonHubRoleBinding,
): RbacBinding {
  const cluster = mca.metadata.namespace ?? '';
  return {
    metadata: {
      name: hubRoleBindingName(addon, cluster, b),
      namespace: b.namespace,
      labels: { [addonNameLabel]: addon, [clusterNameLabel]: cluster, [managedByLabel]: managedBy },
      // in the cluster namespace it goes with the ManagedClusterAddOn; elsewhere it is removed here
      ...(b.namespace === cluster ? { ownerReferences: [addonOwnerReference(mca)] } : {}),
    },
    roleRef: { apiGroup: rbacGroup, kind: b.roleRef.kind, name: b.roleRef.name },
    subjects: [{ apiGroup: rbacGroup, kind: 'Group', name: addonClusterGroup(cluster, addon) }],
  };
}

const selectorOf = (addon: string, cluster: string) =>
  `${addonNameLabel}=${addon},${clusterNameLabel}=${cluster},${managedByLabel}=${managedBy}`;

/** Applies the wanted bindings and removes this add-on's other ones for the cluster. */
export async function syncHubRoleBindings(
  bindings: ResourceClient<RbacBinding>,
  addon: string,
  mca: ManagedClusterAddOn,
  wanted: readonly AddonHubRoleBinding[],
  fieldManager: string,
): Promise<void> {
  const cluster = mca.metadata.namespace ?? '';
  const keep = new Set<string>();
  for (const b of wanted) {
    await bindings.apply(hubRoleBindingObject(addon, mca, b), { fieldManager, force: true });
    keep.add(`${b.namespace}/${hubRoleBindingName(addon, cluster, b)}`);
  }
  const existing = await bindings.list({ labelSelector: selectorOf(addon, cluster) });
  for (const b of existing.items) {
    const { name = '', namespace = '' } = b.metadata ?? {};
    if (!keep.has(`${namespace}/${name}`)) await bindings.delete(name, namespace, { ignoreNotFound: true });
  }
}

/** Removes every binding of the add-on for the cluster (its ManagedClusterAddOn is gone). */
export async function removeHubRoleBindings(
  bindings: ResourceClient<RbacBinding>,
  addon: string,
  cluster: string,
): Promise<void> {
  const existing = await bindings.list({ labelSelector: selectorOf(addon, cluster) });
  for (const b of existing.items)
    await bindings.delete(b.metadata?.name ?? '', b.metadata?.namespace, { ignoreNotFound: true });
}
