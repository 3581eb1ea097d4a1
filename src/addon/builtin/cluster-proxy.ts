// The `cluster-proxy` addon (OCM's name): tether's proxy-agent, delivered to a managed cluster as
// Deployment `cluster-proxy-proxy-agent` in the install namespace. It holds the cluster's tunnel to
// the hub's proxy-server with the addon's own hub certificate: a kube-apiserver-client registration
// with OCM's default subject (system:open-cluster-management:cluster:<c>:addon:cluster-proxy:agent:…),
// signed by the same hub client CA the proxy-server already trusts for agents, so no second CA is
// needed; the proxy-server accepts that identity as an agent of cluster <c>, and no other addon's
// (src/proxy-server/agent-identity.ts). The agent never calls the hub API, so the identity gets no
// hub permissions, and it never calls its own cluster's API (it dials the apiserver's TCP port), so
// its ServiceAccount has no token. Available follows the Deployment. On a cluster whose klusterlet
// agent hosts the addon in-process (src/api/addon-in-process.ts): no Deployment or ServiceAccount,
// ConfigMap `cluster-proxy-in-process` with the proxy-server address, server name and CA instead,
// and Available follows the agent's Lease (renewed while a tunnel is held). Hosted mode (OCM's
// hosting-cluster-name annotation): the same Deployment on the hosting cluster, in the hosted
// klusterlet's namespace, dialling the managed apiserver the klusterlet reports; nothing on the
// managed cluster. Pure: options → AgentAddon.
import type { KubernetesObject } from '@kubernetes/client-node';
import { hostsInProcess, InProcessConfigKey } from '../../api/addon-in-process.ts';
import { deployment, type PullPolicy } from '../../kube/workload.ts';
import { clusterProxyAddonName } from '../../proxy-server/agent-identity.ts';
import { addOnDeploymentConfigKind } from '../hub/config/references.ts';
import { sharedInstallNamespace } from '../hub/deploy/work.ts';
import { hubKubeconfigMountPath } from '../sdk/agent.ts';
import type { AddonRenderContext, AgentAddon } from '../sdk/types.ts';
import {
  agentServiceAccount,
  type BuiltinAddonMeta,
  builtinAddonHealth,
  caConfigMap,
  forwardProxyCaArgs,
  hubKubeconfigMount,
  inProcessConfigMap,
  managedApiserverAddress,
  onHostingCluster,
  withPodSpec,
} from './agent-objects.ts';

export { clusterProxyAddonName };

export interface ClusterProxyAddonOptions {
  /** where agents reach the proxy-server: host:port, or a wss:// URL (several: comma-separated) */
  proxyServer: string;
  /** PEM bundle that verifies the proxy-server's serving certificate */
  proxyServerCaPem: string;
  /** TLS server name to expect on the proxy-server certificate, when it differs from the host */
  proxyServerName?: string;
  /** the tether image */
  image: string;
  imagePullPolicy?: PullPolicy;
  /** proxy-agent replicas per cluster (default 1; each holds its own tunnels) */
  replicas?: number;
}

/** Names of what the addon puts on a managed cluster. */
export const clusterProxyNames = {
  deployment: 'cluster-proxy-proxy-agent',
  serviceAccount: 'cluster-proxy',
  proxyServerCa: 'cluster-proxy-proxy-server-ca',
} as const;

/** The proxy-agent's ops port in the pod (/healthz, /readyz: ready once a tunnel is held). */
export const clusterProxyOpsPort = 8093;

const proxyServerCaDir = '/managed/proxy-server-ca';

function manifests(o: ClusterProxyAddonOptions, ctx: AddonRenderContext): KubernetesObject[] {
  const ns = ctx.installNamespace;
  const cluster = ctx.cluster.metadata?.name ?? '';
  if (ctx.installMode === 'Default' && hostsInProcess(ctx.cluster, clusterProxyAddonName)) {
    const data = {
      [InProcessConfigKey.ProxyServer]: o.proxyServer,
      [InProcessConfigKey.CaCert]: o.proxyServerCaPem,
      ...(o.proxyServerName ? { [InProcessConfigKey.ServerName]: o.proxyServerName } : {}),
    };
    return [sharedInstallNamespace(ns), inProcessConfigMap(clusterProxyAddonName, ns, data)];
  }
  // Hosted mode: everything on the hosting cluster, dialling the managed apiserver its klusterlet
  // reports; the managed cluster gets nothing.
  const hosted = ctx.installMode === 'Hosted';
  const args = [
    'proxy-agent',
    `--cluster-name=${cluster}`,
    ...(hosted ? [`--kube-apiserver=${managedApiserverAddress(ctx.cluster)}`] : []),
    `--proxy-server=${o.proxyServer}`,
    `--cert-file=${hubKubeconfigMountPath}/tls.crt`,
    `--key-file=${hubKubeconfigMountPath}/tls.key`,
    `--hub-ca-file=${proxyServerCaDir}/ca.crt`,
    ...(o.proxyServerName ? [`--server-name=${o.proxyServerName}`] : []),
    ...forwardProxyCaArgs(ctx),
    `--ops-port=${clusterProxyOpsPort}`,
    '--ops-address=0.0.0.0',
  ];
  const agent = deployment({
    name: clusterProxyNames.deployment,
    namespace: ns,
    image: o.image,
    imagePullPolicy: o.imagePullPolicy ?? 'IfNotPresent',
    serviceAccount: clusterProxyNames.serviceAccount,
    replicas: o.replicas ?? 1,
    opsPort: clusterProxyOpsPort,
    args,
    mounts: [
      { ...hubKubeconfigMount(clusterProxyAddonName), items: ['tls.crt', 'tls.key'] },
      { kind: 'ConfigMap', name: clusterProxyNames.proxyServerCa, mountPath: proxyServerCaDir },
    ],
  });
  const objects = [
    agentServiceAccount(clusterProxyNames.serviceAccount, ns, false),
    caConfigMap(clusterProxyNames.proxyServerCa, ns, o.proxyServerCaPem),
    withPodSpec(agent, { automountServiceAccountToken: false }),
  ];
  return hosted ? objects.map(onHostingCluster) : [sharedInstallNamespace(ns), ...objects];
}

/** What the hub shows of the addon (its ClusterManagementAddOn), without any option. */
export const clusterProxyAddonMeta = {
  name: clusterProxyAddonName,
  displayName: 'cluster-proxy',
  description: "tether's proxy-agent: holds the managed cluster's tunnel to the hub's proxy-server",
  supportedConfigs: [addOnDeploymentConfigKind],
} as const satisfies BuiltinAddonMeta;

/** The cluster-proxy addon for an AddonManager. */
export function clusterProxyAddon(o: ClusterProxyAddonOptions): AgentAddon {
  return {
    ...clusterProxyAddonMeta,
    supportedConfigs: [{ ...addOnDeploymentConfigKind }],
    manifests: (ctx) => manifests(o, ctx),
    // kube-apiserver-client with OCM's default subject (the manager's default registration); the
    // identity may do nothing on the hub: it only proves which cluster a tunnel belongs to.
    registration: {
      // as OCM's cluster-proxy: only for a cluster the hub accepts (the proxy-server checks it again)
      approve: (cluster) => cluster.spec?.hubAcceptsClient === true,
    },
    health: { type: 'DeploymentAvailability' },
    healthFor: (cluster) => builtinAddonHealth(clusterProxyAddonName, cluster),
    hostedMode: true,
  };
}
