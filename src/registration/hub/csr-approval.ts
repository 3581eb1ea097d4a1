// ClusterCsrApprovingReconciler: approves the CSRs of managed-cluster agents the policy in
// csr-policy.ts allows (renewals by the same identity, bootstrap requests of listed users for
// clusters that have not joined), and approveClusterCsrs: the human path behind `tether accept`,
// which approves bootstrap requests of clusters that have not joined (all but foreign requests with
// skipApproveCheck, the admin's rebootstrap). Only CSRs carrying the cluster-name
// label are looked at; nothing is ever denied, so other approvers stay free to decide the rest.
//
// Approval goes through client-node's CertificatesV1Api: the `approval` subresource is not one
// ResourceClient writes (it has `status` only). A fresh read precedes every approval, so a CSR
// someone else decided meanwhile is left alone, and the write carries the resourceVersion read.
import {
  CertificatesV1Api,
  type KubeConfig,
  V1CertificateSigningRequestCondition,
} from '@kubernetes/client-node';
import { clusterNameLabel, ManagedClusterCondition } from '../../api/index.ts';
import {
  type Informer,
  isConditionTrue,
  isConflict,
  isNotFound,
  ResourceClient,
  toApiError,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { clusterClient, patchCluster } from './context.ts';
import {
  autoApprovalReason,
  checkClusterCsr,
  classifyCsrRequest,
  isCsrApproved,
  isCsrDecided,
} from './csr-policy.ts';
import {
  type CertificateSigningRequest,
  CsrApprovalReason,
  certificateSigningRequestResource,
  hubFieldManager,
  kubeApiserverClientSignerName,
} from './resources.ts';

/** Label selector of the CSRs the approver watches. */
export const clusterCsrSelector = clusterNameLabel;

/**
 * Add an Approved condition to CSR `name` unless it is already approved or denied, or gone.
 * True when this call approved it.
 */
export async function approveCsr(
  kubeconfig: KubeConfig,
  name: string,
  approval: { reason: string; message: string },
): Promise<boolean> {
  const api = kubeconfig.makeApiClient(CertificatesV1Api);
  const what = `approve ${certificateSigningRequestResource.kind} ${name}`;
  // A 409 means someone else (another approver, `tether accept`) changed the CSR between our read
  // and write: read again, and leave it alone if it is decided now.
  for (let attempt = 0; ; attempt++) {
    try {
      return await approveOnce(api, name, approval);
    } catch (err) {
      const apiErr = toApiError(err, what) ?? err;
      if (isNotFound(apiErr)) return false;
      if (isConflict(apiErr) && attempt < 3) continue;
      throw apiErr;
    }
  }
}

async function approveOnce(
  api: CertificatesV1Api,
  name: string,
  approval: { reason: string; message: string },
): Promise<boolean> {
  const csr = await api.readCertificateSigningRequest({ name });
  const conditions = csr.status?.conditions ?? [];
  if (conditions.some((c) => (c.type === 'Approved' || c.type === 'Denied') && c.status === 'True')) {
    return false;
  }
  const approved = Object.assign(new V1CertificateSigningRequestCondition(), {
    type: 'Approved',
    status: 'True',
    ...approval,
    lastUpdateTime: new Date(),
  });
  csr.status = { ...csr.status, conditions: [...conditions, approved] };
  await api.replaceCertificateSigningRequestApproval({ name, body: csr, fieldManager: hubFieldManager });
  return true;
}

/**
 * Whether `cluster` has joined already, read fresh from the hub: its ManagedCluster reports
 * ManagedClusterJoined, or a CSR for it other than `exceptCsr` was approved (a certificate exists
 * even if the agent has not reported yet). Then a bootstrap request must not yield its identity.
 */
export async function hasClusterJoined(
  kubeconfig: KubeConfig,
  cluster: string,
  exceptCsr?: string,
): Promise<boolean> {
  const mc = await clusterClient(kubeconfig).get(cluster);
  if (isConditionTrue(mc?.status?.conditions, ManagedClusterCondition.Joined)) return true;
  const csrs = new ResourceClient<CertificateSigningRequest>(kubeconfig, certificateSigningRequestResource);
  const { items } = await csrs.list({ labelSelector: `${clusterNameLabel}=${cluster}` });
  return items.some((c) => c.metadata?.name !== exceptCsr && isCsrApproved(c));
}

export interface ClusterCsrApproverOptions {
  autoApprovedUsers: readonly string[];
  /** signers whose cluster CSRs may be approved (kube-apiserver-client, plus the built-in signer's) */
  signerNames: readonly string[];
  log: Logger;
}

export class ClusterCsrApprovingReconciler {
  private readonly kubeconfig: KubeConfig;
  private readonly informer: Informer<CertificateSigningRequest>;
  private readonly options: ClusterCsrApproverOptions;

  constructor(
    kubeconfig: KubeConfig,
    informer: Informer<CertificateSigningRequest>,
    options: ClusterCsrApproverOptions,
  ) {
    this.kubeconfig = kubeconfig;
    this.informer = informer;
    this.options = options;
  }

  async reconcile(name: string): Promise<void> {
    const csr = this.informer.getByName(name);
    if (!csr || isCsrDecided(csr)) return;
    const log = this.options.log.child({ csr: name });
    const check = checkClusterCsr(csr, this.options.signerNames);
    if (!check.ok) {
      log.info(
        { problem: check.problem },
        'cluster CSR left alone: it is not a valid agent identity request',
      );
      return;
    }
    const request = classifyCsrRequest(csr, check.identity);
    const joined =
      request.kind === 'bootstrap' && (await hasClusterJoined(this.kubeconfig, check.identity.cluster, name));
    const approval = autoApprovalReason(csr, check.identity, this.options.autoApprovedUsers, joined);
    if (!approval) {
      log.info(
        { cluster: check.identity.cluster, requester: csr.spec.username },
        request.kind === 'foreign'
          ? 'cluster CSR left alone: requested by another cluster identity'
          : joined
            ? 'cluster CSR left alone: a bootstrap request for a cluster that has joined (a hub admin rebootstraps it: tether accept --skip-approve-check)'
            : 'cluster CSR waits for `tether accept`: neither a renewal nor from an auto-approved user',
      );
      return;
    }
    if (await approveCsr(this.kubeconfig, name, approval)) {
      log.info({ cluster: check.identity.cluster, user: check.identity.user }, approval.message);
    }
  }
}

export interface ApproveClusterCsrsOptions {
  /** signers whose CSRs may be approved (default kubernetes.io/kube-apiserver-client) */
  signerNames?: readonly string[];
  /**
   * Approve bootstrap requests of a cluster that has joined already (clusteradm's
   * --skip-approve-check): the hub admin's rebootstrap. Requests by another cluster's identity
   * stay refused.
   */
  skipApproveCheck?: boolean;
}

export interface ApproveClusterCsrsResult {
  /** CSRs this call approved */
  approved: string[];
  /** pending CSRs labelled for the cluster that were not approved, and why */
  skipped: { name: string; problem: string }[];
  /** false when there is no ManagedCluster of that name (yet) to accept */
  accepted: boolean;
}

/**
 * What a hub admin's `tether accept <cluster>` does: approve every pending CSR labelled for the
 * cluster whose subject is a valid agent identity of that cluster and whose requester may have it
 * (bootstrap requests while the cluster has not joined; renewals; see options.skipApproveCheck), then
 * set spec.hubAcceptsClient on its ManagedCluster. Other pending CSRs are reported, not denied.
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
  const { items } = await csrs.list({ labelSelector: `${clusterNameLabel}=${clusterName}` });
  const result: ApproveClusterCsrsResult = { approved: [], skipped: [], accepted: false };
  const joined = options.skipApproveCheck ? false : await hasClusterJoined(hubKubeConfig, clusterName);
  for (const csr of items) {
    const name = csr.metadata?.name ?? '';
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
    const message = `agent ${check.identity.agent} of cluster ${clusterName}, approved by a hub admin`;
    if (await approveCsr(hubKubeConfig, name, { reason: CsrApprovalReason.Manual, message })) {
      result.approved.push(name);
    }
  }
  const cluster = await patchCluster(clusterClient(hubKubeConfig), clusterName, 'object', (mc) =>
    mc.spec?.hubAcceptsClient === true ? undefined : { spec: { hubAcceptsClient: true } },
  );
  result.accepted = cluster !== undefined;
  return result;
}
