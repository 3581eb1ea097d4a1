// What the registration hub reads and writes besides the OCM kinds of src/api: descriptors and
// minimal JSON types for namespaces, RBAC and CertificateSigningRequests, and the names the hub
// writes (condition types and reasons, CSR approval reasons, RBAC object names, field manager).
// Names OCM defines are spelled exactly as OCM spells them; the ones src/api does not have yet
// live here until they move there.
import { clusterAgentGroups, managedClustersGroup } from '../../api/index.ts';
import type { KubeObject } from '../../kube/index.ts';

export {
  certificateSigningRequestResource,
  clusterRoleBindingResource,
  clusterRoleResource,
  namespaceResource,
  roleBindingResource,
  roleResource,
} from '../../kube/index.ts';

const rbacGroup = 'rbac.authorization.k8s.io';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface RoleRef {
  apiGroup: typeof rbacGroup;
  kind: 'ClusterRole' | 'Role';
  name: string;
}

export interface Subject {
  apiGroup: typeof rbacGroup;
  kind: 'Group' | 'User';
  name: string;
}

/** A ClusterRole or a Role (same shape). */
export interface RbacRole extends KubeObject {
  rules: PolicyRule[];
}

/** A ClusterRoleBinding or a RoleBinding (same shape). */
export interface RbacBinding extends KubeObject {
  roleRef: RoleRef;
  subjects: Subject[];
}

export interface CsrCondition {
  type: 'Approved' | 'Denied' | 'Failed' | string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface CertificateSigningRequest extends KubeObject {
  spec: {
    /** base64 of the PEM PKCS#10 request */
    request: string;
    signerName: string;
    usages?: string[];
    expirationSeconds?: number;
    /** set by the apiserver: who created the request */
    username?: string;
    uid?: string;
    groups?: string[];
    extra?: Record<string, string[]>;
  };
  status?: {
    conditions?: CsrCondition[];
    /** base64 of the PEM certificate, once signed */
    certificate?: string;
  };
}

/** The signer every OCM registration agent asks for its hub client certificate. */
export const kubeApiserverClientSignerName = 'kubernetes.io/kube-apiserver-client';

/** Reasons on the Approved condition of CSRs the hub approves. */
export const CsrApprovalReason = {
  /** renewals by the same identity, bootstrap requests of listed users (OCM's reason) */
  Auto: 'AutoApprovedByHubCSRApprovingController',
  /** approveClusterCsrs (`tether accept`), written as clusteradm writes `<argv0> Approve` */
  Manual: 'tether Approve',
} as const;

/** Message on the Approved condition `tether accept` writes (clusteradm's, with our argv0). */
export const manualApprovalMessage = 'This CSR was approved by tether certificate approve.';

/** OCM's condition on a ManagedCluster being deleted (clusterv1.ManagedClusterConditionDeleting). */
export const ManagedClusterDeleting = {
  type: 'Deleting',
  /** status False: ManifestWorks / add-ons in the cluster namespace are still going away */
  ResourceRemaining: 'ResourceRemaining',
  /** status True: nothing left in the cluster namespace */
  NoResource: 'NoResource',
  /** status False: cleaning up failed */
  DeletingError: 'DeletingError',
} as const;

/** Messages OCM writes with HubAcceptedManagedCluster. */
export const hubAcceptedMessage = 'Accepted by hub cluster admin';
export const hubDeniedMessage = 'Denied by hub cluster admin';
export const leaseStoppedMessage = 'Registration agent stopped updating its lease.';
/** Messages OCM writes with ManagedClusterConditionClockSynced. */
export const clockSyncedMessage = 'The clock of the managed cluster is synced with the hub.';
export const clockOutOfSyncMessage =
  'The clock of hub and agent is out of sync. This may cause the Unknown status and affect agent functionalities.';

/** Field manager of every server-side apply and patch the registration hub makes. */
export const hubFieldManager = 'tether-registration-hub';

/**
 * Lease the hub replicas elect their leader on: OCM's registration controller's (library-go names
 * it `<component>-lock`), in OCM's hub namespace, so an operator finds it where OCM keeps it.
 */
export const hubLeaderLeaseName = 'registration-controller-lock';
export const hubLeaderLeaseNamespace = 'open-cluster-management-hub';

/** Who the hub's Kubernetes Events say reported them. */
export const hubEventComponent = 'registration-controller';

/** ClusterRole and ClusterRoleBinding of one cluster's agents (OCM's name). */
export function clusterRbacName(cluster: string): string {
  return `open-cluster-management:managedcluster:${cluster}`;
}

/**
 * RoleBindings in the cluster namespace, one per agent concern, each to a shared ClusterRole
 * (sharedClusterRoleName). `serviceaccount` is a tether extension (see rbac.ts).
 */
export const namespaceGrants = ['registration', 'work', 'serviceaccount'] as const;
export type NamespaceGrant = (typeof namespaceGrants)[number];

/** `open-cluster-management:managedcluster:<cluster>:<grant>` (OCM's RoleBinding names). */
export function namespaceRbacName(cluster: string, grant: NamespaceGrant): string {
  return `${clusterRbacName(cluster)}:${grant}`;
}

/**
 * The ClusterRole every cluster's RoleBinding of `grant` points at, created once by the hub: OCM's
 * `open-cluster-management:managedcluster:registration|work`; tether's own for `serviceaccount`.
 */
export function sharedClusterRoleName(grant: NamespaceGrant): string {
  return grant === 'serviceaccount'
    ? 'tether:managedcluster:serviceaccount'
    : `open-cluster-management:managedcluster:${grant}`;
}

/**
 * On the work RoleBinding (OCM's): held until the cluster namespace has no ManifestWork left, so the
 * work agent keeps the rights to release its finalizers on works after a deny or a delete.
 */
export const manifestWorkCleanupFinalizer = 'cluster.open-cluster-management.io/manifest-work-cleanup';

/** The group every certificate of this cluster's agents carries (and all its grants are bound to). */
export function clusterGroup(cluster: string): string {
  return clusterAgentGroups(cluster).find((group) => group !== managedClustersGroup) ?? '';
}
