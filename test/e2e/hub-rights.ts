// The hub rights each tether credential is meant to hold, written down as data: the list
// docs/security.md shows ("What each hub credential may do") and hub-rights.test.ts checks against
// what the hub's RBAC actually grants (SelfSubjectRulesReview as each identity). Written by hand on
// purpose, never computed from src/: a rule added in src/ without a line here fails the e2e test,
// a line here that src/ does not grant fails it too. Pure data (no I/O), so the doc test can load it.
//
// Where a right applies:
//   - `everywhere`: from ClusterRoleBindings — cluster-scoped resources and every namespace;
//   - `ownClusterNamespace`: in addition, in the namespace of the identity's own cluster;
//   - `inNamespace`: in addition, in the named namespaces;
//   - another cluster's namespace and any unrelated namespace: nothing more than `everywhere`.
// Verbs and resources are space-separated; `<cluster>` in a name stands for the identity's cluster.
// After editing a list, `node test/docs/hub-rights-table.ts` rewrites docs/security.md's tables.
import { addonAgentUser, addonDefaultGroups } from '../../src/addon/hub/registration-subject.ts';
import { clusterAgentGroups, clusterAgentUser } from '../../src/api/index.ts';
import { defaultCredentialNamespace } from '../../src/gateway/index.ts';
import { hubNames, hubNamespace } from '../../src/install/names.ts';
import {
  BOOTSTRAP_NAMESPACE,
  BOOTSTRAP_SERVICE_ACCOUNT,
  BOOTSTRAP_TOKEN_GROUP,
} from '../../src/registration/bootstrap.ts';

/** Some verbs on some resources of one API group, optionally only on the named objects. */
export interface Grant {
  /** '' is the core group */
  group: string;
  resources: string[];
  verbs: string[];
  names?: string[];
}

/** A user and its groups as the hub's authenticator sees them. */
export interface HubSubject {
  /** how the docs and failure messages name this subject */
  label: string;
  user: string;
  groups: string[];
}

export interface IdentityRights {
  key: string;
  /** the credential, as the test name and the docs say it ("a managed cluster's hub credential") */
  credential: string;
  /** who holds it and why (one sentence for the docs) */
  holder: string;
  /** whether the identity belongs to one managed cluster (then `<cluster>` means that cluster) */
  perCluster: boolean;
  /** for a per-cluster identity: its cluster exists but is not accepted (never, or denied) */
  notAccepted?: true;
  subjects(cluster: string): HubSubject[];
  everywhere: Grant[];
  ownClusterNamespace?: Grant[];
  inNamespace?: Record<string, Grant[]>;
}

/** `grant('cluster.open-cluster-management.io', 'managedclusters', 'get list', ['<cluster>'])` */
function grant(group: string, resources: string, verbs: string, names?: string[]): Grant {
  return { group, resources: resources.split(' '), verbs: verbs.split(' '), ...(names ? { names } : {}) };
}

const core = '';
const cluster = 'cluster.open-cluster-management.io';
const work = 'work.open-cluster-management.io';
const addon = 'addon.open-cluster-management.io';
const msa = 'authentication.open-cluster-management.io';
const certificates = 'certificates.k8s.io';
const rbac = 'rbac.authorization.k8s.io';
const leases = 'coordination.k8s.io';
const events = 'events.k8s.io';
const authn = 'authentication.k8s.io';
const authz = 'authorization.k8s.io';
const readWrite = 'get list watch create update patch delete';

/** cluster-gateway's credential Secrets' namespace, where the gateway reads Secrets. */
export const credentialNamespace = defaultCredentialNamespace;

const serviceAccount = (namespace: string, name: string, label: string): HubSubject => ({
  label,
  user: `system:serviceaccount:${namespace}:${name}`,
  groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
});

const clusterSubject = (c: string): HubSubject[] => [
  {
    label: 'registration/work agent',
    user: clusterAgentUser(c, 'agent'),
    groups: [...clusterAgentGroups(c), 'system:authenticated'],
  },
];

const addonSubject = (name: string) => (c: string) => [
  {
    label: `${name} add-on agent`,
    user: addonAgentUser(c, name, 'addon-agent'),
    groups: addonDefaultGroups(c, name),
  },
];

/**
 * What every authenticated hub user may do (kube's system:basic-user, system:discovery,
 * system:public-info-viewer), and every ServiceAccount besides (system:service-account-issuer-discovery).
 * The test subtracts these before comparing, after checking them on identities nothing is bound to.
 */
export const baseline = {
  authenticated: {
    resources: [
      grant(authz, 'selfsubjectaccessreviews selfsubjectrulesreviews', 'create'),
      grant(authn, 'selfsubjectreviews', 'create'),
    ],
    urls: [
      ['get', '/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz /version /version/'],
    ],
  },
  serviceAccounts: {
    resources: [] as Grant[],
    urls: [
      [
        'get',
        '/.well-known/openid-configuration /.well-known/openid-configuration/ /openid/v1/jwks /openid/v1/jwks/',
      ],
    ],
  },
};

