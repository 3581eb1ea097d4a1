// The RBAC one managed cluster's agents get on the hub, as plain objects (no I/O). Every grant is
// bound to the cluster's group `system:open-cluster-management:<cluster>`, which only certificates
// the hub approved for that cluster carry (see csr-policy.ts), and names only that cluster's
// objects: its own ManagedCluster (resourceNames) and objects in its own namespace (Roles).
//
// RBAC matches resourceNames on list and watch only when the request names one object with
// `fieldSelector=metadata.name=<cluster>`: agents list and watch their ManagedCluster that way.
// CSRs cannot be restricted by name (they are created with generated names); the CSR approver is
// what keeps a cluster from obtaining another cluster's identity.
import {
  authenticationApiGroup,
  clusterApiGroup,
  clusterNameLabel,
  managedClusterResource,
  managedServiceAccountResource,
  manifestWorkResource,
  workApiGroup,
} from '../../api/index.ts';
import { leaseResource } from '../../kube/index.ts';
import {
  certificateSigningRequestResource,
  clusterGroup,
  clusterRbacName,
  type NamespaceGrant,
  namespaceGrants,
  namespaceRbacName,
  type PolicyRule,
  type RbacBinding,
  type RbacRole,
} from './resources.ts';

const rbacApiGroup = 'rbac.authorization.k8s.io';
const readVerbs = ['get', 'list', 'watch'];
const writeVerbs = ['get', 'list', 'watch', 'update', 'patch'];
const statusVerbs = ['get', 'update', 'patch'];

export interface ClusterRbac {
  clusterRole: RbacRole;
  clusterRoleBinding: RbacBinding;
  /** empty when the cluster is not accepted: those grants are removed */
  roles: RbacRole[];
  roleBindings: RbacBinding[];
}

/** The ClusterRole rules of a cluster's agents: full when accepted, read-own-cluster otherwise. */
export function clusterRules(cluster: string, accepted: boolean): PolicyRule[] {
  const clusters = managedClusterResource.plural;
  if (!accepted) {
    return [
      { apiGroups: [clusterApiGroup], resources: [clusters], verbs: readVerbs, resourceNames: [cluster] },
    ];
  }
  return [
    { apiGroups: [clusterApiGroup], resources: [clusters], verbs: writeVerbs, resourceNames: [cluster] },
    {
      apiGroups: [clusterApiGroup],
      resources: [`${clusters}/status`],
      verbs: statusVerbs,
      resourceNames: [cluster],
    },
    {
      apiGroups: [certificateSigningRequestResource.group],
      resources: [certificateSigningRequestResource.plural],
      verbs: ['create', 'get', 'list', 'watch'],
    },
  ];
}

/** The Role rules each agent concern gets in the cluster namespace. */
export function namespaceRules(grant: NamespaceGrant): PolicyRule[] {
  switch (grant) {
    case 'registration':
      return [
        { apiGroups: [leaseResource.group], resources: [leaseResource.plural], verbs: writeVerbs },
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ];
    case 'work': {
      const works = manifestWorkResource.plural;
      return [
        { apiGroups: [workApiGroup], resources: [works], verbs: writeVerbs },
        { apiGroups: [workApiGroup], resources: [`${works}/status`], verbs: statusVerbs },
      ];
    }
    case 'serviceaccount': {
      const accounts = managedServiceAccountResource.plural;
      return [
        { apiGroups: [authenticationApiGroup], resources: [accounts], verbs: writeVerbs },
        { apiGroups: [authenticationApiGroup], resources: [`${accounts}/status`], verbs: statusVerbs },
        {
          apiGroups: [''],
          resources: ['secrets'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
      ];
    }
  }
}

/** Every RBAC object the hub keeps for `cluster`, as it should be now. */
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
  const meta = (grant: NamespaceGrant) => ({
    name: namespaceRbacName(cluster, grant),
    namespace: cluster,
    labels,
  });
  return {
    clusterRole,
    clusterRoleBinding,
    roles: grants.map((grant) => ({ metadata: meta(grant), rules: namespaceRules(grant) })),
    roleBindings: grants.map((grant) => ({
      metadata: meta(grant),
      roleRef: { apiGroup: rbacApiGroup, kind: 'Role', name: namespaceRbacName(cluster, grant) },
      subjects: [...subjects],
    })),
  };
}
