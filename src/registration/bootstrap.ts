// Hub-side bootstrap for joining clusters (what `tether init` sets up, with OCM's and clusteradm's
// names): ServiceAccount `open-cluster-management/agent-registration-bootstrap` (clusteradm's `get
// token` asks a TokenRequest of it), ClusterRole `system:open-cluster-management:bootstrap` and
// ClusterRoleBinding `cluster-bootstrap`, binding that ServiceAccount and the bootstrap-token group
// `system:bootstrappers:managedcluster` (clusteradm's `--use-bootstrap-token`). The role is OCM's
// bootstrap role, narrowed where OCM's agents do not need more: ManagedClusters get/list/watch/create
// (no update), CSRs create/get/list/watch, and `get` of only the ConfigMaps a joining agent reads
// (cluster-info, kube-root-ca.crt, ca-bundle-configmap). Unlike OCM's, no `managedclustersets/join`:
// a cluster is put into a set by the hub (the default-set controller, with the hub's rights) or a
// hub user, never by whoever holds a bootstrap token; the hub admission policy
// managedcluster-bootstrap-labels refuses any label such a holder writes.
// Plus building and storing the bootstrap kubeconfig on the managed side (`tether join`).
import { CoreV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { agentNamespace, agentNamespaceLabel, bootstrapHubKubeconfigSecretName } from '../api/index.ts';
import { applyObjects, isAlreadyExists, kubeconfigFromParts, kubeconfigToYaml } from '../kube/index.ts';

export const BOOTSTRAP_NAMESPACE = 'open-cluster-management';
export const BOOTSTRAP_SERVICE_ACCOUNT = 'agent-registration-bootstrap';
export const BOOTSTRAP_CLUSTER_ROLE = 'system:open-cluster-management:bootstrap';
export const BOOTSTRAP_CLUSTER_ROLE_BINDING = 'cluster-bootstrap';
/** The group of bootstrap tokens made for joining clusters (`auth-extra-groups`). */
export const BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:managedcluster';
export const BOOTSTRAP_USER = `system:serviceaccount:${BOOTSTRAP_NAMESPACE}:${BOOTSTRAP_SERVICE_ACCOUNT}`;
/** Lifetime of a bootstrap token when none is asked for (clusteradm's `get token`). */
export const BOOTSTRAP_TOKEN_DEFAULT_SECONDS = 3600;
const FIELD_MANAGER = 'tether-init';

/** The rules of the bootstrap ClusterRole. */
export function bootstrapClusterRoleRules() {
  return [
    {
      apiGroups: ['certificates.k8s.io'],
      resources: ['certificatesigningrequests'],
      verbs: ['create', 'get', 'list', 'watch'],
    },
    {
      apiGroups: ['cluster.open-cluster-management.io'],
      resources: ['managedclusters'],
      verbs: ['get', 'list', 'watch', 'create'],
    },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get'],
      resourceNames: ['cluster-info', 'kube-root-ca.crt', 'ca-bundle-configmap'],
    },
  ];
}

/** The bootstrap ServiceAccount, its namespace and its narrow RBAC, as objects to apply. */
export function bootstrapIdentityObjects(): KubernetesObject[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: BOOTSTRAP_NAMESPACE } },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: BOOTSTRAP_SERVICE_ACCOUNT, namespace: BOOTSTRAP_NAMESPACE },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: BOOTSTRAP_CLUSTER_ROLE },
      rules: bootstrapClusterRoleRules(),
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: BOOTSTRAP_CLUSTER_ROLE_BINDING },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: BOOTSTRAP_CLUSTER_ROLE },
      subjects: [
        { kind: 'ServiceAccount', name: BOOTSTRAP_SERVICE_ACCOUNT, namespace: BOOTSTRAP_NAMESPACE },
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: BOOTSTRAP_TOKEN_GROUP },
      ],
    } as KubernetesObject,
  ];
}

/** Creates (idempotently) the bootstrap ServiceAccount and its narrow RBAC on the hub. */
export async function ensureBootstrapIdentity(hub: KubeConfig): Promise<void> {
  await applyObjects(hub, bootstrapIdentityObjects(), FIELD_MANAGER);
}

/** A bootstrap token (TokenRequest) valid for `expirationSeconds`. */
export async function createBootstrapToken(
  hub: KubeConfig,
  expirationSeconds: number,
): Promise<{ token: string; expires: string }> {
  const tr = await hub.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: BOOTSTRAP_SERVICE_ACCOUNT,
    namespace: BOOTSTRAP_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error('the hub returned no bootstrap token');
  return { token, expires: String(tr.status?.expirationTimestamp ?? '') };
}

export interface BootstrapKubeconfigParts {
  hubApiserver: string;
  hubCaPem: string;
  token: string;
  proxyUrl?: string;
}

export function bootstrapKubeconfigYaml(p: BootstrapKubeconfigParts): string {
  return kubeconfigToYaml(
    kubeconfigFromParts({
      name: 'hub',
      server: p.hubApiserver,
      caPem: p.hubCaPem,
      token: p.token,
      ...(p.proxyUrl ? { proxyUrl: p.proxyUrl } : {}),
    }),
  );
}

/** Stores the bootstrap kubeconfig as Secret `bootstrap-hub-kubeconfig` on the managed cluster. */
export async function writeBootstrapSecret(
  managed: KubeConfig,
  kubeconfigYaml: string,
  namespace = agentNamespace,
  /** the Secret's name (hosted mode stores external-managed-kubeconfig the same way) */
  name = bootstrapHubKubeconfigSecretName,
): Promise<void> {
  const core = managed.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({
      body: { metadata: { name: namespace, labels: { [agentNamespaceLabel]: 'true' } } },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  await applyObjects(
    managed,
    [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace },
        type: 'Opaque',
        stringData: { kubeconfig: kubeconfigYaml },
      } as KubernetesObject,
    ],
    FIELD_MANAGER,
  );
}
