// The `managed-serviceaccount` addon (OCM's name): tether's ManagedServiceAccount agent
// (src/serviceaccount/agent) delivered as Deployment `managed-serviceaccount-addon-agent`, running
// `tether serviceaccount-agent` with the addon's own hub credential (`managed-serviceaccount-hub-kubeconfig`)
// instead of the cluster's registration identity. On the hub that identity may touch only its
// cluster namespace's ManagedServiceAccounts and create their token Secrets (the rules `tether
// agent`'s identity gets, src/serviceaccount/rbac.ts; the hub's ManagedServiceAccount controller
// grants the existing token Secrets by name to both identities); on the managed cluster its ServiceAccount may manage
// ServiceAccounts and request their tokens in the install namespace, read that namespace and review
// tokens — nothing else. Available follows the Deployment. On a cluster whose klusterlet agent hosts
// the addon in-process (src/api/addon-in-process.ts) there is no Deployment, ServiceAccount or RBAC:
// ConfigMap `managed-serviceaccount-in-process` only, and Available follows the agent's Lease. With a
// user-server (cluster-proxy's `/<cluster>/…` endpoint on the hub), the token Secrets' kubeconfig
// points at `<url>/<cluster>` with its CA: keys of that ConfigMap in-process, otherwise flags and
// ConfigMap `managed-serviceaccount-user-server` (key ca.crt) mounted into the Deployment. Hosted
// mode (OCM's hosting-cluster-name annotation): the Deployment runs on the hosting cluster in the
// hosted klusterlet's namespace and works on the managed cluster with Secret
// `managed-serviceaccount-managed-kubeconfig` there (the hosted klusterlet's own managed
// credential); the managed cluster gets only OCM's add-on namespace for the ServiceAccounts. Pure:
// options → AgentAddon.
import type { KubernetesObject, V1PolicyRule } from '@kubernetes/client-node';
import { hostsInProcess, InProcessConfigKey } from '../../api/addon-in-process.ts';
import { deployment, type PullPolicy } from '../../kube/workload.ts';
import { managedServiceAccountAddonName, serviceAccountAgentHubRules } from '../../serviceaccount/rbac.ts';
import { addOnDeploymentConfigKind } from '../hub/config/references.ts';
import { sharedInstallNamespace } from '../hub/deploy/work.ts';
import { hubKubeconfigMountPath } from '../sdk/agent.ts';
import type { AddonRenderContext, AgentAddon } from '../sdk/types.ts';
import { defaultAddonInstallNamespace } from '../sdk/types.ts';
import {
  agentServiceAccount,
  type BuiltinAddonMeta,
  builtinAddonHealth,
  caConfigMap,
  forwardProxyCaArgs,
  hubKubeconfigMount,
  inProcessConfigMap,
  managedKubeconfigMount,
  managedKubeconfigMountPath,
  onHostingCluster,
  withPodSpec,
} from './agent-objects.ts';

export { managedServiceAccountAddonName };

/** The user-server as hub clients reach it: https://host:port (the cluster name is appended) and its CA. */
export interface UserServerEndpoint {
  url: string;
  caPem: string;
}

export interface ManagedServiceAccountAddonOptions {
  /** the tether image */
  image: string;
  imagePullPolicy?: PullPolicy;
  /** where the token Secrets' kubeconfig points (default: the managed apiserver) */
  userServer?: UserServerEndpoint;
}

/** Names of what the addon puts on a managed cluster (OCM's where OCM has them). */
export const managedServiceAccountNames = {
  deployment: 'managed-serviceaccount-addon-agent',
  serviceAccount: 'managed-serviceaccount',
  /** Role/RoleBinding in the install namespace, ClusterRole/ClusterRoleBinding for the rest */
  rbac: 'open-cluster-management:managed-serviceaccount:addon-agent',
  /** ConfigMap with the user-server's CA (key ca.crt), mounted into the Deployment */
  userServerCa: 'managed-serviceaccount-user-server',
} as const;

/** Where the Deployment mounts ConfigMap `managed-serviceaccount-user-server`, and its key. */
const userServerCaMountPath = '/etc/tether/user-server-ca';
const userServerCaKey = 'ca.crt';

/** The agent's ops port in the pod. */
export const managedServiceAccountOpsPort = 8094;

/** What the agent's identity may do in its cluster's namespace on the hub. */
export function managedServiceAccountHubPermissions(): V1PolicyRule[] {
  return serviceAccountAgentHubRules.map((r) => ({
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
  }));
}

