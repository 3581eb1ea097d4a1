// What each hub component may do on the hub, as ClusterRoles and Roles (pure data). Each rule is
// there because the component's code makes that call; nothing is granted "just in case":
//   - controllers (`tether hub`), with the placement hub's own rules (src/placement/hub/rbac.ts) added: ManagedClusters and their status, CSR approval for
//     kube-apiserver-client (renewals only after a SubjectAccessReview of the requester's `renew`
//     right), a namespace + RBAC per accepted cluster and the shared
//     `open-cluster-management:managedcluster:*` ClusterRoles those RoleBindings point at
//     (escalate/bind: it grants the cluster's agents rights it does not use itself, as OCM's
//     registration controller does), cluster leases and its own leader lease, cleanup of a deleted
//     cluster's works/addons/service accounts, ManagedServiceAccount TTLs and the Role granting each
//     cluster's agents their MSA token Secrets by name (escalate/bind again), events;
//     and the built-in addons' managers (an AddonManager per addon: deploy and registration
//     controllers, src/addon/hub/deploy/rbac.ts and registration-rbac.ts; cluster-gateway's hub
//     half writes ManagedServiceAccounts, already granted);
//   - proxy-server: watch ManagedClusters (which clusters may connect) and the cluster-proxy
//     ManagedClusterAddOns (which addon identities may hold a tunnel), TokenReview and
//     SubjectAccessReview for CONNECT callers;
//   - gateway: an aggregated apiserver (system:auth-delegator, the extension-apiserver-authentication
//     ConfigMap), ManagedClusters, the `tether-gateway` ManagedServiceAccount token Secrets (by name),
//     and cluster-gateway's credential Secrets in open-cluster-management-credentials;
//   - the gateway's client certificate (user system:tether:gateway) may `get managedclusters/proxy`.
import type { KubernetesObject } from '@kubernetes/client-node';
import { addonDeployHubRules } from '../addon/hub/deploy/rbac.ts';
import { addonInstallHubRules } from '../addon/hub/install-strategy/rbac.ts';
import { addonRegistrationHubRules } from '../addon/hub/registration/rbac.ts';
import { signingCaNamespace } from '../addon/hub/template/agent.ts';
import { addonTemplateHubNamespaceRules, addonTemplateHubRules } from '../addon/hub/template/rbac.ts';
import {
  addonApiGroup,
  authenticationApiGroup,
  clusterApiGroup,
  managedClusterAddOnResource,
  managedClusterResource,
  managedServiceAccountResource,
  manifestWorkResource,
  workApiGroup,
} from '../api/index.ts';
import { defaultCredentialNamespace, defaultGatewayMsaName } from '../gateway/index.ts';
import { meta } from '../kube/workload.ts';
import { placementHubRules } from '../placement/hub/rbac.ts';
import { gatewayConnectUser, hubNames, hubNamespace } from './names.ts';

const rbacGroup = 'rbac.authorization.k8s.io';
const read = ['get', 'list', 'watch'];
const write = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

function clusterRole(name: string, component: string, rules: Rule[]): KubernetesObject {
  return {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'ClusterRole',
    metadata: meta(name, undefined, component),
    rules,
  } as KubernetesObject;
}

function binding(
  kind: 'ClusterRoleBinding' | 'RoleBinding',
  name: string,
  namespace: string | undefined,
  component: string,
  role: { kind: 'ClusterRole' | 'Role'; name: string },
  subject: { kind: 'ServiceAccount'; name: string; namespace: string } | { kind: 'User'; name: string },
): KubernetesObject {
  return {
    apiVersion: `${rbacGroup}/v1`,
    kind,
    metadata: meta(name, namespace, component),
    roleRef: { apiGroup: rbacGroup, ...role },
    subjects: [subject.kind === 'User' ? { apiGroup: rbacGroup, ...subject } : subject],
  } as KubernetesObject;
}

const sa = (name: string) => ({ kind: 'ServiceAccount' as const, name, namespace: hubNamespace });

export function controllersRules(): Rule[] {
  const clusters = managedClusterResource.plural;
  return [
    {
      apiGroups: [clusterApiGroup],
      resources: [clusters],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    { apiGroups: [clusterApiGroup], resources: [`${clusters}/status`], verbs: ['get', 'update', 'patch'] },
    { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: read },
    {
      apiGroups: ['certificates.k8s.io'],
      resources: ['certificatesigningrequests/approval'],
      verbs: ['update'],
    },
    {
      apiGroups: ['certificates.k8s.io'],
      resources: ['signers'],
      verbs: ['approve'],
      resourceNames: ['kubernetes.io/kube-apiserver-client'],
    },
    { apiGroups: [''], resources: ['namespaces'], verbs: write },
    {
      apiGroups: [rbacGroup],
      resources: ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'],
      verbs: [...write, 'escalate', 'bind'],
    },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: write },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    {
      apiGroups: [workApiGroup],
      resources: [manifestWorkResource.plural],
      verbs: ['get', 'list', 'watch', 'delete'],
    },
    {
      apiGroups: [addonApiGroup],
      resources: [managedClusterAddOnResource.plural],
      verbs: ['get', 'list', 'watch', 'delete'],
    },
    { apiGroups: [authenticationApiGroup], resources: [managedServiceAccountResource.plural], verbs: write },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  ];
}

