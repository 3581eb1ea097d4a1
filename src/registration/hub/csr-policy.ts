// Which CertificateSigningRequests name a managed cluster's agent identity, and which of those the
// hub approves without a human. Pure functions over the CSR object; no I/O.
//
// A CSR is the cluster's when it carries the cluster-name label, asks a signer we approve for, and
// its PKCS#10 subject is exactly that cluster's agent identity (CN
// system:open-cluster-management:<cluster>:<agent>, O = {system:open-cluster-management:<cluster>,
// system:open-cluster-management:managed-clusters}) with client-certificate usages only.
// Who asked binds what may be approved:
//   - a renewal: the requester is exactly the identity it names (and in that cluster's group);
//   - a bootstrap request: the requester is no cluster's identity at all. It yields a cluster's
//     identity only while that cluster has not joined yet (the caller checks the hub: Joined, or a
//     certificate already approved for it); a joined cluster is rebootstrapped by a hub admin only;
//   - a CSR requested by one cluster's identity for any other identity is never approved.
// Nothing is ever denied: other approvers stay free to decide the rest.
import {
  clusterAgentGroups,
  clusterAgentUser,
  clusterNameLabel,
  managedClustersGroup,
} from '../../api/index.ts';
import { certificateRequestSubject } from '../../pki/index.ts';
import { clusterNameProblem } from './context.ts';
import { type CertificateSigningRequest, CsrApprovalReason, clusterGroup } from './resources.ts';

/** Usages a client certificate may ask for; 'client auth' is required. */
const allowedUsages: readonly string[] = ['client auth', 'digital signature', 'key encipherment'];

/** Longest agent name accepted in a CN (the part after the cluster). */
const maxAgentNameLength = 253;

export interface ClusterCsrIdentity {
  cluster: string;
  agent: string;
  /** the CN, which is also the user name the certificate authenticates as */
  user: string;
}

export type ClusterCsrCheck = { ok: true; identity: ClusterCsrIdentity } | { ok: false; problem: string };

/** Approved or Denied already (a Failed CSR is also finished, but only signers set that). */
export function isCsrDecided(csr: CertificateSigningRequest): boolean {
  return (csr.status?.conditions ?? []).some(
    (c) => (c.type === 'Approved' || c.type === 'Denied') && c.status === 'True',
  );
}

export function isCsrApproved(csr: CertificateSigningRequest): boolean {
  return (csr.status?.conditions ?? []).some((c) => c.type === 'Approved' && c.status === 'True');
}

/** Whether `csr` asks for exactly the agent identity of the cluster its label names. */
export function checkClusterCsr(
  csr: CertificateSigningRequest,
  signerNames: readonly string[],
): ClusterCsrCheck {
  const fail = (problem: string): ClusterCsrCheck => ({ ok: false, problem });
  const cluster = csr.metadata?.labels?.[clusterNameLabel];
  if (!cluster) return fail(`has no ${clusterNameLabel} label`);
  const nameProblem = clusterNameProblem(cluster);
  if (nameProblem) return fail(`labels cluster "${cluster}", which ${nameProblem}`);
  if (!signerNames.includes(csr.spec?.signerName)) {
    return fail(`asks signer "${csr.spec?.signerName}", not one of ${signerNames.join(', ')}`);
  }
  const usages = csr.spec.usages ?? [];
  const foreign = usages.filter((u) => !allowedUsages.includes(u));
  if (foreign.length > 0) return fail(`asks for usages ${foreign.join(', ')} beyond a client certificate`);
  if (!usages.includes('client auth')) return fail('does not ask for the client auth usage');

  let subject: { commonName: string; organizations: string[] };
  try {
    subject = certificateRequestSubject(Buffer.from(csr.spec.request ?? '', 'base64').toString('utf8'));
  } catch {
    return fail('spec.request is not a PEM PKCS#10 certificate request');
  }
  const expected = [...clusterAgentGroups(cluster)].sort();
  const organizations = [...subject.organizations].sort();
  if (organizations.length !== expected.length || organizations.some((o, i) => o !== expected[i])) {
    return fail(`organizations [${subject.organizations.join(', ')}] are not [${expected.join(', ')}]`);
  }
  const prefix = clusterAgentUser(cluster, '');
  const agent = subject.commonName.startsWith(prefix) ? subject.commonName.slice(prefix.length) : '';
  if (!agent || agent.includes(':') || agent.length > maxAgentNameLength) {
    return fail(`common name "${subject.commonName}" is not ${prefix}<agent>`);
  }
  return { ok: true, identity: { cluster, agent, user: subject.commonName } };
}

/** Users under this prefix are cluster (or addon) identities the hub signed, never bootstrap users. */
const clusterIdentityPrefix = 'system:open-cluster-management:';

/** How a valid cluster CSR was asked for, which decides who may approve it. */
export type CsrRequest =
  | { kind: 'renewal' }
  | { kind: 'bootstrap'; requester: string }
  | { kind: 'foreign'; problem: string };

