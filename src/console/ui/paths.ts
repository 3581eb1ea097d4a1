// API collection paths of the kinds the console shows (group, version and plural exactly as OCM
// serves them), all-namespaces or in one namespace.

function collection(group: string, version: string, plural: string, namespace?: string): string {
  const base = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  return namespace === undefined
    ? `${base}/${plural}`
    : `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
}

export const managedClustersPath = collection('cluster.open-cluster-management.io', 'v1', 'managedclusters');

export const managedClusterAddOnsPath = (namespace?: string): string =>
  collection('addon.open-cluster-management.io', 'v1alpha1', 'managedclusteraddons', namespace);

export const manifestWorksPath = (namespace: string): string =>
  collection('work.open-cluster-management.io', 'v1', 'manifestworks', namespace);

export const managedServiceAccountsPath = (namespace: string): string =>
  collection('authentication.open-cluster-management.io', 'v1beta1', 'managedserviceaccounts', namespace);

export const placementsPath = collection('cluster.open-cluster-management.io', 'v1beta1', 'placements');

export const placementDecisionsPath = collection(
  'cluster.open-cluster-management.io',
  'v1beta1',
  'placementdecisions',
);

export const addOnPlacementScoresPath = collection(
  'cluster.open-cluster-management.io',
  'v1alpha1',
  'addonplacementscores',
);

export const manifestWorkReplicaSetsPath = collection(
  'work.open-cluster-management.io',
  'v1alpha1',
  'manifestworkreplicasets',
);

export const eventsPath = collection('', 'v1', 'events');

/** The gateway's tunnel subresource of one cluster (watch: a line per interval). */
export const clusterTunnelPath = (cluster: string): string =>
  `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${encodeURIComponent(cluster)}/tunnel`;
