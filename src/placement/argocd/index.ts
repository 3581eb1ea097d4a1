// Public surface of src/placement/argocd: the GitOpsCluster controller that registers a
// Placement's clusters with Argo CD through the tether gateway, and the pure builders of what it
// writes. Import from here.
export {
  type ArgoCdClusterConfig,
  argoCdClusterSecret,
  argoCdClusterSecretName,
  argoCdHubUser,
  argoCdManagedRbacWork,
  argoCdServiceAccountName,
  argoCdTokenSecretName,
  argoCdWorkName,
  gatewayAccessRbac,
  gatewayAccessRoleName,
  gitOpsClusterOwner,
  type HubEndpoint,
} from './cluster-secret.ts';
export {
  type ArgoCdClusterController,
  type ArgoCdClusterControllerOptions,
  gitOpsClusterFieldManager,
  hubEndpointFromKubeConfig,
  startArgoCdClusterController,
} from './controller.ts';
