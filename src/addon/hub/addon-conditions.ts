// The ManagedClusterAddOn conditions the addon manager's deploy controller sets, with OCM's types,
// reasons and messages (open-cluster-management.io/api addon/v1alpha1, addon-framework agentdeploy
// and healthcheck, OCM addonprogressing). Other writers own the rest: RegistrationApplied (addon
// registration), Configured (install strategy), Available in Lease mode (the managed registration
// agent). Names only; no I/O.

export const AddonConditionType = {
  ManifestApplied: 'ManifestApplied',
  Progressing: 'Progressing',
  Available: 'Available',
  /** OCM's: whether the add-on can run on the hosting cluster its annotation names */
  HostingClusterValidity: 'HostingClusterValidity',
  /** OCM's: whether the hosting works (the agent's part on the hosting cluster) are applied */
  HostingManifestApplied: 'HostingManifestApplied',
} as const;

export { hostingClusterNameAnnotation } from '../../api/addon.ts';

export const HostingClusterValidityReason = {
  /** the hosting cluster is a managed cluster of the hub */
  Valid: 'HostingClusterValid',
  /** it is not (OCM's reason): nothing goes to it */
  Invalid: 'HostingClusterInvalid',
  /** tether's: the add-on has no hosted deployment; nothing is deployed until the annotation goes */
  HostedModeUnsupported: 'HostedModeUnsupported',
} as const;

/**
 * OCM's annotation (the label of the same key is its deprecated form) on an add-on's manifest: where
 * it goes in hosted mode. `managed` (the default) the managed cluster, `hosting` the hosting
 * cluster, `none` nowhere. In default mode every manifest goes to the managed cluster.
 */
export const hostedManifestLocationKey = 'addon.open-cluster-management.io/hosted-manifest-location';

export const HostedManifestLocation = {
  Managed: 'managed',
  Hosting: 'hosting',
  None: 'none',
} as const;
export type HostedManifestLocation = (typeof HostedManifestLocation)[keyof typeof HostedManifestLocation];

export const ManifestAppliedReason = {
  /** the deploy works are applied (or there is nothing to apply) */
  Applied: 'AddonManifestApplied',
  /** a deploy work reports Applied other than True */
  ApplyFailed: 'AddonManifestAppliedFailed',
  /** rendering the manifests or writing the work failed */
  WorkApplyFailed: 'ManifestWorkApplyFailed',
} as const;

export const ManifestAppliedMessage = {
  applied: 'manifests of addon are applied successfully',
  applyFailed: 'failed to apply the manifests of addon',
} as const;

export const ProgressingReason = {
  Installing: 'Installing',
  InstallSucceed: 'InstallSucceed',
  InstallFailed: 'InstallFailed',
  Upgrading: 'Upgrading',
  UpgradeSucceed: 'UpgradeSucceed',
  UpgradeFailed: 'UpgradeFailed',
  ConfigurationUnsupported: 'ConfigurationUnsupported',
  WaitingForManifestApplied: 'WaitingForManifestApplied',
} as const;

export const AvailableReason = {
  WorkNotFound: 'WorkNotFound',
  WorkApplyFailed: 'WorkApplyFailed',
  WorkNotApplied: 'WorkNotApplied',
  WorkApplied: 'WorkApplied',
  NoProbeResult: 'NoProbeResult',
  ProbeUnavailable: 'ProbeUnavailable',
  ProbeAvailable: 'ProbeAvailable',
} as const;
