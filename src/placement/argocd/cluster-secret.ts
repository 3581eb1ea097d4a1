// What a GitOpsCluster turns into, as pure functions: the Argo CD cluster Secret per decided cluster,
// the hub RBAC that lets the GitOpsCluster's hub identity through the gateway to exactly those
// clusters, and the ManifestWork that grants that identity its rights on each managed cluster.
//
// Why the Secret's bearer token is a hub ServiceAccount token and not a ManagedServiceAccount
// token: the server Argo CD dials is the tether gateway behind the hub kube-apiserver
// (`/apis/cluster.core.oam.dev/v1alpha1/clustergateways/<c>/proxy`). The hub authenticates every
// request before its aggregator hands it to the gateway, and it answers 401 to a token signed by a
// managed cluster (test/e2e/serviceaccount-gateway.test.ts). So Argo CD presents a hub credential;
// the gateway dials the cluster with the cluster's own ManagedServiceAccount credential and
// impersonates Argo CD's hub identity there under the `cluster:hub:` prefix, which the
// ManifestWork below binds on the managed cluster.
import { createHash } from 'node:crypto';
import {
  apiVersionOf,
  argoCdClusterNameLabel,
  argoCdSecretTypeLabel,
  type GitOpsCluster,
  gitOpsClusterOwnerLabel,
  type ManifestWork,
  manifestWorkResource,
} from '../../api/index.ts';
import { gatewayServerUrl, managedClusterUser } from '../../gateway/index.ts';
import type { KubeObject } from '../../kube/index.ts';

/** Argo CD's cluster config (`config` key of a cluster Secret), the fields tether sets. */
export interface ArgoCdClusterConfig {
  bearerToken: string;
  tlsClientConfig: { insecure: false; caData: string; serverName?: string };
}

/** Where Argo CD reaches the hub and how it verifies it. */
export interface HubEndpoint {
  /** the hub apiserver URL as Argo CD reaches it */
  server: string;
  /** PEM of the CA that signs the hub apiserver's serving certificate */
  caPem: string;
  /** TLS server name when it differs from the URL's host */
  serverName?: string;
}

/** `<namespace>.<name>`: the value of the owner label on everything a GitOpsCluster makes. */
export function gitOpsClusterOwner(g: Pick<GitOpsCluster, 'metadata'>): string {
  return `${g.metadata.namespace}.${g.metadata.name}`;
}

/** Kubernetes names are at most 63 (labels) / 253 characters: long inputs end in a short hash. */
function boundedName(name: string, max: number): string {
  if (name.length <= max) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10);
  return `${name.slice(0, max - 11)}-${hash}`;
}

/** The hub ServiceAccount Argo CD acts as (in the GitOpsCluster's namespace). */
export function argoCdServiceAccountName(g: Pick<GitOpsCluster, 'metadata'>): string {
  return boundedName(`${g.metadata.name}-argocd`, 253);
}

/** The long-lived token Secret of that ServiceAccount (filled by the hub's token controller). */
export function argoCdTokenSecretName(g: Pick<GitOpsCluster, 'metadata'>): string {
  return boundedName(`${g.metadata.name}-argocd-token`, 253);
}

/** The ClusterRole + ClusterRoleBinding on the hub (cluster-scoped, so the namespace is in the name). */
export function gatewayAccessRoleName(g: Pick<GitOpsCluster, 'metadata'>): string {
  return boundedName(`tether:gitopscluster:${g.metadata.namespace}:${g.metadata.name}`, 253);
}

/** Name of the Argo CD cluster Secret of `cluster` (OCM's `<cluster>-cluster-secret`). */
export function argoCdClusterSecretName(cluster: string): string {
  return boundedName(`${cluster}-cluster-secret`, 253);
}

/** Name of the ManifestWork (in the cluster namespace) granting the identity its managed rights. */
export function argoCdWorkName(g: Pick<GitOpsCluster, 'metadata'>): string {
  return boundedName(`gitopscluster-${g.metadata.namespace}-${g.metadata.name}`, 253);
}