function rbac(ns: string): KubernetesObject[] {
  const name = managedServiceAccountNames.rbac;
  const subjects = [
    { kind: 'ServiceAccount', name: managedServiceAccountNames.serviceAccount, namespace: ns },
  ];
  const rbacGroup = 'rbac.authorization.k8s.io';
  return [
    {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'Role',
      metadata: { name, namespace: ns },
      rules: [
        {
          apiGroups: [''],
          resources: ['serviceaccounts'],
          verbs: ['get', 'list', 'watch', 'create', 'delete'],
        },
        { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
      ],
    },
    {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'RoleBinding',
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: rbacGroup, kind: 'Role', name },
      subjects,
    },
    {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        // the agent checks its namespace exists (the work created it)
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get'], resourceNames: [ns] },
        { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      ],
    },
    {
      apiVersion: `${rbacGroup}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name },
      subjects,
    },
  ] as unknown as KubernetesObject[];
}

/** The user-server URL of `cluster`: the first path segment names the cluster. */
export function userServerClusterUrl(userServer: UserServerEndpoint, cluster: string): string {
  return `${userServer.url.replace(/\/+$/, '')}/${cluster}`;
}

function manifests(o: ManagedServiceAccountAddonOptions, ctx: AddonRenderContext): KubernetesObject[] {
  const ns = ctx.installNamespace;
  const cluster = ctx.cluster.metadata?.name ?? '';
  const userServer = o.userServer;
  if (ctx.installMode === 'Default' && hostsInProcess(ctx.cluster, managedServiceAccountAddonName)) {
    // the klusterlet agent runs it with the addon's hub credential and its own cluster credential
    const data: Record<string, string> = userServer
      ? {
          [InProcessConfigKey.KubeconfigServerUrl]: userServerClusterUrl(userServer, cluster),
          [InProcessConfigKey.KubeconfigCaCert]: userServer.caPem,
        }
      : {};
    return [sharedInstallNamespace(ns), inProcessConfigMap(managedServiceAccountAddonName, ns, data)];
  }
  const userServerCaFile = `${userServerCaMountPath}/${userServerCaKey}`;
  // Hosted mode: the agent runs on the hosting cluster and manages ServiceAccounts in OCM's default
  // add-on namespace of the managed cluster through `managed-serviceaccount-managed-kubeconfig`.
  const hosted = ctx.installMode === 'Hosted';
  const saNamespace = hosted ? defaultAddonInstallNamespace : ns;
  const agent = deployment({
    name: managedServiceAccountNames.deployment,
    namespace: ns,
    image: o.image,
    imagePullPolicy: o.imagePullPolicy ?? 'IfNotPresent',
    serviceAccount: managedServiceAccountNames.serviceAccount,
    // one writer per cluster: two would race on the same tokens and Secrets
    replicas: 1,
    strategy: 'Recreate',
    opsPort: managedServiceAccountOpsPort,
    args: [
      'serviceaccount-agent',
      `--cluster-name=${cluster}`,
      `--hub-kubeconfig=${hubKubeconfigMountPath}/kubeconfig`,
      `--install-namespace=${saNamespace}`,
      ...(hosted ? [`--kubeconfig=${managedKubeconfigMountPath}/kubeconfig`] : []),
      ...forwardProxyCaArgs(ctx),
      ...(userServer
        ? [
            `--kubeconfig-server-url=${userServerClusterUrl(userServer, cluster)}`,
            `--kubeconfig-ca-file=${userServerCaFile}`,
          ]
        : []),
      `--ops-port=${managedServiceAccountOpsPort}`,
      '--ops-bind-address=0.0.0.0',
    ],
    mounts: [
      hubKubeconfigMount(managedServiceAccountAddonName),
      ...(hosted ? [managedKubeconfigMount(managedServiceAccountAddonName)] : []),
      ...(userServer
        ? [
            {
              kind: 'ConfigMap' as const,
              name: managedServiceAccountNames.userServerCa,
              mountPath: userServerCaMountPath,
            },
          ]
        : []),
    ],
  });
  // its own ConfigMap, not `<addon>-in-process`: that one's presence makes the klusterlet agent host the addon
  const userServerCa = userServer
    ? [caConfigMap(managedServiceAccountNames.userServerCa, ns, userServer.caPem)]
    : [];
  if (hosted) {
    return [
      sharedInstallNamespace(saNamespace),
      ...[
        ...userServerCa,
        agentServiceAccount(managedServiceAccountNames.serviceAccount, ns, false),
        withPodSpec(agent, { automountServiceAccountToken: false }),
      ].map(onHostingCluster),
    ];
  }
  return [
    sharedInstallNamespace(ns),
    ...userServerCa,
    agentServiceAccount(managedServiceAccountNames.serviceAccount, ns, true),
    ...rbac(ns),
    agent,
  ];
}

/** What the hub shows of the addon (its ClusterManagementAddOn), without any option. */
export const managedServiceAccountAddonMeta = {
  name: managedServiceAccountAddonName,
  displayName: 'managed-serviceaccount',
  description:
    'ManagedServiceAccount agent: a ServiceAccount per ManagedServiceAccount, its token projected to the hub',
  supportedConfigs: [addOnDeploymentConfigKind],
} as const satisfies BuiltinAddonMeta;

/** The managed-serviceaccount addon for an AddonManager. */
export function managedServiceAccountAddon(o: ManagedServiceAccountAddonOptions): AgentAddon {
  return {
    ...managedServiceAccountAddonMeta,
    supportedConfigs: [{ ...addOnDeploymentConfigKind }],
    manifests: (ctx) => manifests(o, ctx),
    // kube-apiserver-client with OCM's default subject (the manager's default), approved as OCM's
    // managed-serviceaccount does (ApprovalAllCSRs) once the manager's own checks passed.
    registration: { hubPermissions: () => managedServiceAccountHubPermissions() },
    health: { type: 'DeploymentAvailability' },
    healthFor: (cluster) => builtinAddonHealth(managedServiceAccountAddonName, cluster),
    hostedMode: true,
  };
}
