// The registrations the hub publishes for one addon on one cluster: the addon's
// `registration.configs` (default: OCM's default kube-apiserver-client registration), less those
// the hub may not hand out (src/api/addon-registration.ts). The CSR approver judges requests against
// this list, computed on the hub, never against status.registrations, which the cluster's own
// identity may write.
import type { ManagedClusterAddOn, RegistrationConfig } from '../../../api/addon.ts';
import { defaultAddonRegistration, registrationProblem } from '../../../api/addon-registration.ts';
import type { ManagedCluster } from '../../../api/cluster.ts';
import type { AgentAddon } from '../../sdk/types.ts';

/** The registrations to publish for `mca`, and the problems of those left out. */
export function desiredRegistrations(
  addon: AgentAddon,
  cluster: ManagedCluster,
  mca: ManagedClusterAddOn,
): { registrations: RegistrationConfig[]; problems: string[] } {
  const clusterName = mca.metadata.namespace ?? '';
  const configs = addon.registration?.configs?.(cluster, mca) ?? [
    defaultAddonRegistration(clusterName, addon.name),
  ];
  const registrations: RegistrationConfig[] = [];
  const problems: string[] = [];
  for (const config of configs) {
    const problem = registrationProblem(config, clusterName, addon.name);
    if (problem) problems.push(`registration for signer ${config.signerName} refused: ${problem}`);
    else registrations.push(config);
  }
  return { registrations, problems };
}