export const hubRights: IdentityRights[] = [
  {
    key: 'cluster',
    credential: "a managed cluster's hub credential",
    holder:
      "The cluster's registration identity (`hub-kubeconfig-secret`), which tether's registration, work and in-process ManagedServiceAccount agents share, as OCM's klusterlet does: every grant is bound to the group `system:open-cluster-management:<cluster>` (src/registration/hub/rbac.ts).",
    perCluster: true,
    subjects: clusterSubject,
    everywhere: [
      grant(cluster, 'managedclusters', 'get list watch update patch', ['<cluster>']),
      grant(cluster, 'managedclusters/status', 'patch update', ['<cluster>']),
      grant(certificates, 'certificatesigningrequests', 'create get list watch'),
      grant('register.open-cluster-management.io', 'managedclusters/clientcertificates', 'renew'),
    ],
    ownClusterNamespace: [
      // registration
      grant(leases, 'leases', 'get list watch update'),
      grant(addon, 'managedclusteraddons', 'get list watch'),
      grant(addon, 'managedclusteraddons/status', 'patch update'),
      grant(events, 'events', 'list watch create patch update'),
      // work
      grant(core, 'events', 'create patch update'),
      grant(work, 'manifestworks', 'get list watch update patch delete'),
      grant(work, 'manifestworks/status', 'patch update'),
      // ManagedServiceAccount agent (tether's `…:serviceaccount` RoleBinding)
      grant(msa, 'managedserviceaccounts', 'get list watch update patch'),
      grant(msa, 'managedserviceaccounts/status', 'get update patch'),
      grant(core, 'secrets', readWrite),
    ],
  },
  {
    key: 'cluster:not-accepted',
    credential: "a managed cluster's hub credential while its cluster is not accepted",
    holder:
      'The same credential before the hub accepts its cluster, or after a deny: the hub shrinks its ClusterRole to reading its own ManagedCluster (so the agent sees it is not accepted) and removes its namespace grants (after a deny the work grant stays until its ManifestWorks are gone).',
    perCluster: true,
    notAccepted: true,
    subjects: clusterSubject,
    everywhere: [grant(cluster, 'managedclusters', 'get list watch', ['<cluster>'])],
  },
  {
    key: 'addon:managed-serviceaccount',
    credential: "the managed-serviceaccount add-on's hub credential",
    holder:
      'The managed-serviceaccount add-on agent (`managed-serviceaccount-hub-kubeconfig`): its hubPermissions, a Role in its cluster namespace bound to its per-cluster add-on group.',
    perCluster: true,
    subjects: addonSubject('managed-serviceaccount'),
    everywhere: [],
    ownClusterNamespace: [
      grant(msa, 'managedserviceaccounts', 'get list watch update patch'),
      grant(msa, 'managedserviceaccounts/status', 'get update patch'),
      grant(core, 'secrets', readWrite),
    ],
  },
  {
    key: 'addon:cluster-proxy',
    credential: "the cluster-proxy add-on's hub credential",
    holder:
      'The cluster-proxy add-on agent (proxy-agent): it only proves to the proxy-server which cluster a tunnel belongs to, so it has no hub rights.',
    perCluster: true,
    subjects: addonSubject('cluster-proxy'),
    everywhere: [],
  },
  {
    key: 'addon:cluster-gateway',
    credential: "the cluster-gateway add-on's name",
    holder:
      'The cluster-gateway add-on has no registration, so the hub issues it no credential; listed so that nothing is ever bound to its names.',
    perCluster: true,
    subjects: addonSubject('cluster-gateway'),
    everywhere: [],
  },
  {
    key: 'bootstrap',
    credential: 'the bootstrap credential',
    holder:
      'Every joining cluster: the `agent-registration-bootstrap` ServiceAccount token `tether init` prints, or a bootstrap token of group `system:bootstrappers:managedcluster` (src/registration/bootstrap.ts).',
    perCluster: false,
    subjects: () => [
      serviceAccount(BOOTSTRAP_NAMESPACE, BOOTSTRAP_SERVICE_ACCOUNT, 'ServiceAccount token'),
      {
        label: 'a bootstrap token (any token id)',
        user: 'system:bootstrap:abcdef',
        groups: ['system:bootstrappers', BOOTSTRAP_TOKEN_GROUP, 'system:authenticated'],
      },
    ],
    everywhere: [
      grant(certificates, 'certificatesigningrequests', 'create get list watch'),
      grant(cluster, 'managedclusters', 'get list watch create'),
      grant(cluster, 'managedclustersets/join', 'create'),
      grant(core, 'configmaps', 'get', ['cluster-info', 'kube-root-ca.crt', 'ca-bundle-configmap']),
    ],
  },
  {
    key: 'hub-controllers',
    credential: "the hub controllers' ServiceAccount",
    holder:
      "`tether hub` (registration, placement, the add-on manager and the built-in add-ons' managers) as ServiceAccount `tether-hub-controllers` (src/install/hub-rbac.ts).",
    perCluster: false,
    subjects: () => [serviceAccount(hubNamespace, hubNames.controllers, 'ServiceAccount')],
    everywhere: [
      grant(cluster, 'managedclusters', 'get list watch update patch'),
      grant(cluster, 'managedclusters/status', 'get update patch'),
      grant(cluster, 'managedclustersets', 'get list watch create update patch'),
      grant(cluster, 'managedclustersets/status managedclustersetbindings/status', 'get update patch'),
      grant(cluster, 'managedclustersets/join', 'create', ['default']),
      grant(cluster, 'managedclustersetbindings addonplacementscores', 'get list watch'),
      grant(cluster, 'placements', 'get list watch update patch'),
      grant(cluster, 'placements/status placementdecisions/status', 'get update patch'),
      grant(cluster, 'placements/finalizers', 'update'),
      grant(cluster, 'placementdecisions', readWrite),
      grant(certificates, 'certificatesigningrequests', 'get list watch'),
      grant(certificates, 'certificatesigningrequests/approval', 'update'),
      grant(certificates, 'signers', 'approve', ['kubernetes.io/kube-apiserver-client']),
      grant(core, 'namespaces', readWrite),
      grant(rbac, 'clusterroles clusterrolebindings roles rolebindings', `${readWrite} escalate bind`),
      grant(leases, 'leases', readWrite),
      grant(authz, 'subjectaccessreviews', 'create'),
      grant(work, 'manifestworks', readWrite),
      grant(work, 'manifestworkreplicasets', 'get list watch update patch'),
      grant(work, 'manifestworkreplicasets/status', 'get update patch'),
      grant(work, 'manifestworkreplicasets/finalizers', 'update'),
      grant(addon, 'clustermanagementaddons', 'get list watch create patch'),
      grant(addon, 'clustermanagementaddons/status managedclusteraddons/status', 'get update'),
      grant(addon, 'clustermanagementaddons/finalizers managedclusteraddons/finalizers', 'update'),
      grant(addon, 'managedclusteraddons', 'get list watch create patch delete'),
      grant(addon, 'addondeploymentconfigs', 'get list watch'),
      grant(msa, 'managedserviceaccounts', readWrite),
      grant('multicluster.x-k8s.io', 'clusterprofiles', readWrite),
      grant('multicluster.x-k8s.io', 'clusterprofiles/status', 'get update patch'),
      grant(core, 'events', 'create patch update'),
      grant(events, 'events', 'create patch update'),
    ],
  },
  {
    key: 'proxy-server',
    credential: "the proxy-server's ServiceAccount",
    holder: '`tether proxy-server` as ServiceAccount `tether-proxy-server` (src/install/hub-rbac.ts).',
    perCluster: false,
    subjects: () => [serviceAccount(hubNamespace, hubNames.proxyServer, 'ServiceAccount')],
    everywhere: [
      grant(cluster, 'managedclusters', 'get list watch'),
      grant(addon, 'managedclusteraddons', 'get list watch'),
      grant(authn, 'tokenreviews', 'create'),
      grant(authz, 'subjectaccessreviews', 'create'),
    ],
  },
  {
    key: 'gateway',
    credential: "the gateway's ServiceAccount",
    holder:
      '`tether gateway` (the ClusterGateway aggregated apiserver) as ServiceAccount `tether-gateway` (src/install/hub-rbac.ts), with system:auth-delegator.',
    perCluster: false,
    subjects: () => [serviceAccount(hubNamespace, hubNames.gateway, 'ServiceAccount')],
    everywhere: [
      grant(cluster, 'managedclusters', 'get list watch'),
      grant(core, 'secrets', 'get list watch', ['tether-gateway']),
      grant(core, 'namespaces', 'get list watch'),
      grant(authn, 'tokenreviews', 'create'),
      grant(authz, 'subjectaccessreviews', 'create'),
    ],
    inNamespace: {
      'kube-system': [grant(core, 'configmaps', 'get list watch', ['extension-apiserver-authentication'])],
      [credentialNamespace]: [grant(core, 'secrets', 'get list watch')],
    },
  },
  {
    key: 'gateway-connect',
    credential: "the gateway's CONNECT client certificate",
    holder:
      "The gateway on the proxy-server's CONNECT frontend (user `system:tether:gateway`, from the proxy-client CA); the proxy-server asks the hub for this right with a SubjectAccessReview.",
    perCluster: false,
    subjects: () => [{ label: 'client certificate', user: 'system:tether:gateway', groups: [] }],
    everywhere: [grant(cluster, 'managedclusters/proxy', 'get')],
  },
];

/** The e2e test's name for `identity` (docs/security.md quotes it). */
export function rightsTestName(identity: IdentityRights): string {
  return identity.perCluster
    ? `${identity.credential} holds exactly its listed rights, in its namespace and no other`
    : `${identity.credential} holds exactly its listed rights, cluster-wide and in each namespace`;
}
