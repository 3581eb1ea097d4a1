// approveClusterCsrs: the human path behind `tether accept`, which approves as clusteradm's
// `accept --clusters` does (its requester rules, one requester CN, reason `tether Approve`), never a
// request by another cluster's identity, nor a bootstrap request for a cluster that has joined
// unless skipApproveCheck (the admin's rebootstrap); then it sets spec.hubAcceptsClient. The
// automatic approver is in registration/csr-approval.ts.
import type { KubeConfig } from '@kubernetes/client-node';
import { addonNameLabel, clusterNameLabel, ManagedClusterCondition } from '../../api/index.ts';
import { isConditionTrue, ResourceClient } from '../../kube/index.ts';
import { clusterClient, patchCluster } from './context.ts';
import { approveCsr } from './csr-approval.ts';
import {
  checkClusterCsr,
  classifyCsrRequest,
  isCsrApproved,
  isCsrDecided,
  manualApprovalProblem,
} from './csr-policy.ts';
import {
  type CertificateSigningRequest,
  CsrApprovalReason,
  certificateSigningRequestResource,
  kubeApiserverClientSignerName,
  manualApprovalMessage,
} from './resources.ts';

export interface ApproveClusterCsrsOptions {
  /** signers whose CSRs may be approved (default kubernetes.io/kube-apiserver-client) */
  signerNames?: readonly string[];
  /**
   * clusteradm's --skip-approve-check: any requester, and bootstrap requests of a cluster that has
   * joined already (the hub admin's rebootstrap). Requests by another cluster's identity stay
   * refused.
   */
  skipApproveCheck?: boolean;
}

export interface ApproveClusterCsrsResult {
  /** CSRs this call approved */
  approved: string[];
  /** CSRs approved before this call (clusteradm counts them as approved) */
  alreadyApproved: string[];
  /** pending CSRs labelled for the cluster that were not approved, and why */
  skipped: { name: string; problem: string }[];
  /** set when the eligible CSRs name more than one requester CN: then none is approved */
  ambiguous?: string;
  /** false when there is no ManagedCluster of that name (yet) to accept */
  accepted: boolean;
}

/**
 * What a hub admin's `tether accept <cluster>` does, as clusteradm's `accept --clusters`: among the
 * CSRs labelled for the cluster, Denied ones are skipped and Approved ones count; a pending one is
 * eligible when its requester is a bootstrap identity clusteradm accepts (see
 * manualApprovalProblem; any with skipApproveCheck), and on top of clusteradm, when its subject is
 * a valid agent identity of that cluster, it is not requested by another cluster's identity, and
 * the cluster has not joined (unless skipApproveCheck). When the eligible CSRs name more than one
 * requester CN nothing is approved. Each approval is an Approved condition (reason `tether
 * Approve`) through the /approval subresource; then spec.hubAcceptsClient is merge-patched true.
 */
export async function approveClusterCsrs(
  hubKubeConfig: KubeConfig,
  clusterName: string,
  options: ApproveClusterCsrsOptions = {},
): Promise<ApproveClusterCsrsResult> {
  const signerNames = options.signerNames ?? [kubeApiserverClientSignerName];
  const csrs = new ResourceClient<CertificateSigningRequest>(
    hubKubeConfig,
    certificateSigningRequestResource,
  );
  // add-on agents' CSRs (labelled with their add-on) are the add-on managers' to decide
  const { items } = await csrs.list({
    labelSelector: `${clusterNameLabel}=${clusterName},!${addonNameLabel}`,
  });
  const result: ApproveClusterCsrsResult = {
    approved: [],
    alreadyApproved: [],
    skipped: [],
    accepted: false,
  };
  // One read of the cluster serves the joined check and the acceptance patch (retried on a 409).
  const clusters = clusterClient(hubKubeConfig);
  const before = await clusters.get(clusterName);
  // What hasClusterJoined reads, from the list above: Joined reported, or a CSR approved.
  const joined =
    !options.skipApproveCheck &&
    (isConditionTrue(before?.status?.conditions, ManagedClusterCondition.Joined) ||
      items.some(isCsrApproved));
  const eligible: { name: string; user: string; csr: CertificateSigningRequest }[] = [];
  for (const csr of items) {
    const name = csr.metadata?.name ?? '';
    if (isCsrApproved(csr)) {
      result.alreadyApproved.push(name);
      continue;
    }
    if (isCsrDecided(csr)) continue;
    const check = checkClusterCsr(csr, signerNames);
    if (!check.ok) {
      result.skipped.push({ name, problem: check.problem });
      continue;
    }
    const request = classifyCsrRequest(csr, check.identity);
    if (request.kind === 'foreign') {
      result.skipped.push({ name, problem: request.problem });
      continue;
    }
    if (request.kind === 'bootstrap' && joined) {
      result.skipped.push({
        name,
        problem: `a bootstrap request by ${request.requester || 'an unknown user'} for ${clusterName}, which has joined already; to rebootstrap it, pass --skip-approve-check`,
      });
      continue;
    }
    const problem = options.skipApproveCheck ? undefined : manualApprovalProblem(csr);
    if (problem) {
      result.skipped.push({ name, problem });
      continue;
    }
    eligible.push({ name, user: check.identity.user, csr });
  }
  const requesters = [...new Set(eligible.map((e) => e.user))];
  if (requesters.length > 1) {
    result.ambiguous = `the pending CSRs of ${clusterName} name ${requesters.length} different agents (${requesters.join(', ')}): approve one by hand (kubectl certificate approve) or deny the others`;
  } else {
    for (const { name, csr } of eligible) {
      const approval = { reason: CsrApprovalReason.Manual, message: manualApprovalMessage };
      if (await approveCsr(hubKubeConfig, name, approval, csr)) result.approved.push(name);
    }
  }
  const cluster = await patchCluster(
    clusters,
    clusterName,
    'object',
    (mc) => (mc.spec?.hubAcceptsClient === true ? undefined : { spec: { hubAcceptsClient: true } }),
    before,
  );
  result.accepted = cluster !== undefined;
  return result;
}
