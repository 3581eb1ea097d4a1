// Built-in add-on agents hosted inside the klusterlet agent's process (`tether agent
// --in-process-addons`), and the handshake between the two ends, in names both use. Pure.
//
// Why a handshake: the hub must not deploy an add-on's Deployment to a cluster whose agent already
// runs that add-on, and the agent must not run an add-on the hub still deploys as a Deployment (two
// MSA writers, two tunnels). So:
//   1. the agent says which built-in add-ons it can host: the reserved cluster claim
//      `in-process-addons.tether.dev` (comma-separated names) in its ManagedCluster's status;
//   2. the hub's add-on manager renders such an add-on for that cluster without a Deployment,
//      ServiceAccount or RBAC, with ConfigMap `<addon>-in-process` instead (what the agent needs of
//      the hub's options, e.g. the proxy-server address and CA) and Lease health;
//   3. the agent runs the add-on once that ConfigMap and the add-on's own hub credential (Secret
//      `<addon>-hub-kubeconfig`, written by the registration agent) are in the install namespace.
// The add-on keeps its own hub identity (certificate, Secret, hub RBAC); only the process is shared.
import type { ManagedCluster } from './cluster.ts';

/** The built-in add-ons whose agents a klusterlet agent can run in its own process (OCM's names). */
export const InProcessAddon = {
  ClusterProxy: 'cluster-proxy',
  ManagedServiceAccount: 'managed-serviceaccount',
} as const;

/** Their names, sorted. */
export const inProcessAddonNames: readonly string[] = Object.values(InProcessAddon).sort();

/** The reserved cluster claim an agent lists the built-in add-ons it hosts in. */
export const inProcessAddonsClaim = 'in-process-addons.tether.dev';

/** Label on the ConfigMap the hub renders for an add-on its cluster's agent hosts (value: the add-on). */
export const inProcessAddonLabel = 'addon.tether.dev/in-process';

/** The ConfigMap the hub renders in the install namespace for an in-process add-on. */
export function inProcessConfigMapName(addon: string): string {
  return `${addon}-in-process`;
}

/** Keys of that ConfigMap (each add-on uses those it needs). */
export const InProcessConfigKey = {
  /** cluster-proxy: proxy-server addresses, comma-separated (host:port or wss:// URL) */
  ProxyServer: 'proxy-server',
  /** cluster-proxy: TLS server name on the proxy-server certificate, when it differs from the host */
  ServerName: 'server-name',
  /** cluster-proxy: PEM bundle that verifies the proxy-server */
  CaCert: 'ca.crt',
  /** managed-serviceaccount: server of the token Secrets' kubeconfig (the user-server's `<url>/<cluster>`) */
  KubeconfigServerUrl: 'kubeconfig-server-url',
  /** managed-serviceaccount: PEM CA of that server */
  KubeconfigCaCert: 'kubeconfig-ca.crt',
} as const;

/** Claim value: the names sorted and deduplicated. */
export function inProcessClaimValue(addons: readonly string[]): string {
  return [...new Set(addons)].sort().join(',');
}

/** The built-in add-ons `cluster`'s agent says it hosts (empty for any other agent). */
export function inProcessAddonsOf(cluster: ManagedCluster | undefined): ReadonlySet<string> {
  const claim = cluster?.status?.clusterClaims?.find((c) => c.name === inProcessAddonsClaim);
  const names = (claim?.value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return new Set(names);
}

/** Whether `cluster`'s agent hosts `addon` in its own process. */
export function hostsInProcess(cluster: ManagedCluster | undefined, addon: string): boolean {
  return inProcessAddonsOf(cluster).has(addon);
}
