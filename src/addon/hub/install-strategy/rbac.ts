// What the hub's generic add-on manager (install-strategy/controller.ts) may do on the hub: pure
// data for the hub controllers' ClusterRole that src/install renders. Each rule is a call the
// manager makes; config kinds other than AddOnDeploymentConfig that add-ons list in
// supportedConfigs need get/list/watch on their resource as well (discovery is open to every
// identity).

/** One RBAC PolicyRule. */
export interface AddonHubRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The add-on manager's rules (leases for its leader election included). */
export function addonInstallHubRules(): AddonHubRule[] {
  const addon = 'addon.open-cluster-management.io';
  const cluster = 'cluster.open-cluster-management.io';
  const read = ['get', 'list', 'watch'];
  return [
    // lifecycle annotation on the ClusterManagementAddOn; its status
    { apiGroups: [addon], resources: ['clustermanagementaddons'], verbs: [...read, 'patch'] },
    { apiGroups: [addon], resources: ['clustermanagementaddons/status'], verbs: ['get', 'update'] },
    // the controller ownerReference (blockOwnerDeletion) on the add-ons it creates
    { apiGroups: [addon], resources: ['clustermanagementaddons/finalizers'], verbs: ['update'] },
    // create / delete by placement decisions, adopt (ownerReferences), configReferences + Configured
    {
      apiGroups: [addon],
      resources: ['managedclusteraddons'],
      verbs: [...read, 'create', 'delete', 'patch'],
    },
    { apiGroups: [addon], resources: ['managedclusteraddons/status'], verbs: ['get', 'update'] },
    { apiGroups: [addon], resources: ['addondeploymentconfigs'], verbs: read },
    { apiGroups: [cluster], resources: ['placements', 'placementdecisions'], verbs: read },
    // add-ons of a cluster whose Available is Unknown turn Unknown too (registration/hub/addon/lease-health.ts)
    { apiGroups: [cluster], resources: ['managedclusters'], verbs: read },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: [...read, 'create', 'update', 'patch'],
    },
  ];
}
