// The owner reference that ties an object's life to a ManagedClusterAddOn: its deploy works
// (controller), the agent's hub Role and RoleBinding, a builtin's hub objects. Deleting the addon
// lets the garbage collector remove them; blockOwnerDeletion keeps a foreground deletion of the
// addon waiting for them (the writer needs managedclusteraddons/finalizers update for that). Pure.
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../api/addon.ts';
import { apiVersionOf, type OwnerReference } from '../../kube/types.ts';

/** Owned by `mca`; `controller` for objects only this addon's controller manages (its works). */
export function addonOwnerReference(
  mca: ManagedClusterAddOn,
  opts: { controller?: boolean } = {},
): OwnerReference {
  return {
    apiVersion: apiVersionOf(managedClusterAddOnResource),
    kind: managedClusterAddOnResource.kind,
    name: mca.metadata.name ?? '',
    uid: mca.metadata.uid ?? '',
    ...(opts.controller ? { controller: true } : {}),
    blockOwnerDeletion: true,
  };
}
