// ClusterCsrApprovingReconciler: approves the CSRs of managed-cluster agents the policy in
// registration/csr-policy.ts allows (renewals by the same identity that still may `renew`
// register.open-cluster-management.io managedclusters/clientcertificates, checked with a
// SubjectAccessReview as OCM does; bootstrap requests of listed users for clusters that have not
// joined), recording a ManagedClusterCSRAutoApproved event. (`tether accept`'s human path is
// csr-manual-approval.ts.) Only CSRs carrying the cluster-name label are looked at; nothing is ever
// denied, so other approvers stay free to decide the rest. A CSR the cache alone can refuse (another cluster's
// identity, a requester that is not auto-approved, a bootstrap request for a cluster with an
// approved CSR) is refused without a request and without queueing behind the cluster's other CSRs,
// and a CSR whose cluster is busy goes back to the queue instead of holding a worker: a flood
// naming one cluster holds up neither that cluster's renewal nor any other cluster's.
//
// Approval goes through client-node's CertificatesV1Api: the `approval` subresource is not one
// ResourceClient writes (it has `status` only). Every approval is guarded by the resourceVersion of
// the copy it was decided on (the informer's, the list's, or a fresh read after a 409), so a CSR
// someone else decided meanwhile is left alone.
import {
  AuthorizationV1Api,
  CertificatesV1Api,
  type KubeConfig,
  type V1CertificateSigningRequest,
  V1CertificateSigningRequestCondition,
} from '@kubernetes/client-node';
import { addonNameLabel, clusterNameLabel, ManagedClusterCondition } from '../../api/index.ts';
import {
  type Informer,
  isConditionTrue,
  isConflict,
  isNotFound,
  type ReconcileResult,
  ResourceClient,
  toApiError,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { ApprovedClusterCsrs } from './approved-csrs.ts';
import { clusterClient } from './context.ts';
import {
  autoApprovalReason,
  type ClusterCsrIdentity,
  checkClusterCsr,
  classifyCsrRequest,
  isCsrApproved,
  isCsrDecided,
  joinedBootstrapRefusal,
  refusalWithoutLookup,
} from './csr-policy.ts';
import type { HubEventRecorder } from './events.ts';
import { clientCertificateRenewal } from './rbac.ts';
import {
  type CertificateSigningRequest,
  certificateSigningRequestResource,
  hubFieldManager,
} from './resources.ts';

/** Label selector of the CSRs the approver watches. */
export const clusterCsrSelector = clusterNameLabel;

/**
 * Add an Approved condition to CSR `name` unless it is already approved or denied, or gone.
 * True when this call approved it. With `cached` (an informer's or a list's copy) the first write
 * starts from it, guarded by its resourceVersion, instead of a read: if anyone changed the CSR
 * since, the write is refused (409) and a fresh read decides, as without it.
 */
export async function approveCsr(
  kubeconfig: KubeConfig,
  name: string,
  approval: { reason: string; message: string },
  cached?: CertificateSigningRequest,
): Promise<boolean> {
  const api = kubeconfig.makeApiClient(CertificatesV1Api);
  const what = `approve ${certificateSigningRequestResource.kind} ${name}`;
  // A 409 means someone else (another approver, `tether accept`) changed the CSR between our read
  // and write: read again, and leave it alone if it is decided now.
  for (let attempt = 0; ; attempt++) {
    try {
      const from = attempt === 0 && cached ? typedCsr(cached) : undefined;
      return await approveOnce(api, name, approval, from);
    } catch (err) {
      const apiErr = toApiError(err, what) ?? err;
      if (isNotFound(apiErr)) return false;
      if (isConflict(apiErr) && attempt < 3) continue;
      throw apiErr;
    }
  }
}

/** A cached CSR as client-node's model (times as Dates), carrying its resourceVersion. */
function typedCsr(csr: CertificateSigningRequest): V1CertificateSigningRequest {
  const date = (t: unknown) => (typeof t === 'string' ? new Date(t) : undefined);
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: certificateSigningRequestResource.kind,
    // All of metadata the apiserver takes from an update (labels among it: the approval
    // subresource keeps what the body says); managedFields left out are kept as they are.
    metadata: {
      name: csr.metadata?.name,
      generateName: csr.metadata?.generateName,
      uid: csr.metadata?.uid,
      resourceVersion: csr.metadata?.resourceVersion,
      labels: csr.metadata?.labels,
      annotations: csr.metadata?.annotations,
      ownerReferences: csr.metadata?.ownerReferences,
      finalizers: csr.metadata?.finalizers,
    },
    spec: { ...csr.spec },
    status: {
      conditions: (csr.status?.conditions ?? []).map((c) =>
        Object.assign(new V1CertificateSigningRequestCondition(), {
          ...c,
          lastUpdateTime: date(c.lastUpdateTime),
          lastTransitionTime: date(c.lastTransitionTime),
        }),
      ),
    },
  };
}

