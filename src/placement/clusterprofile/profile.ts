// What a ManagedCluster's ClusterProfile says, as pure functions, following OCM's ClusterProfile
// controller: labels x-k8s.io/cluster-manager=open-cluster-management, the cluster's set under
// multicluster.x-k8s.io/clusterset and its name under open-cluster-management.io/cluster-name;
// status.version.kubernetes from the cluster's; properties from its claims; ControlPlaneHealthy
// mirroring Available and Joined mirroring Joined. Beyond OCM (whose profiles carry no access
// provider unless cluster-proxy's addon adds one): one access provider whose cluster is the tether
// gateway URL of the cluster, with the hub's CA, and an exec extension naming the cluster, for
// consumers that run `tether credentials` as the provider's exec plugin.
import {
  type AccessProvider,
  type ClusterProfile,
  ClusterProfileCondition,
  type ClusterProfileStatus,
  clusterManagerLabel,
  clusterNameLabel,
  clusterProfileClusterSetLabel,
  clusterSetLabel,
  type ManagedCluster,
  ManagedClusterCondition,
  ocmClusterManagerName,
} from '../../api/index.ts';
import { gatewayServerUrl } from '../../gateway/index.ts';
import { setCondition } from '../../kube/index.ts';

/** The kubeconfig extension client-go hands an exec plugin as ExecCredential spec.cluster.config. */
export const execExtensionName = 'client.authentication.k8s.io/exec';
/** Default name of the access provider (consumers map it to `tether credentials`). */
export const defaultAccessProviderName = 'tether';

export interface GatewayAccess {
  /** the hub apiserver URL as consumers reach it */
  server: string;
  /** PEM of the CA of the hub apiserver's serving certificate */
  caPem: string;
  tlsServerName?: string;
  /** access provider name (default `tether`) */
  providerName?: string;
}

/** Labels every ClusterProfile of `cluster` carries. */
export function profileLabels(cluster: ManagedCluster): Record<string, string> {
  return {
    [clusterManagerLabel]: ocmClusterManagerName,
    [clusterProfileClusterSetLabel]: cluster.metadata.labels?.[clusterSetLabel] ?? '',
    [clusterNameLabel]: cluster.metadata.name ?? '',
  };
}

/** The access provider pointing at the cluster's gateway URL. */
export function gatewayAccessProvider(clusterName: string, access: GatewayAccess): AccessProvider {
  return {
    name: access.providerName ?? defaultAccessProviderName,
    cluster: {
      server: gatewayServerUrl(access.server, clusterName),
      'certificate-authority-data': Buffer.from(access.caPem, 'utf8').toString('base64'),
      ...(access.tlsServerName ? { 'tls-server-name': access.tlsServerName } : {}),
      extensions: [{ name: execExtensionName, extension: { clusterName } }],
    },
  };
}

/** The profile's status for `cluster`, keeping transition times of unchanged conditions. */
export function profileStatus(
  cluster: ManagedCluster,
  current: ClusterProfileStatus | undefined,
  access: GatewayAccess | undefined,
  now: Date = new Date(),
): ClusterProfileStatus {
  let conditions = current?.conditions ?? [];
  const mirror = (from: string, to: string) => {
    const c = cluster.status?.conditions?.find((x) => x.type === from);
    if (!c) return;
    conditions = setCondition(
      conditions,
      { type: to, status: c.status, reason: c.reason || from, message: c.message ?? '' },
      undefined,
      now,
    );
  };
  mirror(ManagedClusterCondition.Available, ClusterProfileCondition.ControlPlaneHealthy);
  mirror(ManagedClusterCondition.Joined, ClusterProfileCondition.Joined);
  const status: ClusterProfileStatus = {
    conditions,
    version: { kubernetes: cluster.status?.version?.kubernetes ?? '' },
    properties: (cluster.status?.clusterClaims ?? [])
      .filter((c) => c.name && c.value)
      .map((c) => ({ name: c.name, value: c.value })),
  };
  if (access) {
    const provider = gatewayAccessProvider(cluster.metadata.name ?? '', access);
    status.accessProviders = [provider];
    status.credentialProviders = [structuredClone(provider)];
  }
  return status;
}

/** A new ClusterProfile for `cluster` (status is written separately, through the subresource). */
export function newProfile(cluster: ManagedCluster, namespace: string): Omit<ClusterProfile, 'status'> {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: cluster.metadata.name, namespace, labels: profileLabels(cluster) },
    spec: { displayName: cluster.metadata.name, clusterManager: { name: ocmClusterManagerName } },
  };
}
