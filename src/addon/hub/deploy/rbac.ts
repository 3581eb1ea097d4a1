// What an AddonManager (src/addon/sdk/manager.ts) needs on the hub for its own part: the
// ClusterManagementAddOns it ensures, the deploy controller's reads and writes, and its leader
// Leases. Pure data for the ClusterRole src/install renders; the registration controller's rules
// are its own. Config kinds other than AddOnDeploymentConfig that an addon lists in
// supportedConfigs need `get` on their resource as well (discovery is open to every identity).
import type { AddonHubRule } from '../install-strategy/rbac.ts';

/** The AddonManager's rules without the registration controller's. */
export function addonDeployHubRules(): AddonHubRule[] {
  const addon = 'addon.open-cluster-management.io';
  const read = ['get', 'list', 'watch'];
  return [
    // ensured at start: created when missing, else only what it lacks is patched in
    { apiGroups: [addon], resources: ['clustermanagementaddons'], verbs: [...read, 'create', 'patch'] },
    // the work-cleanup finalizer
    { apiGroups: [addon], resources: ['managedclusteraddons'], verbs: [...read, 'patch'] },
    // ManifestApplied, Progressing, Available, namespace, lastAppliedConfig, …
    { apiGroups: [addon], resources: ['managedclusteraddons/status'], verbs: ['get', 'update'] },
    // the works' controller ownerReference (blockOwnerDeletion) to their ManagedClusterAddOn
    { apiGroups: [addon], resources: ['managedclusteraddons/finalizers'], verbs: ['update'] },
    { apiGroups: [addon], resources: ['addondeploymentconfigs'], verbs: read },
    { apiGroups: ['cluster.open-cluster-management.io'], resources: ['managedclusters'], verbs: read },
    {
      apiGroups: ['work.open-cluster-management.io'],
      resources: ['manifestworks'],
      verbs: [...read, 'create', 'update', 'delete'],
    },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: [...read, 'create', 'update', 'patch'],
    },
  ];
}
