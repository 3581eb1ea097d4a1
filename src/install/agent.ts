// What `tether join` installs on a managed cluster: namespace open-cluster-management-agent, the
// `bootstrap-hub-kubeconfig` Secret, the CA that verifies the hub's proxy-server, and one
// Deployment `klusterlet-agent` (OCM's singleton mode: registration, work, ManagedServiceAccount
// and proxy-agent in one process) with its ServiceAccount. Where the hub delivers the
// managed-serviceaccount and cluster-proxy addons instead, the klusterlet hosts their agents in its
// own process by default (inProcessAddons; each with the add-on's own hub identity), or, with
// inProcessAddons empty, they run as addon pods. The agent keeps its hub credential in
// `hub-kubeconfig-secret` (OCM's shape), so a restarted or rescheduled pod resumes with the same
// identity and certificate.
//
// RBAC: the work agent applies whatever ManifestWorks deliver (any kind, any namespace), so the
// agent is bound to cluster-admin on its own cluster, as OCM's klusterlet work agent effectively
// is; what it may do on the *hub* is the hub's narrow per-cluster RBAC.
//
// Several hubs: a second agent on the same cluster, joined to another hub, lives in a namespace of
// its own (`tether join --agent-namespace`) with its own binding; no ManifestWork of either hub may
// touch either agent's namespace (src/work/agent/agent-boundary.ts).
//
// Hosted mode (OCM's `--mode hosted`): the same Deployment runs on a *hosting* cluster, in
// namespace `klusterlet-<cluster>`, and reaches the managed cluster through the kubeconfig in Secret
// `external-managed-kubeconfig` (`tether agent --spoke-kubeconfig`). Its rights on the managed
// cluster are that kubeconfig's; on the hosting cluster it gets a Role in its own namespace only
// (its Secrets and Events), no cluster-wide binding. Pure data.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  agentHubHashAnnotation,
  agentNamespaceLabel,
  hostedAgentNamespace,
  hubHashOf,
} from '../api/index.ts';
import { parseKubeconfigYaml } from '../kube/kubeconfig.ts';
import { deployment, type ImageOptions, meta } from '../kube/workload.ts';
import { hubServerOf } from '../registration/agent/bootstrap-kubeconfig.ts';
import { agentNames, agentNamespace, bootstrapHubKubeconfigSecretName, ports } from './names.ts';

export interface AgentInstallOptions extends ImageOptions {
  clusterName: string;
  /** the bootstrap kubeconfig (token, hub CA, proxy-url) */
  bootstrapKubeconfig: string;
  /** host:port of the proxy-server's agent endpoint; none = no tunnel */
  proxyServer?: string;
  /** PEM of the CA that verifies the proxy-server (required with proxyServer) */
  proxyServerCaPem?: string;
  /** HTTP CONNECT forward proxy for every hub connection */
  proxyUrl?: string;
  /** PEM bundle for TLS to an https:// forward proxy */
  proxyCaPem?: string;
  /** run the ManagedServiceAccount agent in the klusterlet (default true; false: the addon runs it) */
  serviceAccountAgent?: boolean;
  /** built-in add-ons the agent hosts in-process (--in-process-addons); default none */
  inProcessAddons?: readonly string[];
  /** the agent's --status-sync-interval (unset: the agent's default, 30 s) */
  statusSyncIntervalSeconds?: number;
  /** the agent's --addon-lease-duration (unset: the agent's default, OCM's 60 s) */
  addonLeaseDurationSeconds?: number;
  /** the agent's --addon-lease-sync-interval (unset: the agent's default, OCM's 30 s) */
  addonLeaseSyncIntervalSeconds?: number;
  /**
   * hosted mode: the kubeconfig (embedded credentials) the agent uses for the managed cluster; the
   * objects here then go to the hosting cluster, in `namespace`
   */
  managedClusterKubeconfig?: string;
  /** the agent's namespace (default open-cluster-management-agent; hosted: klusterlet-<cluster>) */
  namespace?: string;
}

/** OCM's hosted-mode Secret holding the managed cluster's kubeconfig (key `kubeconfig`). */
export const externalManagedKubeconfigSecretName = 'external-managed-kubeconfig';

export { hostedAgentNamespace };

/** The hub apiserver URL of a bootstrap kubeconfig, as the agent will use (and hash) it. */
export function bootstrapServer(kubeconfigYaml: string): string {
  const cluster = parseKubeconfigYaml(kubeconfigYaml, 'the bootstrap kubeconfig').getCurrentCluster();
  if (!cluster?.server) throw new Error('the bootstrap kubeconfig names no hub apiserver');
  return hubServerOf(cluster);
}

/** The agent's namespace for these options. */
export function agentNamespaceOf(
  o: Pick<AgentInstallOptions, 'namespace' | 'managedClusterKubeconfig' | 'clusterName'>,
): string {
  return o.namespace ?? (o.managedClusterKubeconfig ? hostedAgentNamespace(o.clusterName) : agentNamespace);
}

const component = agentNames.deployment;
const mountDir = '/etc/tether';

function secret(name: string, namespace: string, data: Record<string, string>): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(name, namespace, component),
    type: 'Opaque',
    stringData: data,
  } as KubernetesObject;
}

