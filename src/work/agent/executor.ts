// ManifestWork executors (spec.executor): the permission boundary OCM draws around a work. When a
// work names an executor ServiceAccount, the agent applies a manifest only if that account may do
// on the managed cluster what applying it takes — asked with SubjectAccessReviews on the managed
// apiserver, as the account (user system:serviceaccount:<ns>:<name>, its groups). The agent still
// writes with its own identity; the review is what stops a hub user from reaching, through the
// agent, further than the executor could itself. Verbs asked per manifest:
//   - ReadOnly: get, list, watch (nothing is written);
//   - every other strategy: get, list, watch, create, update, patch, delete;
//   - roles and clusterroles also `escalate`; rolebindings and clusterrolebindings also `bind` on the
//     role they reference — otherwise an executor allowed to create bindings would grant, through the
//     agent, rights it does not hold (the apiserver's own escalation check sees only the agent).
// Grants are cached briefly and boundedly (so hundreds of manifests do not cost hundreds of reviews
// on every resync); refusals are not cached, so a fixed RBAC takes effect on the next retry.
// Works without an executor are applied with the agent's rights, as in OCM.
import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { UpdateStrategyType } from '../../api/index.ts';

export interface ExecutorServiceAccount {
  namespace: string;
  name: string;
}

/** What one manifest touches on the managed cluster. */
export interface ExecutorTarget {
  group: string;
  version: string;
  resource: string;
  namespace?: string;
  name: string;
  strategy: UpdateStrategyType;
  /** the manifest as sent (roleRef of bindings is read from it) */
  manifest: Record<string, unknown>;
}

/** One SubjectAccessReview's resource attributes. */
export interface ExecutorAccess {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
}

export interface ExecutorAuthorizerOptions {
  /** how long a granted review is trusted (default 60 s) */
  allowTtlMs?: number;
  /** most cached grants (default 10 000); the oldest go first */
  maxEntries?: number;
}

const readVerbs = ['get', 'list', 'watch'];
const writeVerbs = [...readVerbs, 'create', 'update', 'patch', 'delete'];
const rbacGroup = 'rbac.authorization.k8s.io';

export function executorUser(sa: ExecutorServiceAccount): string {
  return `system:serviceaccount:${sa.namespace}:${sa.name}`;
}

/** The groups the apiserver gives a ServiceAccount's tokens. */
export function executorGroups(sa: ExecutorServiceAccount): string[] {
  return ['system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`, 'system:authenticated'];
}

/** Every access applying `target` needs (pure; see the header for the rules). */
export function requiredAccess(target: ExecutorTarget): ExecutorAccess[] {
  const verbs = target.strategy === UpdateStrategyType.ReadOnly ? readVerbs : writeVerbs;
  const on = {
    group: target.group,
    resource: target.resource,
    namespace: target.namespace,
    name: target.name,
  };
  const access: ExecutorAccess[] = verbs.map((verb) => ({ verb, ...on }));
  if (target.strategy === UpdateStrategyType.ReadOnly || target.group !== rbacGroup) return access;
  if (target.resource === 'roles' || target.resource === 'clusterroles') {
    access.push({ verb: 'escalate', ...on });
  }
  if (target.resource === 'rolebindings' || target.resource === 'clusterrolebindings') {
    const roleRef = (target.manifest.roleRef ?? {}) as { kind?: unknown; name?: unknown };
    const kind = roleRef.kind === 'Role' ? 'roles' : 'clusterroles';
    const roleNamespace = kind === 'roles' ? target.namespace : undefined;
    access.push({
      verb: 'bind',
      group: rbacGroup,
      resource: kind,
      namespace: roleNamespace,
      name: typeof roleRef.name === 'string' ? roleRef.name : '',
    });
  }
  return access;
}

function describe(a: ExecutorAccess): string {
  const where = a.namespace ? ` in namespace ${a.namespace}` : '';
  return `${a.verb} ${a.group ? `${a.resource}.${a.group}` : a.resource} ${a.name ?? ''}${where}`.trim();
}

export class ExecutorAuthorizer {
  private readonly api: AuthorizationV1Api;
  private readonly granted = new Map<string, number>();
  private readonly allowTtlMs: number;
  private readonly maxEntries: number;

  constructor(managedKubeConfig: KubeConfig, opts: ExecutorAuthorizerOptions = {}) {
    this.api = managedKubeConfig.makeApiClient(AuthorizationV1Api);
    this.allowTtlMs = opts.allowTtlMs ?? 60_000;
    this.maxEntries = opts.maxEntries ?? 10_000;
  }

  /**
   * Undefined when `sa` may apply `target`; otherwise why not (the manifest's Applied message).
   * A review that cannot be asked throws: the manifest fails and is retried like any apply error.
   */
  async refusal(sa: ExecutorServiceAccount, target: ExecutorTarget): Promise<string | undefined> {
    const needed = requiredAccess(target);
    const answers = await Promise.all(needed.map((access) => this.allowed(sa, access)));
    const denied = needed.filter((_, i) => !answers[i]);
    if (denied.length === 0) return undefined;
    const where = target.namespace ? `${target.namespace} ${target.name}` : target.name;
    return (
      `not allowed to apply the resource ${target.group} ${target.resource}, ${where}: ` +
      `executor ${executorUser(sa)} may not ${denied.map(describe).join(', ')}`
    );
  }

  private async allowed(sa: ExecutorServiceAccount, access: ExecutorAccess): Promise<boolean> {
    const key = JSON.stringify([sa.namespace, sa.name, access]);
    const now = Date.now();
    const expires = this.granted.get(key);
    if (expires !== undefined && expires > now) return true;
    if (expires !== undefined) this.granted.delete(key);
    const review = await this.api.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: executorUser(sa),
          groups: executorGroups(sa),
          resourceAttributes: {
            verb: access.verb,
            group: access.group,
            resource: access.resource,
            ...(access.namespace ? { namespace: access.namespace } : {}),
            ...(access.name ? { name: access.name } : {}),
          },
        },
      },
    });
    const allowed = review.status?.allowed === true && review.status.denied !== true;
    if (allowed) {
      if (this.granted.size >= this.maxEntries) {
        const oldest = this.granted.keys().next().value;
        if (oldest !== undefined) this.granted.delete(oldest);
      }
      this.granted.set(key, now + this.allowTtlMs);
    }
    return allowed;
  }
}
