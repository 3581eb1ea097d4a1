// tether's own agents as addons, under OCM's names: `cluster-proxy` (the proxy-agent),
// `managed-serviceaccount` (the ManagedServiceAccount agent) and `cluster-gateway` (the gateway's
// per-cluster ServiceAccount and its RBAC). This module is the lookup `tether hub` and
// `tether install hub-addon` use: the names, the AgentAddon of a name for given options, and what
// the hub shows of each (addOnMeta, supportedConfigs) without options. Pure.
import { InvalidArgumentError } from '../../errors.ts';
import type { PullPolicy } from '../../kube/workload.ts';
import type { AgentAddon } from '../sdk/types.ts';
import type { BuiltinAddonMeta } from './agent-objects.ts';
import {
  type ClusterGatewayAddonOptions,
  clusterGatewayAddon,
  clusterGatewayAddonMeta,
  clusterGatewayAddonName,
} from './cluster-gateway.ts';
import { clusterProxyAddon, clusterProxyAddonMeta, clusterProxyAddonName } from './cluster-proxy.ts';
import {
  managedServiceAccountAddon,
  managedServiceAccountAddonMeta,
  managedServiceAccountAddonName,
  type UserServerEndpoint,
} from './managed-serviceaccount.ts';

export type { BuiltinAddonMeta } from './agent-objects.ts';

export {
  type ClusterGatewayAddonOptions,
  clusterGatewayAddon,
  clusterGatewayAddonName,
} from './cluster-gateway.ts';
export {
  type ClusterGatewayAddonHub,
  startClusterGatewayAddonHub,
} from './cluster-gateway-hub.ts';
export {
  type ClusterProxyAddonOptions,
  clusterProxyAddon,
  clusterProxyAddonName,
  clusterProxyNames,
} from './cluster-proxy.ts';
export {
  type ManagedServiceAccountAddonOptions,
  managedServiceAccountAddon,
  managedServiceAccountAddonName,
  managedServiceAccountHubPermissions,
  managedServiceAccountNames,
  type UserServerEndpoint,
} from './managed-serviceaccount.ts';

/** The built-in addons, in the order they depend on each other. */
export const builtinAddonNames = [
  managedServiceAccountAddonName,
  clusterProxyAddonName,
  clusterGatewayAddonName,
] as const;
export type BuiltinAddonName = (typeof builtinAddonNames)[number];

export function isBuiltinAddonName(name: string): name is BuiltinAddonName {
  return (builtinAddonNames as readonly string[]).includes(name);
}

/** What the hub knows that the built-in addons' agents need. */
export interface BuiltinAddonOptions {
  /** the tether image the agents run */
  image: string;
  imagePullPolicy?: PullPolicy;
  /** cluster-proxy: where agents reach the proxy-server (host:port or wss:// URL) */
  proxyServer?: string;
  /** cluster-proxy: PEM that verifies the proxy-server */
  proxyServerCaPem?: string;
  /** cluster-proxy: TLS server name on the proxy-server certificate, when not the host */
  proxyServerName?: string;
  /** cluster-gateway options */
  gateway?: ClusterGatewayAddonOptions;
  /** managed-serviceaccount: the user-server token Secrets' kubeconfigs point at (`url` without the cluster) */
  userServer?: UserServerEndpoint;
}

/** The AgentAddon called `name`; throws for an unknown name or a missing option it needs. */
export function builtinAddon(name: string, o: BuiltinAddonOptions): AgentAddon {
  const image = { image: o.image, ...(o.imagePullPolicy ? { imagePullPolicy: o.imagePullPolicy } : {}) };
  switch (name) {
    case managedServiceAccountAddonName:
      return managedServiceAccountAddon({ ...image, ...(o.userServer ? { userServer: o.userServer } : {}) });
    case clusterProxyAddonName:
      if (!o.proxyServer || !o.proxyServerCaPem)
        throw new InvalidArgumentError(
          'the cluster-proxy addon needs the proxy-server address agents dial and the CA that verifies it',
        );
      return clusterProxyAddon({
        ...image,
        proxyServer: o.proxyServer,
        proxyServerCaPem: o.proxyServerCaPem,
        ...(o.proxyServerName ? { proxyServerName: o.proxyServerName } : {}),
      });
    case clusterGatewayAddonName:
      return clusterGatewayAddon(o.gateway);
    default:
      throw new InvalidArgumentError(
        `"${name}" is not a built-in addon (built-in: ${builtinAddonNames.join(', ')})`,
      );
  }
}

/**
 * Name, display name, description and supported configs of every built-in addon, for
 * `tether install hub-addon` (its ClusterManagementAddOn) without the options the agents need.
 */
export const builtinAddonMetas: readonly BuiltinAddonMeta[] = [
  managedServiceAccountAddonMeta,
  clusterProxyAddonMeta,
  clusterGatewayAddonMeta,
];
