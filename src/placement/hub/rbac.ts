// What the placement hub's identity may do on the hub (pure data, for the hub controllers'
// ClusterRole that src/install renders): each rule is there because a placement controller makes
// that call (see index.ts's header for which). The GitOpsCluster controller is off by default and
// not covered here: it writes and reads Secrets, which no hub component's role may.

/** One RBAC PolicyRule. */
export interface PlacementHubRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/**
 * What the placement hub's identity needs beyond the registration hub's (for the hub controllers'
 * ClusterRole in src/install): the cluster-set, placement and ManifestWorkReplicaSet kinds, and
 * joining clusters to `default` (the join policy checks the hub's own label writes too).
 */
export function placementHubRules(): PlacementHubRule[] {
  const cluster = 'cluster.open-cluster-management.io';
  const work = 'work.open-cluster-management.io';
  const read = ['get', 'list', 'watch'];
  const write = [...read, 'create', 'update', 'patch', 'delete'];
  const status = ['get', 'update', 'patch'];
  return [
    { apiGroups: [cluster], resources: ['managedclusters'], verbs: [...read, 'patch'] },
    {
      apiGroups: [cluster],
      resources: ['managedclustersets'],
      verbs: [...read, 'create', 'update', 'patch'],
    },
    {
      apiGroups: [cluster],
      resources: ['managedclustersets/status', 'managedclustersetbindings/status'],
      verbs: status,
    },
    {
      apiGroups: [cluster],
      resources: ['managedclustersets/join'],
      verbs: ['create'],
      resourceNames: ['default'],
    },
    { apiGroups: [cluster], resources: ['managedclustersetbindings', 'addonplacementscores'], verbs: read },
    { apiGroups: [cluster], resources: ['placements'], verbs: [...read, 'update', 'patch'] },
    { apiGroups: [cluster], resources: ['placements/status', 'placementdecisions/status'], verbs: status },
    { apiGroups: [cluster], resources: ['placements/finalizers'], verbs: ['update'] },
    { apiGroups: [cluster], resources: ['placementdecisions'], verbs: write },
    { apiGroups: [work], resources: ['manifestworkreplicasets'], verbs: [...read, 'update', 'patch'] },
    { apiGroups: [work], resources: ['manifestworkreplicasets/status'], verbs: status },
    { apiGroups: [work], resources: ['manifestworkreplicasets/finalizers'], verbs: ['update'] },
    { apiGroups: [work], resources: ['manifestworks'], verbs: write },
    // the ClusterProfile controller (src/placement/clusterprofile): one profile per cluster
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: write },
    { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles/status'], verbs: status },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: write },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  ];
}
