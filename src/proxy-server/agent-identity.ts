// Which certificates may hold a tunnel, and for which cluster. Two identities qualify, both read
// from the *verified* client certificate only (nothing the agent says on the wire counts):
//   - a cluster's registration identity (tunnel/identity.ts): CN system:open-cluster-management:<c>:<agent>,
//     O ∋ system:open-cluster-management:<c> — the agent `tether agent` runs;
//   - the cluster-proxy addon's identity, as OCM's addon registration issues it with the default
//     subject: CN system:open-cluster-management:cluster:<c>:addon:cluster-proxy:agent:<agent>,
//     O ∋ system:open-cluster-management:cluster:<c>:addon:cluster-proxy — the proxy-agent the
//     cluster-proxy addon deploys.
// Any other addon's identity is refused, even for its own cluster: an addon's hub credential is for
// what that addon does, and only cluster-proxy's job is to carry the cluster's tunnel. (Whether the
// addon is still enabled on the cluster is the hub's say: cluster-admission.ts.)
import type { PeerCertificate } from 'node:tls';
import { type AgentIdentity, agentIdentityFromSubject } from '../tunnel/identity.ts';

/** The one addon whose agents may hold tunnels (OCM's name). */
export const clusterProxyAddonName = 'cluster-proxy';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
// OCM's default addon agent subject (addon-framework DefaultUser / DefaultGroups).
const ADDON_USER = /^system:open-cluster-management:cluster:([^:]+):addon:([^:]+):agent:(.+)$/;

/** The cluster and addon agent an OCM addon identity names; undefined when the subject is not one. */
export function addonIdentityFromSubject(
  commonName: string,
  organizations: readonly string[],
): { cluster: string; addon: string; agent: string } | undefined {
  const m = ADDON_USER.exec(commonName);
  if (!m) return undefined;
  const [, cluster, addon, agent] = m as unknown as [string, string, string, string];
  if (!DNS_LABEL.test(cluster) || !DNS_LABEL.test(addon) || agent.length > 253) return undefined;
  // The per-cluster addon group must name the same cluster and addon as the CN.
  if (!organizations.includes(`system:open-cluster-management:cluster:${cluster}:addon:${addon}`))
    return undefined;
  return { cluster, addon, agent };
}

function asList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** Who holds a tunnel: the cluster, the agent, and for an addon identity the addon's name. */
export interface TunnelIdentity extends AgentIdentity {
  addon?: string;
}

/**
 * The tunnel identity of a subject: the cluster's registration identity, or the cluster-proxy
 * addon's (agent reported as `cluster-proxy:<agent>`); undefined for anything else.
 */
export function tunnelIdentityFromSubject(
  commonName: string,
  organizations: readonly string[],
): TunnelIdentity | undefined {
  const registration = agentIdentityFromSubject(commonName, [...organizations]);
  if (registration) return registration;
  const addon = addonIdentityFromSubject(commonName, organizations);
  if (addon?.addon !== clusterProxyAddonName) return undefined;
  return {
    cluster: addon.cluster,
    agent: `${clusterProxyAddonName}:${addon.agent}`,
    addon: clusterProxyAddonName,
  };
}

/** tunnelIdentityFromSubject of a peer certificate (exactly one CN). */
export function tunnelIdentityFromCertificate(cert: PeerCertificate | undefined): TunnelIdentity | undefined {
  if (!cert?.subject) return undefined;
  const cn = asList(cert.subject.CN);
  if (cn.length !== 1) return undefined;
  return tunnelIdentityFromSubject(cn[0] as string, asList(cert.subject.O));
}
