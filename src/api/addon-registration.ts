// Who an addon agent is on the hub: OCM's names for an addon identity (user, groups), the default
// registration an addon gets, the names of the hub objects that carry it (secret, Role, CSR), and
// which registrations the hub is willing to hand out at all. Pure functions; both ends use them:
// the hub (registration.ts, registration/csr-policy.ts) to write status.registrations and to judge CSRs, the
// managed registration agent (src/registration/agent/addon) to build the CSR subject and the secret.
//
// The trust boundary these names carry: a kube-apiserver-client registration is only ever the
// identity of one addon on one cluster (CN under system:open-cluster-management:cluster:<c>:addon:<a>:,
// groups among that addon's per-cluster group, the addon's fleet group and system:authenticated).
// Anything else (system:masters, a cluster's own groups, another addon's) is refused here, so no
// addon code can make the hub sign a hub credential that acts as a cluster or as another addon.
import {
  addonHubKubeconfigSecretName,
  kubeApiserverClientSignerName,
  type ManagedClusterAddOn,
  type RegistrationConfig,
} from './addon.ts';
import { addonAgentNamespace as defaultAddonInstallNamespace } from './cluster.ts';

/** The agent name the hub puts in the default registration's user (OCM's managed-serviceaccount uses it too). */
export const defaultAddonAgentName = 'addon-agent';

/** Group every authenticated request carries; OCM lists it among an addon's default groups. */
export const authenticatedGroup = 'system:authenticated';

/** Prefix of every user of `addon` on `cluster`: the agent name follows. */
export function addonUserPrefix(cluster: string, addon: string): string {
  return `system:open-cluster-management:cluster:${cluster}:addon:${addon}:agent:`;
}

/** OCM's default user of an addon agent (AF DefaultUser). */
export function addonAgentUser(cluster: string, addon: string, agent: string): string {
  return `${addonUserPrefix(cluster, addon)}${agent}`;
}

/** The group only `addon`'s identities on `cluster` carry: what its hub Role is bound to. */
export function addonClusterGroup(cluster: string, addon: string): string {
  return `system:open-cluster-management:cluster:${cluster}:addon:${addon}`;
}

/** The group `addon`'s identities on every cluster carry. */
export function addonFleetGroup(addon: string): string {
  return `system:open-cluster-management:addon:${addon}`;
}

/** OCM's default groups, in its order (AF DefaultGroups). */
export function addonDefaultGroups(cluster: string, addon: string): string[] {
  return [addonClusterGroup(cluster, addon), addonFleetGroup(addon), authenticatedGroup];
}

/** The registration an addon gets when it asks for a hub identity without saying which. */
export function defaultAddonRegistration(cluster: string, addon: string): RegistrationConfig {
  return {
    signerName: kubeApiserverClientSignerName,
    subject: {
      user: addonAgentUser(cluster, addon, defaultAddonAgentName),
      groups: addonDefaultGroups(cluster, addon),
    },
  };
}

/** The certificate subject a registration asks for, with OCM's agent-side defaults filled in. */
export interface AddonCertificateSubject {
  commonName: string;
  organizations: string[];
  organizationalUnits: string[];
}

/**
 * The subject the managed registration agent puts in the CSR (OCM's x509Subject): an empty user
 * becomes the default user with `agentName`; empty groups become the per-cluster group only, and
 * only for kube-apiserver-client.
 */
export function registrationSubject(
  registration: RegistrationConfig,
  cluster: string,
  addon: string,
  agentName: string,
): AddonCertificateSubject {
  const subject = registration.subject ?? {};
  const groups = subject.groups ?? [];
  return {
    commonName: subject.user || addonAgentUser(cluster, addon, agentName),
    organizations:
      groups.length > 0
        ? [...groups]
        : registration.signerName === kubeApiserverClientSignerName
          ? [addonClusterGroup(cluster, addon)]
          : [],
    organizationalUnits: [...(subject.organizationUnit ?? [])],
  };
}

/** Name of the secret holding a registration's credential in the install namespace (OCM's). */
export function registrationSecretName(addon: string, signerName: string): string {
  return signerName === kubeApiserverClientSignerName
    ? addonHubKubeconfigSecretName(addon)
    : `${addon}-${signerName.replaceAll('/', '-')}-client-cert`;
}

/** generateName of an addon CSR (OCM's). */
export function addonCsrGenerateName(cluster: string, addon: string): string {
  return `addon-${cluster}-${addon}-`;
}

/** The DNS name OCM's agent puts in every addon CSR. */
export function addonCsrDnsName(addon: string): string {
  return `${addon}.addon.open-cluster-management.io`;
}

/**
 * Where the add-on's agent runs on its cluster (its lease and hub credential live there):
 * status.namespace, else spec.installNamespace, else OCM's default.
 */
export function addonInstallNamespace(mca: ManagedClusterAddOn): string {
  return mca.status?.namespace || mca.spec?.installNamespace || defaultAddonInstallNamespace;
}

/** An agent name as it may appear after `…:agent:` (no colon: it would let one name pass for another). */
export function isValidAddonAgentName(agent: string): boolean {
  return agent.length > 0 && agent.length <= 253 && !agent.includes(':');
}

/**
 * Why the hub refuses to hand out `registration` for `addon` on `cluster`, or undefined when it may.
 * A kube-apiserver-client certificate is a hub credential, so its subject must be that addon's on
 * that cluster: the user under addonUserPrefix, groups only from addonDefaultGroups (and the
 * per-cluster group among them, so the hub Role applies). A custom signer's certificate is not a
 * hub credential; its subject is the addon's business (its signer decides what it means), but it
 * may not name a hub group either.
 */
export function registrationProblem(
  registration: RegistrationConfig,
  cluster: string,
  addon: string,
): string | undefined {
  if (!registration.signerName) return 'it names no signer';
  const user = registration.subject?.user ?? '';
  const groups = registration.subject?.groups ?? [];
  if (registration.signerName !== kubeApiserverClientSignerName) {
    const hubGroup = groups.find((g) => g.startsWith('system:'));
    return hubGroup ? `group "${hubGroup}" is reserved for hub identities` : undefined;
  }
  const prefix = addonUserPrefix(cluster, addon);
  if (user && !(user.startsWith(prefix) && isValidAddonAgentName(user.slice(prefix.length)))) {
    return `user "${user}" is not ${prefix}<agent>: a hub credential of an addon names its cluster and addon`;
  }
  const allowed = addonDefaultGroups(cluster, addon);
  const foreign = groups.find((g) => !allowed.includes(g));
  if (foreign) return `group "${foreign}" is not one of ${allowed.join(', ')}`;
  if (groups.length > 0 && !groups.includes(addonClusterGroup(cluster, addon))) {
    return `groups must include ${addonClusterGroup(cluster, addon)}`;
  }
  return undefined;
}