/** The hub identity's user name, as the hub authenticates its ServiceAccount token. */
export function argoCdHubUser(g: Pick<GitOpsCluster, 'metadata'>): string {
  return `system:serviceaccount:${g.metadata.namespace}:${argoCdServiceAccountName(g)}`;
}

const b64 = (v: string) => Buffer.from(v, 'utf8').toString('base64');

/** The Argo CD cluster Secret for one decided cluster. */
export function argoCdClusterSecret(
  g: GitOpsCluster,
  cluster: string,
  hub: HubEndpoint,
  token: string,
): KubeObject & { type: string; data: Record<string, string> } {
  const config: ArgoCdClusterConfig = {
    bearerToken: token,
    tlsClientConfig: {
      insecure: false,
      caData: b64(hub.caPem),
      ...(hub.serverName ? { serverName: hub.serverName } : {}),
    },
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: argoCdClusterSecretName(cluster),
      namespace: g.spec.argoServer.argoNamespace,
      labels: {
        [argoCdSecretTypeLabel]: 'cluster',
        [gitOpsClusterOwnerLabel]: boundedName(gitOpsClusterOwner(g), 63),
        [argoCdClusterNameLabel]: boundedName(cluster, 63),
        // OCM's GitOpsCluster labels its Secrets so; Argo CD users' selectors may use it.
        'apps.open-cluster-management.io/acm-cluster': 'true',
      },
    },
    type: 'Opaque',
    data: {
      name: b64(cluster),
      server: b64(gatewayServerUrl(hub.server, cluster)),
      config: b64(JSON.stringify(config)),
    },
  };
}

/** Hub RBAC: `clustergateways/proxy` for exactly the decided clusters, bound to the ServiceAccount. */
export function gatewayAccessRbac(g: GitOpsCluster, clusters: readonly string[]): KubeObject[] {
  const name = gatewayAccessRoleName(g);
  const labels = { [gitOpsClusterOwnerLabel]: boundedName(gitOpsClusterOwner(g), 63) };
  const resourceNames = [...clusters].sort();
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels },
      // An empty resourceNames list would grant every cluster: no rule at all when none is decided.
      rules:
        resourceNames.length === 0
          ? []
          : [
              {
                apiGroups: ['cluster.core.oam.dev'],
                resources: ['clustergateways/proxy'],
                resourceNames,
                verbs: ['*'],
              },
              {
                apiGroups: ['cluster.core.oam.dev'],
                resources: ['clustergateways'],
                resourceNames,
                verbs: ['get'],
              },
            ],
    } as KubeObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [
        { kind: 'ServiceAccount', name: argoCdServiceAccountName(g), namespace: g.metadata.namespace },
      ],
    } as KubeObject,
  ];
}

/**
 * The ManifestWork binding `managedClusterRole` on the managed cluster to the user the gateway
 * impersonates for Argo CD's hub identity (what `argocd cluster add` grants its own account).
 */
export function argoCdManagedRbacWork(
  g: GitOpsCluster,
  cluster: string,
  managedClusterRole: string,
): Omit<ManifestWork, 'status'> {
  const owner = boundedName(gitOpsClusterOwner(g), 63);
  return {
    apiVersion: apiVersionOf(manifestWorkResource) as ManifestWork['apiVersion'],
    kind: 'ManifestWork',
    metadata: { name: argoCdWorkName(g), namespace: cluster, labels: { [gitOpsClusterOwnerLabel]: owner } },
    spec: {
      workload: {
        manifests: [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: boundedName(`tether:argocd:${gitOpsClusterOwner(g)}`, 253) },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: managedClusterRole },
            subjects: [
              {
                apiGroup: 'rbac.authorization.k8s.io',
                kind: 'User',
                name: managedClusterUser(argoCdHubUser(g)),
              },
            ],
          },
        ],
      },
    },
  };
}
