// Which managed cluster a tunnel peer serves, read from its *verified* client certificate.
//
// tether agents use the registration identity OCM's hub signs through the CSR flow:
//   CN = system:open-cluster-management:<cluster>:<agent>
//   O  ∋ system:open-cluster-management:<cluster>
// Both must agree. Nothing the agent says on the wire (hello headers, SNI) can change the answer.
import type { PeerCertificate } from 'node:tls';

const PREFIX = 'system:open-cluster-management:';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface AgentIdentity {
  cluster: string;
  agent: string;
}

function asList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** Parses the identity from subject fields; undefined when the certificate is not an agent's. */
export function agentIdentityFromSubject(
  commonName: string,
  organizations: string[],
): AgentIdentity | undefined {
  if (!commonName.startsWith(PREFIX)) return undefined;
  const rest = commonName.slice(PREFIX.length).split(':');
  if (rest.length !== 2) return undefined;
  const [cluster, agent] = rest as [string, string];
  if (!DNS_LABEL.test(cluster) || agent.length === 0 || agent.length > 253) return undefined;
  if (!organizations.includes(`${PREFIX}${cluster}`)) return undefined;
  return { cluster, agent };
}

export function agentIdentityFromCertificate(cert: PeerCertificate | undefined): AgentIdentity | undefined {
  if (!cert?.subject) return undefined;
  const cn = asList(cert.subject.CN);
  if (cn.length !== 1) return undefined;
  return agentIdentityFromSubject(cn[0] as string, asList(cert.subject.O));
}

/** The subject an agent certificate for `cluster` carries (for minting and for CSRs). */
export function agentSubject(
  cluster: string,
  agent: string,
): { commonName: string; organizations: string[] } {
  return {
    commonName: `${PREFIX}${cluster}:${agent}`,
    organizations: [`${PREFIX}${cluster}`, `${PREFIX}managed-clusters`],
  };
}

/**
 * Whether a user or any of its groups is a managed-cluster-side identity (an agent, an addon agent,
 * the managed-clusters group): OCM puts all of them under `system:open-cluster-management:`. Such
 * identities act *for* one cluster and are never hub services, whatever CA signed them.
 */
export function isManagedClusterIdentity(user: string, groups: readonly string[]): boolean {
  return user.startsWith(PREFIX) || groups.some((g) => g.startsWith(PREFIX));
}