async function approveOnce(
  api: CertificatesV1Api,
  name: string,
  approval: { reason: string; message: string },
  from?: V1CertificateSigningRequest,
): Promise<boolean> {
  const csr = from ?? (await api.readCertificateSigningRequest({ name }));
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
  const csrs = new ResourceClient<CertificateSigningRequest>(kubeconfig, certificateSigningRequestResource);
  // Both fresh, side by side: one round trip for the check before every bootstrap approval.
  const [mc, { items }] = await Promise.all([
    clusterClient(kubeconfig).get(cluster),
    csrs.list({ labelSelector: `${clusterNameLabel}=${cluster}` }),
  ]);
  if (isConditionTrue(mc?.status?.conditions, ManagedClusterCondition.Joined)) return true;
  return items.some((c) => c.metadata?.name !== exceptCsr && isCsrApproved(c));
}

/**
 * Whether the requester of `csr` may still `renew` the client certificate of `cluster` (OCM's
 * check before approving a renewal): a SubjectAccessReview as the requester, groups and extra
 * included. A denied or deleted cluster has lost that rule.
 */
export async function mayRenewClientCertificate(
  kubeconfig: KubeConfig,
  csr: CertificateSigningRequest,
  cluster: string,
): Promise<boolean> {
  const review = await kubeconfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: csr.spec.username,
        uid: csr.spec.uid,
        groups: csr.spec.groups,
        extra: csr.spec.extra,
        resourceAttributes: {
          group: clientCertificateRenewal.group,
          resource: clientCertificateRenewal.resource,
          subresource: clientCertificateRenewal.subresource,
          verb: clientCertificateRenewal.verb,
          name: cluster,
        },
      },
    },
  });
  return review.status?.allowed === true;
}

export interface ClusterCsrApproverOptions {
  autoApprovedUsers: readonly string[];
  /**
   * Whether the cluster exists and its own ClusterRole/Binding (read its ManagedCluster) are not
   * in place yet: a bootstrap approval waits for them, so the certificate works from its first
   * request instead of being refused until the accept reconcile catches up.
   */
  clusterGrantsPending?: (cluster: string) => boolean;
  /** signers whose cluster CSRs may be approved (kube-apiserver-client, plus the built-in signer's) */
  signerNames: readonly string[];
  events?: HubEventRecorder;
  log: Logger;
}

/** How often a CSR waiting for its cluster's grants is looked at again (the cache only). */
const grantsPollMs = 250;
/** After this long the approval goes ahead without them (it never did wait before). */
const grantsWaitMaxMs = 15_000;
/**
 * A CSR whose cluster has a decision in progress is looked at again after this, doubling per
 * try up to clusterBusyRetryMaxMs — instead of a worker waiting in line, so one cluster with
 * hundreds of CSRs (a flood of its own renewals) never holds the workers other clusters need.
 */
export const clusterBusyRetryMs = 50;
export const clusterBusyRetryMaxMs = 5_000;

export class ClusterCsrApprovingReconciler {
  private readonly kubeconfig: KubeConfig;
  private readonly informer: Informer<CertificateSigningRequest>;
  private readonly options: ClusterCsrApproverOptions;
  /** clusters with a decision in progress (one at a time per cluster) */
  private readonly deciding = new Set<string>();
  /** CSRs put back because their cluster was busy: how many times in a row */
  private readonly busyRetries = new Map<string, number>();
  /** CSRs whose approval waits for their cluster's grants: since when */
  private readonly waitingForGrants = new Map<string, number>();
  private readonly approved: ApprovedClusterCsrs;

