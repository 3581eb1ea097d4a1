// Public surface of src/placement/clusterprofile: the controller that keeps a SIG Multicluster
// ClusterProfile per ManagedCluster, and the pure rules of what a profile says. Import from here.
export {
  type ClusterProfileController,
  type ClusterProfileControllerOptions,
  startClusterProfileController,
} from './controller.ts';
export {
  defaultAccessProviderName,
  execExtensionName,
  type GatewayAccess,
  gatewayAccessProvider,
  newProfile,
  profileLabels,
  profileStatus,
} from './profile.ts';