/** Classify who requested `csr` for `identity` (spec.username / spec.groups, set by the apiserver). */
export function classifyCsrRequest(csr: CertificateSigningRequest, identity: ClusterCsrIdentity): CsrRequest {
  const requester = csr.spec.username ?? '';
  const groups = csr.spec.groups ?? [];
  if (requester === identity.user && groups.includes(clusterGroup(identity.cluster)))
    return { kind: 'renewal' };
  const isClusterIdentity =
    groups.includes(managedClustersGroup) || requester.startsWith(clusterIdentityPrefix);
  if (isClusterIdentity) {
    return {
      kind: 'foreign',
      problem: `requested by ${requester || 'a cluster identity'}, another identity than the ${identity.user} it names: one cluster's identity never yields another's`,
    };
  }
  return { kind: 'bootstrap', requester };
}

/** Requesters clusteradm's `accept` approves for (besides any `system:bootstrap:` token user). */
export const manualApprovalUsers: readonly string[] = [
  'system:serviceaccount:open-cluster-management:agent-registration-bootstrap',
  'system:serviceaccount:open-cluster-management-hub:grpc-server-sa',
];
/** One of these must be among the requester's groups. */
export const manualApprovalGroups: readonly string[] = [
  'system:bootstrappers:managedcluster',
  'system:serviceaccounts:open-cluster-management',
  'system:serviceaccounts:open-cluster-management-hub',
];
const bootstrapTokenUserPrefix = 'system:bootstrap:';

/**
 * Why `tether accept` (like clusteradm's `accept` without --skip-approve-check) leaves `csr` alone,
 * or undefined when its requester is eligible: a bootstrap-token user or one of
 * manualApprovalUsers, in one of manualApprovalGroups.
 */
export function manualApprovalProblem(csr: CertificateSigningRequest): string | undefined {
  const user = csr.spec.username ?? '';
  const groups = csr.spec.groups ?? [];
  const userOk = user.startsWith(bootstrapTokenUserPrefix) || manualApprovalUsers.includes(user);
  if (userOk && groups.some((g) => manualApprovalGroups.includes(g))) return undefined;
  return `requested by ${user || 'an unknown user'}, not a bootstrap identity clusteradm accepts (a ${bootstrapTokenUserPrefix}<token> user or ${manualApprovalUsers.join(', ')}, in a group of ${manualApprovalGroups.join(', ')}); to approve it anyway, pass --skip-approve-check`;
}

/**
 * The reason to approve a valid cluster CSR without a human, or undefined when it must wait:
 * a renewal by the very identity it names, or a bootstrap request by a listed user for a cluster
 * that has not joined yet (`joined`: its ManagedCluster is Joined or a certificate was approved).
 */
export function autoApprovalReason(
  csr: CertificateSigningRequest,
  identity: ClusterCsrIdentity,
  autoApprovedUsers: readonly string[],
  joined: boolean,
): { reason: string; message: string } | undefined {
  const request = classifyCsrRequest(csr, identity);
  if (request.kind === 'renewal') {
    return { reason: CsrApprovalReason.Auto, message: `renewal of ${identity.user} by the same identity` };
  }
  if (
    request.kind === 'bootstrap' &&
    !joined &&
    request.requester &&
    autoApprovedUsers.includes(request.requester)
  ) {
    return {
      reason: CsrApprovalReason.Auto,
      message: `bootstrap of cluster ${identity.cluster} by ${request.requester}, an auto-approved user`,
    };
  }
  return undefined;
}

/**
 * Why a valid cluster CSR is left alone without a look at the hub, or undefined when only a fresh
 * look can decide (a renewal's permission check, a bootstrap request for a cluster the cache does
 * not show joined). `approvedInCache`: another CSR of that cluster is approved in the approver's
 * cache, so the cluster has joined. Whatever this refuses costs no request and never waits in line
 * with the cluster's other CSRs: a flood of CSRs naming one cluster — by another cluster's identity,
 * by a user that is not auto-approved, or by a bootstrap identity after the cluster joined — does
 * not delay that cluster's own renewal.
 */
export function refusalWithoutLookup(
  csr: CertificateSigningRequest,
  identity: ClusterCsrIdentity,
  autoApprovedUsers: readonly string[],
  approvedInCache: boolean,
): string | undefined {
  const request = classifyCsrRequest(csr, identity);
  if (request.kind === 'foreign') return 'cluster CSR left alone: requested by another cluster identity';
  if (request.kind === 'renewal') return undefined;
  if (!request.requester || !autoApprovedUsers.includes(request.requester)) {
    return 'cluster CSR waits for `tether accept`: neither a renewal nor from an auto-approved user';
  }
  return approvedInCache ? joinedBootstrapRefusal : undefined;
}

/** Why a bootstrap request for a cluster that has joined is left alone. */
export const joinedBootstrapRefusal =
  'cluster CSR left alone: a bootstrap request for a cluster that has joined (a hub admin rebootstraps it: tether accept --skip-approve-check)';
