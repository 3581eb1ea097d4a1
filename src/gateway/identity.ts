// Who a hub caller is on a managed cluster. By default the gateway impersonates the caller there
// under a prefix, as OCM's cluster-proxy does: hub user `alice` in hub group `devs` acts on the
// managed cluster as user `cluster:hub:alice` in group `cluster:hub:devs`. The prefix keeps hub and
// managed identities apart: a hub user named `system:admin`, or in hub group `system:masters`, gets
// nothing on a managed cluster unless that cluster binds the prefixed name. Extras (X-Remote-Extra-*,
// e.g. `authentication.kubernetes.io/credential-id`) are used on the hub only and never impersonated:
// RBAC does not read them, and impersonating them would need `impersonate` on every `userextras/<key>`.
// The managed apiserver adds its own `system:authenticated` to every impersonated user.
//
// The shared identity mode (every caller acts as the gateway's own credential, cluster-gateway's
// default) stays available as an explicit opt-in of the gateway process.
import type { Caller } from './front-proxy.ts';

/** Prefix of every hub identity impersonated on a managed cluster. */
export const hubIdentityPrefix = 'cluster:hub:';

/** The hub's system:masters on a managed cluster; `tether up` binds it to cluster-admin there. */
export const hubAdminsGroup = `${hubIdentityPrefix}system:masters`;

/**
 * `impersonate` (default): the caller, prefixed, is who acts on the managed cluster.
 * `shared`: every caller acts as the gateway's credential on every cluster whose ClusterGateway does
 * not ask for impersonation; hub RBAC on `clustergateways/proxy` is then the only check.
 */
export type GatewayIdentityMode = 'impersonate' | 'shared';

export const gatewayIdentityModes: readonly GatewayIdentityMode[] = ['impersonate', 'shared'];

/** The user name a hub user has on a managed cluster. */
export function managedClusterUser(hubUser: string): string {
  return `${hubIdentityPrefix}${hubUser}`;
}

/** The group name a hub group has on a managed cluster. */
export function managedClusterGroup(hubGroup: string): string {
  return `${hubIdentityPrefix}${hubGroup}`;
}

/** Impersonate-User / Impersonate-Group headers that make the managed apiserver act as the caller. */
export function impersonationHeaders(caller: Caller): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {
    'impersonate-user': managedClusterUser(caller.user),
  };
  const groups = [...new Set(caller.groups)].map(managedClusterGroup);
  if (groups.length > 0) headers['impersonate-group'] = groups;
  return headers;
}
