// The `cluster-gateway` addon (OCM's name): what the hub's gateway needs on one managed cluster,
// with nothing running there. The gateway reaches a cluster as ServiceAccount `tether-gateway`,
// whose token the managed-serviceaccount agent projects to the hub for ManagedServiceAccount
// `tether-gateway` in the cluster namespace. So enabling this addon means two things, as OCM's
// cluster-gateway addon manager does them with its own ManagedServiceAccount:
//   - on the managed cluster (this module, delivered by the addon's ManifestWork): the RBAC that
//     lets that ServiceAccount impersonate hub callers and keeps the hub's admins admins there
//     (src/gateway/rbac.ts);
//   - on the hub (cluster-gateway-hub.ts): the ManagedServiceAccount, owned by the
//     ManagedClusterAddOn so that disabling the addon deletes it (and with it the token Secret and,
//     through the agent, the ServiceAccount), and the addon's Available from the token's status.
// A separate addon rather than part of managed-serviceaccount: ManagedServiceAccounts serve any
// user, the gateway is one of them; a cluster can run the first without granting the hub's gateway
// anything. It needs managed-serviceaccount enabled on the same cluster. Pure: options → AgentAddon.
import type { KubernetesObject } from '@kubernetes/client-node';
import { addonAgentNamespace } from '../../api/cluster.ts';
import type { GatewayIdentityMode } from '../../gateway/identity.ts';
import { gatewayManagedClusterRbac } from '../../gateway/rbac.ts';
import { defaultGatewayMsaName } from '../../gateway/types.ts';
import type { AgentAddon } from '../sdk/types.ts';
import type { BuiltinAddonMeta } from './agent-objects.ts';

export const clusterGatewayAddonName = 'cluster-gateway';

export interface ClusterGatewayAddonOptions {
  /**
   * the namespace the managed-serviceaccount agent keeps ServiceAccounts in on managed clusters
   * (its install namespace; default open-cluster-management-agent-addon)
   */
  serviceAccountNamespace?: string;
  /** the ManagedServiceAccount / ServiceAccount name (default tether-gateway, what the gateway reads) */
  serviceAccountName?: string;
  /** as `tether gateway --identity-mode` (default impersonate) */
  identityMode?: GatewayIdentityMode;
  /** with impersonate: the hub's admins are cluster-admin on the managed cluster (default true) */
  hubAdmins?: boolean;
}

/** What the hub shows of the addon (its ClusterManagementAddOn), without any option. */
export const clusterGatewayAddonMeta = {
  name: clusterGatewayAddonName,
  displayName: 'cluster-gateway',
  description: "the hub gateway's access to the cluster: ManagedServiceAccount tether-gateway and its RBAC",
  supportedConfigs: [],
} as const satisfies BuiltinAddonMeta;

/** The cluster-gateway addon for an AddonManager (run startClusterGatewayAddonHub beside it). */
export function clusterGatewayAddon(o: ClusterGatewayAddonOptions = {}): AgentAddon {
  const subject = {
    serviceAccount: o.serviceAccountName ?? defaultGatewayMsaName,
    namespace: o.serviceAccountNamespace ?? addonAgentNamespace,
  };
  return {
    ...clusterGatewayAddonMeta,
    supportedConfigs: [],
    manifests: () =>
      gatewayManagedClusterRbac(subject, {
        ...(o.identityMode ? { identityMode: o.identityMode } : {}),
        ...(o.hubAdmins !== undefined ? { hubAdmins: o.hubAdmins } : {}),
      }) as KubernetesObject[],
    // No agent, hence no hub identity; Available comes from the ManagedServiceAccount's token.
    health: { type: 'Customized' },
  };
}
