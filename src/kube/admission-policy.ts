// What tether's ValidatingAdmissionPolicies share: a policy with its Deny binding (failurePolicy
// Fail), and waiting until the apiserver enforces one. Policies are compiled and picked up
// asynchronously, and an admin passes every `authorizer` check, so the wait needs a caller RBAC lets
// through to admission but the policy refuses: a probe user granted the given rules (a ClusterRole
// and ClusterRoleBinding named after it) for the wait only, removed afterwards, also on failure.
// Owns nothing else: the policies' rules and what a probe writes are the callers'.
import { KubeConfig, type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { pollUntil } from '../wait.ts';
import { isForbidden } from './api-errors.ts';
import { applyObjects } from './apply-objects.ts';

/** A ValidatingAdmissionPolicy `name` (failurePolicy Fail) and its binding of the same name (Deny). */
export function admissionPolicy(name: string, spec: Record<string, unknown>): KubernetesObject[] {
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: { failurePolicy: 'Fail', ...spec },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'] },
    },
  ] as unknown as KubernetesObject[];
}

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

export interface RefusalProbe {
  /** the probe user, and the name of its temporary grant */
  user: string;
  /** what RBAC must let it do, so its write reaches admission */
  rules: ProbeRule[];
  /** the write the policy refuses (a dry run), made as the probe user */
  write: (asUser: KubeConfig) => Promise<unknown>;
  /** text of the policy's message: a 403 without it is RBAC not having caught up yet */
  refusal: string;
  description: string;
  timeoutMs: number;
  fieldManager?: string;
}

/** Waits until the probe user's `write` is refused by the policy (throws at the deadline). */
export async function waitUntilEnforced(kc: KubeConfig, probe: RefusalProbe): Promise<void> {
  await withProbeUser(
    kc,
    probe.user,
    probe.rules,
    (asUser) =>
      pollUntil(
        async () => {
          try {
            await probe.write(asUser);
            return false;
          } catch (err) {
            if (isForbidden(err) && String((err as Error).message).includes(probe.refusal)) return true;
            if (isForbidden(err)) return false; // the probe grant is not visible yet
            throw err;
          }
        },
        { timeoutMs: probe.timeoutMs, intervalMs: 100, description: probe.description },
      ),
    probe.fieldManager,
  );
}
