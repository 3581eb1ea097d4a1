// A probe user for waiting until a ValidatingAdmissionPolicy is enforced: the apiserver compiles and
// picks policies up asynchronously, and an admin passes every `authorizer` check, so the wait needs
// a caller RBAC lets through to admission but the policy refuses. This module grants such a user
// the given rules (a ClusterRole and ClusterRoleBinding named after it) for the wait only, hands
// the caller a kubeconfig impersonating it, and removes the grant afterwards, also on failure.
// Owns nothing else: the policies and what a probe writes are the callers'.
import { KubeConfig, type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { applyObjects } from './apply-objects.ts';

export interface ProbeRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** `kc` with its current user impersonating `user` (client-node sends Impersonate-User). */
export function impersonating(kc: KubeConfig, user: string): KubeConfig {
  const current = kc.getCurrentUser();
  const context = kc.getContextObject(kc.getCurrentContext());
  if (!current || !context) throw new Error('the hub kubeconfig has no current user or context');
  const probe = new KubeConfig();
  probe.loadFromOptions({
    clusters: kc.getClusters(),
    users: [{ ...current, impersonateUser: user }],
    contexts: [context],
    currentContext: context.name,
  });
  return probe;
}

function probeGrant(user: string, rules: ProbeRule[]): KubernetesObject[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: user },
      rules,
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: user },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    } as KubernetesObject,
  ];
}

/**
 * Runs `probe` with a kubeconfig acting as `user`, who holds `rules` while it runs. `kc` must be
 * allowed to write ClusterRoles and ClusterRoleBindings and to impersonate.
 */
export async function withProbeUser<T>(
  kc: KubeConfig,
  user: string,
  rules: ProbeRule[],
  probe: (asUser: KubeConfig) => Promise<T>,
  fieldManager = 'tether',
): Promise<T> {
  const grant = probeGrant(user, rules);
  await applyObjects(kc, grant, fieldManager);
  try {
    return await probe(impersonating(kc, user));
  } finally {
    const api = KubernetesObjectApi.makeApiClient(kc);
    for (const obj of grant.reverse()) await api.delete(obj).catch(() => undefined);
  }
}