/** Hosted mode: the agent's rights on the hosting cluster, its own namespace only. */
function hostedRbac(namespace: string, sa: string): KubernetesObject[] {
  const name = `open-cluster-management:${component}`;
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(name, namespace, component),
      rules: [
        // bootstrap-hub-kubeconfig (read), hub-kubeconfig-secret (read, write; an informer watches
        // it), and the hosted add-ons' `<addon>-hub-kubeconfig` / `<addon>-managed-kubeconfig`
        // (written, and deleted when the add-on or its hosted mode goes)
        {
          apiGroups: [''],
          resources: ['secrets'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
        // the work agent's Events
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'update', 'patch'] },
      ],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(name, namespace, component),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
    } as KubernetesObject,
  ];
}

export function agentManifests(o: AgentInstallOptions): KubernetesObject[] {
  const sa = agentNames.serviceAccount;
  const namespace = agentNamespaceOf(o);
  const hosted = o.managedClusterKubeconfig !== undefined;
  const args = [
    'agent',
    `--cluster-name=${o.clusterName}`,
    `--agent-namespace=${namespace}`,
    `--ops-port=${ports.agentOps}`,
    '--ops-bind-address=0.0.0.0',
  ];
  const mounts: Parameters<typeof deployment>[0]['mounts'] = [];
  if (hosted) {
    args.push(`--spoke-kubeconfig=${mountDir}/spoke/kubeconfig`);
    mounts.push({
      kind: 'Secret',
      name: externalManagedKubeconfigSecretName,
      mountPath: `${mountDir}/spoke`,
    });
  }
  if (o.proxyUrl) args.push(`--proxy-url=${o.proxyUrl}`);
  if (o.serviceAccountAgent === false) args.push('--no-serviceaccount');
  if (o.inProcessAddons?.length) args.push(`--in-process-addons=${o.inProcessAddons.join(',')}`);
  if (o.statusSyncIntervalSeconds !== undefined)
    args.push(`--status-sync-interval=${o.statusSyncIntervalSeconds}`);
  if (o.addonLeaseDurationSeconds !== undefined)
    args.push(`--addon-lease-duration=${o.addonLeaseDurationSeconds}`);
  if (o.addonLeaseSyncIntervalSeconds !== undefined)
    args.push(`--addon-lease-sync-interval=${o.addonLeaseSyncIntervalSeconds}`);
  if (o.proxyServer) {
    args.push(`--proxy-server=${o.proxyServer}`, `--hub-ca-file=${mountDir}/proxy-server-ca/ca.crt`);
    mounts.push({ kind: 'Secret', name: agentNames.proxyServerCa, mountPath: `${mountDir}/proxy-server-ca` });
  }
  if (o.proxyCaPem) {
    args.push(`--proxy-ca-file=${mountDir}/forward-proxy-ca/ca.crt`);
    mounts.push({
      kind: 'Secret',
      name: agentNames.forwardProxyCa,
      mountPath: `${mountDir}/forward-proxy-ca`,
    });
  }
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        ...meta(namespace, undefined, component),
        labels: { ...meta(namespace, undefined, component).labels, [agentNamespaceLabel]: 'true' },
        // hosted: the hosting cluster's work agent of this same hub may deploy the cluster's hosted
        // add-ons here (src/work/agent/agent-boundary.ts); no other hub's works may
        // (no bootstrap kubeconfig: the manifests are only listed, for removal)
        ...(hosted && o.bootstrapKubeconfig.trim() !== ''
          ? { annotations: { [agentHubHashAnnotation]: hubHashOf(bootstrapServer(o.bootstrapKubeconfig)) } }
          : {}),
      },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: meta(sa, namespace, component),
    } as KubernetesObject,
    ...(hosted
      ? hostedRbac(namespace, sa)
      : [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            // one per agent namespace: a second agent, joined to a second hub, has its own
            metadata: meta(
              namespace === agentNamespace
                ? `open-cluster-management:${component}`
                : `open-cluster-management:${component}:${namespace}`,
              undefined,
              component,
            ),
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
            subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
          } as KubernetesObject,
        ]),
    secret(bootstrapHubKubeconfigSecretName, namespace, { kubeconfig: o.bootstrapKubeconfig }),
    ...(hosted
      ? [
          secret(externalManagedKubeconfigSecretName, namespace, {
            kubeconfig: o.managedClusterKubeconfig ?? '',
          }),
        ]
      : []),
    ...(o.proxyServer && o.proxyServerCaPem
      ? [secret(agentNames.proxyServerCa, namespace, { 'ca.crt': o.proxyServerCaPem })]
      : []),
    ...(o.proxyCaPem ? [secret(agentNames.forwardProxyCa, namespace, { 'ca.crt': o.proxyCaPem })] : []),
    deployment({
      image: o.image,
      imagePullPolicy: o.imagePullPolicy,
      name: component,
      namespace,
      serviceAccount: sa,
      // one agent per cluster: its identity (CSR, lease) is one
      replicas: 1,
      strategy: 'Recreate',
      opsPort: ports.agentOps,
      args,
      mounts,
    }),
  ];
}
