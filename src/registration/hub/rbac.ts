// The RBAC one managed cluster's agents get on the hub, as plain objects (no I/O), in OCM's shape:
//   - per cluster, ClusterRole + ClusterRoleBinding `open-cluster-management:managedcluster:<cluster>`
//     (its own ManagedCluster and status, CSRs, `renew` of register.open-cluster-management.io
//     `managedclusters/clientcertificates`, which the CSR approver checks before approving a renewal);
//   - shared ClusterRoles the hub creates once, `open-cluster-management:managedcluster:registration`
//     and `…:work`, bound in each cluster namespace by RoleBindings
//     `open-cluster-management:managedcluster:<cluster>:registration|work`; the work binding carries
//     the manifest-work-cleanup finalizer (see accept.ts).
// Every binding names the cluster's group `system:open-cluster-management:<cluster>`, which only
// certificates the hub approved for that cluster carry (see registration/csr-policy.ts). OCM also binds the group
// `open-cluster-management:<cluster>` for its AWS IRSA / gRPC drivers; tether has neither, so it
// does not bind a group no tether identity carries.
//
// RBAC matches resourceNames on list and watch only when the request names one object with
// `fieldSelector=metadata.name=<cluster>`: agents list and watch their ManagedCluster that way.
// CSRs cannot be restricted by name (they are created with generated names); the CSR approver is
// what keeps a cluster from obtaining another cluster's identity.
import {
  addonApiGroup,
  clusterApiGroup,
  clusterNameLabel,
  managedClusterAddOnResource,
  managedClusterResource,
  manifestWorkResource,
  workApiGroup,
} from '../../api/index.ts';
import { leaseResource } from '../../kube/index.ts';
import { serviceAccountAgentHubRules } from '../../serviceaccount/rbac.ts';
import {
  certificateSigningRequestResource,
  clusterGroup,
  clusterRbacName,
  manifestWorkCleanupFinalizer,
  type NamespaceGrant,
  namespaceGrants,
  namespaceRbacName,
  type PolicyRule,
  type RbacBinding,
  type RbacRole,
  sharedClusterRoleName,
} from './resources.ts';

const rbacApiGroup = 'rbac.authorization.k8s.io';
const readVerbs = ['get', 'list', 'watch'];

/** API group and resource of the permission a renewal CSR's requester must hold (OCM's). */
export const clientCertificateRenewal = {
  group: 'register.open-cluster-management.io',
  resource: 'managedclusters',
  subresource: 'clientcertificates',
  verb: 'renew',
} as const;

export interface ClusterRbac {
  clusterRole: RbacRole;
  clusterRoleBinding: RbacBinding;
  /** empty when the cluster is not accepted: those grants are removed */
  roleBindings: RbacBinding[];
}

/**
 * The per-cluster ClusterRole rules: OCM's when accepted; read-own-cluster otherwise (so a denied
 * agent sees that it is denied, and can neither renew its certificate nor write its status).
 */
export function clusterRules(cluster: string, accepted: boolean): PolicyRule[] {
  const clusters = managedClusterResource.plural;
  if (!accepted) {
    return [
      { apiGroups: [clusterApiGroup], resources: [clusters], verbs: readVerbs, resourceNames: [cluster] },
    ];
  }
  return [
    {
      apiGroups: [certificateSigningRequestResource.group],
      resources: [certificateSigningRequestResource.plural],
      verbs: ['create', 'get', 'list', 'watch'],
    },
    {
      apiGroups: [clientCertificateRenewal.group],
      resources: [`${clientCertificateRenewal.resource}/${clientCertificateRenewal.subresource}`],
      verbs: [clientCertificateRenewal.verb],
    },
    // OCM grants update, not patch. tether's registration agent writes
    // spec.managedClusterClientConfigs with a merge patch, so patch stays until it uses update.
    {
      apiGroups: [clusterApiGroup],
      resources: [clusters],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
      resourceNames: [cluster],
    },
    {
      apiGroups: [clusterApiGroup],
      resources: [`${clusters}/status`],
      verbs: ['patch', 'update'],
      resourceNames: [cluster],
    },
  ];
}

/** The rules of the shared ClusterRole each agent concern is bound to in its cluster namespace. */
export function sharedClusterRoleRules(grant: NamespaceGrant): PolicyRule[] {
  switch (grant) {
    case 'registration': {
      const addons = managedClusterAddOnResource.plural;
      return [
        // OCM's: no create (the hub creates the lease on accept), no patch.
        {
          apiGroups: [leaseResource.group],
          resources: [leaseResource.plural],
          verbs: ['get', 'list', 'watch', 'update'],
        },
        // OCM's registration agent watches its add-ons; without these it never syncs and exits.
        { apiGroups: [addonApiGroup], resources: [addons], verbs: readVerbs },
        { apiGroups: [addonApiGroup], resources: [`${addons}/status`], verbs: ['patch', 'update'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['list', 'watch', 'create'] },
      ];
    }
    case 'work': {
      const works = manifestWorkResource.plural;
      return [
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
        {
          apiGroups: [workApiGroup],
          resources: [works],
          verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
        },
        { apiGroups: [workApiGroup], resources: [`${works}/status`], verbs: ['patch', 'update'] },
      ];
    }
    // tether extension, not OCM: the ManagedServiceAccount agent runs on the registration identity
    // today (in OCM it is an add-on with its own registration). It goes when the add-on framework
    // gives that agent its own identity.
    case 'serviceaccount':
      return serviceAccountAgentHubRules.map((r) => ({ ...r, verbs: [...r.verbs] }));
  }
}

/** The shared ClusterRoles (one per grant), created once by the hub, labelled as OCM labels them. */
export function sharedClusterRoles(): RbacRole[] {
  return namespaceGrants.map((grant) => ({
    metadata: { name: sharedClusterRoleName(grant), labels: { [clusterNameLabel]: '' } },
    rules: sharedClusterRoleRules(grant),
  }));
}

/** Every per-cluster RBAC object the hub keeps for `cluster`, as it should be now. */
export function clusterRbac(cluster: string, accepted: boolean): ClusterRbac {
  const labels = { [clusterNameLabel]: cluster };
  const subjects = [{ apiGroup: rbacApiGroup, kind: 'Group', name: clusterGroup(cluster) }] as const;
  const name = clusterRbacName(cluster);
  const clusterRole: RbacRole = { metadata: { name, labels }, rules: clusterRules(cluster, accepted) };
  const clusterRoleBinding: RbacBinding = {
    metadata: { name, labels },
    roleRef: { apiGroup: rbacApiGroup, kind: 'ClusterRole', name },
    subjects: [...subjects],
  };
  const grants = accepted ? namespaceGrants : [];
  return {
    clusterRole,
    clusterRoleBinding,
    roleBindings: grants.map((grant) => ({
      metadata: {
        name: namespaceRbacName(cluster, grant),
        namespace: cluster,
        labels,
        ...(grant === 'work' ? { finalizers: [manifestWorkCleanupFinalizer] } : {}),
      },
      roleRef: { apiGroup: rbacApiGroup, kind: 'ClusterRole', name: sharedClusterRoleName(grant) },
      subjects: [...subjects],
    })),
  };
}
