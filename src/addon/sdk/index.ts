// Public surface of the addon SDK: what an addon author imports. The contract (types.ts), the
// hub side that runs addons (AddonManager), and the agent side (agent.ts: its hub credential and
// its Lease heartbeat). Import from here, not from the files behind it.

// ---- other parts' exports (the integrator adds them here: the agent side of the SDK, …) ----
export { addOnDeploymentConfigKind } from '../hub/config/references.ts';
export { deletionOrphanAnnotation, sharedInstallNamespace } from '../hub/deploy/work.ts';
export {
  AddonLeaseUpdater,
  type AddonLeaseUpdaterOptions,
  defaultAddonLeaseDurationSeconds,
  defaultHubKubeconfigPath,
  hubKubeconfigMountPath,
  hubKubeconfigSecretName,
  hubKubeconfigVolume,
  loadAddonHubKubeconfig,
} from './agent.ts';
export {
  type AddonControllerContext,
  type AddonControllerFactory,
  AddonManager,
  type AddonManagerLeaderElection,
  type AddonManagerOptions,
  addonManagerLeaseName,
  addonManagerLeaseNamespace,
  clusterManagementAddOnOf,
} from './manager.ts';
export {
  type AddonHealthProber,
  type AddonProbeResult,
  type AddonRegistration,
  type AddonRenderContext,
  type AgentAddon,
  defaultAddonInstallNamespace,
  type ResolvedAddonConfig,
} from './types.ts';
