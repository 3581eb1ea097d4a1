// Public surface of src/registration/agent/addon (OCM: pkg/registration/spoke/addon): what runs on
// (or for) a managed cluster for addons. The
// registration agent starts startAddonRegistrationAgent next to its own loops (see
// src/registration/agent/index.ts): per-addon CSRs and the `<addon>-hub-kubeconfig` secrets, and
// the addons' Lease health (startAddonLeaseHealth). startAddonClusterHealth runs on the hub: an
// unreachable cluster's addons turn Available Unknown.

export { addonInstallNamespace } from '../../../api/addon-registration.ts';
export {
  type AddonClusterHealthOptions,
  clusterUnknownAvailability,
  startAddonClusterHealth,
} from '../../hub/addon/lease-health.ts';
export { addonCsrOutcome, createAddonCertificateRequest, createAddonCsr } from './csr.ts';
export {
  type AddonCredentialTarget,
  addonKubeconfigYaml,
  addonSecretData,
  registrationSecretLabel,
  storedAddonCredential,
} from './hub-kubeconfig.ts';
export {
  type AddonLeaseHealth,
  type AddonLeaseHealthOptions,
  AddonLeaseReason,
  leaseAvailability,
  startAddonLeaseHealth,
  usesLeaseHealth,
} from './lease-health.ts';
export {
  type AddonRegistrationAgent,
  type AddonRegistrationAgentOptions,
  startAddonRegistrationAgent,
} from './registration.ts';
