// Public surface of src/gateway: the ClusterGateway aggregated API (cluster.core.oam.dev/v1alpha1)
// that forwards Kubernetes API requests from the hub into managed clusters, its APIService
// registration, dialers, and kubeconfigs that point at it. Import from here.
export {
  type ApiServiceRegistration,
  issueGatewayServingCertificate,
  registerGatewayApiService,
  unregisterGatewayApiService,
} from './apiservice.ts';
export { consolePath } from './console.ts';
export { type ConnectFrontendDialerOptions, connectAuthority, connectFrontendDialer } from './dialers.ts';
export {
  type GatewayIdentityMode,
  gatewayIdentityModes,
  hubAdminsGroup,
  hubIdentityPrefix,
  managedClusterGroup,
  managedClusterUser,
} from './identity.ts';
export { gatewayKubeconfig, gatewayServerUrl, kubeConfigForCluster } from './kubeconfig.ts';
export {
  type LocalGateway,
  type LocalGatewayOptions,
  startLocalGateway,
  startLocalGatewayForTunnel,
} from './local.ts';
export type { GatewayMetrics } from './metrics.ts';
export {
  consoleViewerRbac,
  consoleViewerRoleName,
  gatewayHubRbac,
  gatewayHubRules,
  gatewayManagedClusterRbac,
  gatewayManagedClusterRules,
  hubUserManagedClusterRbac,
} from './rbac.ts';
export { type Gateway, type GatewayOptions, startGateway } from './server.ts';
export type { Upstream } from './store.ts';
export {
  connectFrontendTunnelStatus,
  inProcessTunnelStatus,
  sharedTunnelWatches,
  type TunnelStatus,
  TunnelStatusError,
  type TunnelStatusSource,
} from './tunnel-source.ts';
export {
  type ClusterGateway,
  type ClusterGatewaySpec,
  type ClusterGatewayStatus,
  CredentialSecretKey,
  clusterGatewayResource,
  credentialTypeLabel,
  defaultCredentialNamespace,
  defaultGatewayMsaName,
  endpointTypeLabel,
  gatewayApiServiceName,
  gatewayGroup,
  gatewayGroupVersion,
  gatewayVersion,
  HealthyReason,
  impersonateAnnotation,
} from './types.ts';
export type { ClusterDialer } from './upstream.ts';
export {
  hasBearerToken,
  startUserServer,
  type UserServer,
  type UserServerOptions,
  userServerPort,
  userServerRoute,
  userServerServiceName,
} from './user-server.ts';