  constructor(
    kubeconfig: KubeConfig,
    informer: Informer<CertificateSigningRequest>,
    options: ClusterCsrApproverOptions,
  ) {
    this.kubeconfig = kubeconfig;
    this.informer = informer;
    this.options = options;
    this.approved = new ApprovedClusterCsrs(informer);
  }

  async reconcile(name: string): Promise<ReconcileResult | undefined> {
    const csr = this.informer.getByName(name);
    if (!csr || isCsrDecided(csr)) {
      this.waitingForGrants.delete(name);
      this.busyRetries.delete(name);
      return undefined;
    }
    // An add-on agent's CSR is the add-on managers' to decide (src/addon/hub/csr*.ts).
    if (csr.metadata?.labels?.[addonNameLabel] !== undefined) return undefined;
    const log = this.options.log.child({ csr: name });
    const check = checkClusterCsr(csr, this.options.signerNames);
    if (!check.ok) {
      log.info(
        { problem: check.problem },
        'cluster CSR left alone: it is not a valid agent identity request',
      );
      return undefined;
    }
    const cluster = check.identity.cluster;
    const refusal = refusalWithoutLookup(
      csr,
      check.identity,
      this.options.autoApprovedUsers,
      this.approved.hasApproved(cluster, name),
    );
    if (refusal) {
      this.waitingForGrants.delete(name);
      log.info({ cluster, requester: csr.spec.username }, refusal);
      return undefined;
    }
    if (this.awaitGrants(name, cluster)) {
      log.debug({ cluster }, 'cluster CSR waits for the cluster’s own ClusterRole/Binding');
      return { requeueAfterMs: grantsPollMs };
    }
    if (this.deciding.has(cluster)) return { requeueAfterMs: this.busyRetryDelay(name) };
    this.busyRetries.delete(name);
    // CSRs of different clusters are decided side by side, those of one cluster in turn, so two
    // bootstrap requests never both see the cluster "not joined yet".
    this.deciding.add(cluster);
    try {
      await this.decide(name, csr, check.identity, log);
    } finally {
      this.deciding.delete(cluster);
    }
    return undefined;
  }

  private busyRetryDelay(name: string): number {
    const tries = (this.busyRetries.get(name) ?? 0) + 1;
    this.busyRetries.set(name, tries);
    return Math.min(clusterBusyRetryMs * 2 ** Math.min(tries - 1, 16), clusterBusyRetryMaxMs);
  }

  /** Whether to look at this CSR again shortly: its cluster's grants are on their way (bounded). */
  private awaitGrants(name: string, cluster: string): boolean {
    if (!this.options.clusterGrantsPending?.(cluster)) {
      this.waitingForGrants.delete(name);
      return false;
    }
    const since = this.waitingForGrants.get(name) ?? Date.now();
    this.waitingForGrants.set(name, since);
    if (Date.now() - since < grantsWaitMaxMs) return true;
    this.waitingForGrants.delete(name);
    return false;
  }

  private async decide(
    name: string,
    csr: CertificateSigningRequest,
    identity: ClusterCsrIdentity,
    log: Logger,
  ): Promise<void> {
    const check = { identity };
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
            ? joinedBootstrapRefusal
            : 'cluster CSR waits for `tether accept`: neither a renewal nor from an auto-approved user',
      );
      return;
    }
    if (
      request.kind === 'renewal' &&
      !(await mayRenewClientCertificate(this.kubeconfig, csr, check.identity.cluster))
    ) {
      log.info(
        { cluster: check.identity.cluster, requester: csr.spec.username },
        'renewal CSR left alone: the requester may not renew managedclusters/clientcertificates (cluster denied or deleted)',
      );
      return;
    }
    if (await approveCsr(this.kubeconfig, name, approval, csr)) {
      log.info({ cluster: check.identity.cluster, user: check.identity.user }, approval.message);
      await this.options.events?.record(
        {
          apiVersion: `${certificateSigningRequestResource.group}/${certificateSigningRequestResource.version}`,
          kind: certificateSigningRequestResource.kind,
          name,
          uid: csr.metadata?.uid,
        },
        'ManagedClusterCSRAutoApproved',
        `managed cluster csr "${name}" is auto approved by hub csr controller`,
      );
    }
  }
}
