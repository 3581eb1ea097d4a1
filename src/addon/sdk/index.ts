// Public surface of the addon SDK: what an addon author imports. The contract (types.ts) and the
// hub side that runs addons (AddonManager). Import from here, not from the files behind it.
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

// ---- other parts' exports (the integrator adds them here: the agent side of the SDK, …) ----