export function proxyServerRules(): Rule[] {
  return [
    { apiGroups: [clusterApiGroup], resources: [managedClusterResource.plural], verbs: read },
    { apiGroups: [addonApiGroup], resources: [managedClusterAddOnResource.plural], verbs: read },
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ];
}

export function gatewayRules(): Rule[] {
  return [
    { apiGroups: [clusterApiGroup], resources: [managedClusterResource.plural], verbs: read },
    // the ManagedServiceAccount token Secret in each cluster namespace, listed by name
    { apiGroups: [''], resources: ['secrets'], verbs: read, resourceNames: [defaultGatewayMsaName] },
    { apiGroups: [''], resources: ['namespaces'], verbs: read },
  ];
}

/** ClusterRoles, bindings and the kube-system Role bindings every hub component needs. */
export function hubRbac(): KubernetesObject[] {
  const c = hubNames;
  const authReader = (name: string): KubernetesObject =>
    binding(
      'RoleBinding',
      `${name}:extension-apiserver-authentication-reader`,
      'kube-system',
      name,
      { kind: 'Role', name: 'extension-apiserver-authentication-reader' },
      sa(name),
    );
  return [
    clusterRole(`open-cluster-management:${c.controllers}`, c.controllers, [
      ...controllersRules(),
      // `tether hub` also runs the placement controllers (src/placement/hub)
      ...placementHubRules(),
      ...addonInstallHubRules(),
      // the built-in addons' AddonManager (`--addon-image`)
      ...addonDeployHubRules(),
      ...addonRegistrationHubRules(),
      // add-ons defined by AddOnTemplates (src/addon/hub/template)
      ...addonTemplateHubRules(),
    ]),
    {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'Role',
      metadata: meta(`${c.controllers}:addon-template-signers`, signingCaNamespace, c.controllers),
      rules: addonTemplateHubNamespaceRules(),
    } as KubernetesObject,
    binding(
      'RoleBinding',
      `${c.controllers}:addon-template-signers`,
      signingCaNamespace,
      c.controllers,
      { kind: 'Role', name: `${c.controllers}:addon-template-signers` },
      sa(c.controllers),
    ),
    binding(
      'ClusterRoleBinding',
      `open-cluster-management:${c.controllers}`,
      undefined,
      c.controllers,
      {
        kind: 'ClusterRole',
        name: `open-cluster-management:${c.controllers}`,
      },
      sa(c.controllers),
    ),
    clusterRole(`open-cluster-management:${c.proxyServer}`, c.proxyServer, proxyServerRules()),
    binding(
      'ClusterRoleBinding',
      `open-cluster-management:${c.proxyServer}`,
      undefined,
      c.proxyServer,
      {
        kind: 'ClusterRole',
        name: `open-cluster-management:${c.proxyServer}`,
      },
      sa(c.proxyServer),
    ),
    clusterRole(`open-cluster-management:${c.gateway}`, c.gateway, gatewayRules()),
    binding(
      'ClusterRoleBinding',
      `open-cluster-management:${c.gateway}`,
      undefined,
      c.gateway,
      {
        kind: 'ClusterRole',
        name: `open-cluster-management:${c.gateway}`,
      },
      sa(c.gateway),
    ),
    binding(
      'ClusterRoleBinding',
      `open-cluster-management:${c.gateway}:auth-delegator`,
      undefined,
      c.gateway,
      {
        kind: 'ClusterRole',
        name: 'system:auth-delegator',
      },
      sa(c.gateway),
    ),
    authReader(c.gateway),
    // cluster-gateway's credential Secrets (ClusterGateways with an explicit endpoint)
    {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'Role',
      metadata: meta(`${c.gateway}:credentials`, defaultCredentialNamespace, c.gateway),
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: read }],
    } as KubernetesObject,
    binding(
      'RoleBinding',
      `${c.gateway}:credentials`,
      defaultCredentialNamespace,
      c.gateway,
      {
        kind: 'Role',
        name: `${c.gateway}:credentials`,
      },
      sa(c.gateway),
    ),
    // the gateway's CONNECT-frontend certificate may reach every accepted cluster's tunnel
    clusterRole(`open-cluster-management:${c.gateway}:proxy-client`, c.gateway, [
      { apiGroups: [clusterApiGroup], resources: [`${managedClusterResource.plural}/proxy`], verbs: ['get'] },
    ]),
    binding(
      'ClusterRoleBinding',
      `open-cluster-management:${c.gateway}:proxy-client`,
      undefined,
      c.gateway,
      { kind: 'ClusterRole', name: `open-cluster-management:${c.gateway}:proxy-client` },
      { kind: 'User', name: gatewayConnectUser },
    ),
  ];
}
