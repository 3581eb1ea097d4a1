// Authentication and authorization of CONNECT-frontend callers against the hub: TokenReview says
// who a bearer token belongs to; a SubjectAccessReview asks whether a caller — token or client
// certificate alike, with its user and groups — may `get` the `proxy` subresource of the
// ManagedCluster it wants to reach. Answers are cached briefly (bounded) so a burst of connections
// does not become a burst of reviews.
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Caller } from './connect-frontend.ts';

// Like the apiserver's webhook authorizer: remember answers briefly, denials shorter than grants.
const CACHE_TTL_MS = 10_000;
const DENIAL_TTL_MS = 3_000;
const CACHE_MAX = 10_000;

class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires < Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: V, ttlMs = CACHE_TTL_MS): void {
    if (this.entries.size >= CACHE_MAX) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, expires: Date.now() + ttlMs });
  }
}

export function hubTokenAuth(kc: KubeConfig): {
  authenticate: (token: string) => Promise<Caller | undefined>;
  authorize: (caller: Caller, cluster: string) => Promise<boolean>;
} {
  const authn = kc.makeApiClient(AuthenticationV1Api);
  const authz = kc.makeApiClient(AuthorizationV1Api);
  const tokens = new TtlCache<Caller | null>();
  const decisions = new TtlCache<boolean>();
  return {
    async authenticate(token) {
      const { createHash } = await import('node:crypto');
      const key = createHash('sha256').update(token).digest('hex');
      const cached = tokens.get(key);
      if (cached !== undefined) return cached ?? undefined;
      const review = await authn.createTokenReview({ body: { spec: { token } } });
      const caller =
        review.status?.authenticated && review.status.user?.username
          ? { user: review.status.user.username, groups: review.status.user.groups ?? [] }
          : null;
      tokens.set(key, caller, caller ? CACHE_TTL_MS : DENIAL_TTL_MS);
      return caller ?? undefined;
    },
    async authorize(caller, cluster) {
      const key = `${caller.user}\n${caller.groups.join(',')}\n${cluster}`;
      const cached = decisions.get(key);
      if (cached !== undefined) return cached;
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: caller.user,
            groups: caller.groups,
            resourceAttributes: {
              group: 'cluster.open-cluster-management.io',
              resource: 'managedclusters',
              subresource: 'proxy',
              verb: 'get',
              name: cluster,
            },
          },
        },
      });
      const allowed = review.status?.allowed === true;
      decisions.set(key, allowed, allowed ? CACHE_TTL_MS : DENIAL_TTL_MS);
      return allowed;
    },
  };
}
