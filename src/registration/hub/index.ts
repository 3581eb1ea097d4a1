// The OCM registration hub: accepts ManagedClusters (cluster namespace, RBAC scoped to the
// cluster's own objects, lease, finalizer, HubAcceptedManagedCluster), approves the agents' CSRs
// (renewals, listed bootstrap users; `tether accept` for the rest), optionally signs them, turns
// Available Unknown when a cluster's lease stops, keeps the unreachable/unavailable taints, and
// cleans up on deny and delete. Replicas elect one leader on a Lease; only the leader reconciles.
//
// The hub's own identity needs: managedclusters get/list/watch/update/patch (+ /status); namespaces,
// clusterroles, clusterrolebindings, roles, rolebindings get/list/watch/create/patch/delete (the
// cluster-labelled ones are cached and written only when they differ from what the hub wrote; and
// the escalate/bind that granting the agents' rules implies, or those rules itself); leases in all
// cluster namespaces and in the election namespace; manifestworks and managedclusteraddons
// list/watch/delete; events create; subjectaccessreviews create (renewal approval);
// certificatesigningrequests list/watch/get, /approval update and `approve` on
// the signers it approves for (kubernetes.io/kube-apiserver-client, plus the built-in signer's
// name), and with the built-in signer /status update and `sign` on its signer name.
// clusterLabelSelector scopes the ManagedCluster reconcilers only; CSR approval is hub-wide.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage, InvalidArgumentError } from '../../errors.ts';
import { runWhileLeading } from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { loadCertificateAuthority } from '../../pki/index.ts';
import { startHubControllers } from './controllers.ts';
import { hubLeaderLeaseName, hubLeaderLeaseNamespace, kubeApiserverClientSignerName } from './resources.ts';

export {
  type ApproveClusterCsrsOptions,
  type ApproveClusterCsrsResult,
  approveClusterCsrs,
} from './csr-manual-approval.ts';
export { type ClusterCsrIdentity, checkClusterCsr } from './csr-policy.ts';
export { type ClusterRbac, clientCertificateRenewal, clusterRbac, sharedClusterRoles } from './rbac.ts';
export {
  CsrApprovalReason,
  clusterRbacName,
  hubFieldManager,
  hubLeaderLeaseName,
  hubLeaderLeaseNamespace,
  kubeApiserverClientSignerName,
  ManagedClusterDeleting,
  manifestWorkCleanupFinalizer,
  manualApprovalMessage,
  namespaceRbacName,
  sharedClusterRoleName,
} from './resources.ts';

export interface HubSignerOptions {
  /** the signing CA (PEM certificate and PKCS#8 P-256 key) */
  certPem: string;
  keyPem: string;
  /** CSRs of this signer are signed (default kubernetes.io/kube-apiserver-client) */
  signerName?: string;
  /** validity when a CSR has no spec.expirationSeconds (default 1 year) */
  defaultValiditySeconds?: number;
  /** cap on any certificate's validity (default 1 year) */
  maxValiditySeconds?: number;
}

export interface HubLeaderElectionOptions {
  /** namespace of the Lease (default open-cluster-management-hub, as OCM's) */
  namespace?: string;
  /** name of the Lease (default registration-controller-lock, OCM's registration controller's) */
  name?: string;
  /** this replica, unique among replicas (default hostname + random suffix) */
  identity?: string;
  /** defaults as in LeaderElector: 15 s, 10 s, 2 s */
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface RegistrationHubOptions {
  hubKubeConfig: KubeConfig;
  /** users whose bootstrap CSRs are approved without `tether accept` (--auto-approved-csr-users) */
  autoApprovedCsrUsers?: string[];
  /** built-in signer (--signer-cert / --signer-key); off by default */
  signer?: HubSignerOptions;
  /** Available turns Unknown after this many lease durations without renewal (default 5, as OCM) */
  leaseGraceFactor?: number;
  /** leader election on a Lease (default on); false runs the reconcilers at once, alone */
  leaderElection?: HubLeaderElectionOptions | false;
  /** reconcile only ManagedClusters matching this label selector (default all) */
  clusterLabelSelector?: string;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  log?: Logger;
}

export interface RegistrationHub {
  /** this replica's leader-election identity */
  readonly identity: string;
  /** whether this replica runs the reconcilers now (always true without leader election) */
  isLeader(): boolean;
  /** stop reconciling (waiting for running reconciles) and give up the leader Lease */
  stop(): Promise<void>;
}

const oneYearSeconds = 365 * 24 * 3600;

/** Start the registration hub; resolves once it campaigns (or, alone, once its reconcilers start). */
export async function startRegistrationHub(opts: RegistrationHubOptions): Promise<RegistrationHub> {
  const log = opts.log ?? logger('registration-hub');
  const leaseGraceFactor = opts.leaseGraceFactor ?? 5;
  if (!(leaseGraceFactor >= 1)) {
    throw new InvalidArgumentError(`leaseGraceFactor must be ≥ 1 lease duration, got ${leaseGraceFactor}`);
  }
  const signer = opts.signer ? await loadSigner(opts.signer) : undefined;
  const approvedSignerNames = [...new Set([kubeApiserverClientSignerName, signer?.signerName ?? ''])].filter(
    Boolean,
  );
  const election = opts.leaderElection === false ? undefined : (opts.leaderElection ?? {});
  const identity = election?.identity ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
  const start = () =>
    startHubControllers({
      kubeconfig: opts.hubKubeConfig,
      autoApprovedCsrUsers: opts.autoApprovedCsrUsers ?? [],
      approvedSignerNames,
      signer,
      leaseGraceFactor,
      clusterLabelSelector: opts.clusterLabelSelector,
      resyncPeriodMs: opts.resyncPeriodMs,
      log: log.child({ identity }),
    });

  if (!election) {
    const controllers = start();
    return { identity, isLeader: () => true, stop: () => controllers.stop() };
  }

  const leading = await runWhileLeading({
    kubeconfig: opts.hubKubeConfig,
    namespace: election.namespace ?? hubLeaderLeaseNamespace,
    name: election.name ?? hubLeaderLeaseName,
    identity,
    leaseDurationSeconds: election.leaseDurationSeconds,
    renewDeadlineMs: election.renewDeadlineMs,
    retryPeriodMs: election.retryPeriodMs,
    log,
    start,
  });
  return { identity, ...leading };
}

async function loadSigner(options: HubSignerOptions) {
  try {
    const ca = await loadCertificateAuthority(options.certPem, options.keyPem);
    return {
      ca,
      signerName: options.signerName ?? kubeApiserverClientSignerName,
      limits: {
        defaultValiditySeconds: options.defaultValiditySeconds ?? oneYearSeconds,
        maxValiditySeconds: options.maxValiditySeconds ?? oneYearSeconds,
      },
    };
  } catch (err) {
    throw new InvalidArgumentError(
      `signer: cannot load the CA (PEM certificate + PKCS#8 P-256 key): ${errorMessage(err)}`,
    );
  }
}
