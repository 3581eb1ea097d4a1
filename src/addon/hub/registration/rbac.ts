// What an addon's registration controller (registration.ts, registration/csr-approval.ts) may do on the hub:
// pure data for the ClusterRole src/install renders for `tether hub`. Each rule is a call the
// controller makes: it reads the ManagedClusterAddOns and their clusters, writes
// status.registrations and RegistrationApplied, applies the agent's Role and RoleBinding in the
// cluster namespace (owned by the ManagedClusterAddOn, so blockOwnerDeletion needs its finalizers),
// approves the agents' CSRs and, for an addon with a custom signer, signs them.

/** One RBAC PolicyRule. */
export interface AddonRegistrationHubRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/**
 * The registration controller's rules. `customSigners`: the signer names of addons that sign their
 * agents' certificates themselves (none for kube-apiserver-client registrations).
 */
export function addonRegistrationHubRules(customSigners: string[] = []): AddonRegistrationHubRule[] {
  const addon = 'addon.open-cluster-management.io';
  const certificates = 'certificates.k8s.io';
  const read = ['get', 'list', 'watch'];
  return [
    { apiGroups: [addon], resources: ['managedclusteraddons'], verbs: read },
    // status.registrations and RegistrationApplied (read, change, update with resourceVersion)
    { apiGroups: [addon], resources: ['managedclusteraddons/status'], verbs: ['get', 'update'] },
    // the Role and RoleBinding are owned by the ManagedClusterAddOn with blockOwnerDeletion
    { apiGroups: [addon], resources: ['managedclusteraddons/finalizers'], verbs: ['update'] },
    // hubAcceptsClient before approving
    { apiGroups: ['cluster.open-cluster-management.io'], resources: ['managedclusters'], verbs: ['get'] },
    // the agent's hub rights in its cluster namespace: server-side apply, removal on withdrawal;
    // escalate/bind because the Role grants what the controller itself need not hold
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['roles', 'rolebindings'],
      verbs: ['get', 'create', 'patch', 'delete'],
    },
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], verbs: ['escalate', 'bind'] },
    { apiGroups: [certificates], resources: ['certificatesigningrequests'], verbs: read },
    { apiGroups: [certificates], resources: ['certificatesigningrequests/approval'], verbs: ['update'] },
    {
      apiGroups: [certificates],
      resources: ['signers'],
      verbs: ['approve'],
      resourceNames: ['kubernetes.io/kube-apiserver-client', ...customSigners],
    },
    ...(customSigners.length > 0
      ? [
          {
            apiGroups: [certificates],
            resources: ['signers'],
            verbs: ['sign'],
            resourceNames: customSigners,
          },
          { apiGroups: [certificates], resources: ['certificatesigningrequests/status'], verbs: ['update'] },
        ]
      : []),
  ];
}
