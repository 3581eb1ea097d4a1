// The gateway's SubjectAccessReview cache against the real hub: a grant is reused for at most its
// TTL, so a revoked grant stops working within that bound (and is still served from the cache
// before it, which is what makes the cache worth having); the cache never holds more decisions
// than its limit.
import { AuthorizationV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { type AccessRequest, SubjectAccessReviewAuthorizer } from '../../src/gateway/authorizer.ts';
import type { Caller } from '../../src/gateway/front-proxy.ts';
import { gatewayGroup, gatewayVersion } from '../../src/gateway/types.ts';
import { pollUntil } from '../../src/wait.ts';
import { hubKc } from './fixtures/gateway.ts';
import { uniqueName } from './fixtures/helpers.ts';

const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
const sar = hubKc.makeApiClient(AuthorizationV1Api);
const name = uniqueName('gw-authz-cache');
const caller: Caller = { user: `${name}-user`, groups: ['system:authenticated'], extra: {} };
const access: AccessRequest = { verb: 'get', subresource: 'proxy', name: 'cluster-a' };

afterAll(async () => {
  await rbac.deleteClusterRoleBinding({ name }).catch(() => {});
  await rbac.deleteClusterRole({ name }).catch(() => {});
});

/** What the hub answers right now, asked without any cache. */
async function hubAllows(): Promise<boolean> {
  const r = await sar.createSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: caller.user,
        groups: caller.groups,
        resourceAttributes: {
          group: gatewayGroup,
          version: gatewayVersion,
          resource: 'clustergateways',
          subresource: 'proxy',
          verb: 'get',
          name: 'cluster-a',
        },
      },
    },
  });
  return r.status?.allowed === true;
}

describe('the gateway authorization cache', () => {
  it('a revoked grant is served from the cache only until its TTL, then denied', async () => {
    const allowTtlMs = 4000;
    const authz = new SubjectAccessReviewAuthorizer(hubKc, { allowTtlMs, denyTtlMs: 200 });
    await rbac.createClusterRole({
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: [gatewayGroup],
            resources: ['clustergateways/proxy'],
            resourceNames: ['cluster-a'],
            verbs: ['get'],
          },
        ],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: caller.user }],
      },
    });
    await pollUntil(() => hubAllows(), { timeoutMs: 30_000, description: 'the hub to grant the caller' });

    const asked = Date.now();
    expect((await authz.authorize(caller, access)).allowed).toBe(true);
    const answered = Date.now();

    await rbac.deleteClusterRoleBinding({ name });
    await pollUntil(async () => !(await hubAllows()), {
      timeoutMs: 30_000,
      description: 'the hub to stop granting the caller',
    });
    // Inside the TTL the cached grant still answers (nothing asked the hub again).
    if (Date.now() < asked + allowTtlMs - 500) {
      expect((await authz.authorize(caller, access)).allowed).toBe(true);
    }
    // Once the TTL has passed since the review answered, the revoked grant is gone.
    await pollUntil(() => Date.now() > answered + allowTtlMs, {
      timeoutMs: allowTtlMs + 1000,
      intervalMs: 50,
      description: 'the grant TTL to pass',
    });
    const after = await authz.authorize(caller, access);
    expect(after.allowed).toBe(false);
  });

  it('never holds more decisions than its limit', async () => {
    const authz = new SubjectAccessReviewAuthorizer(hubKc, { maxEntries: 3 });
    for (let i = 0; i < 6; i++) {
      const d = await authz.authorize({ user: `${name}-other-${i}`, groups: [], extra: {} }, access);
      expect(d.allowed).toBe(false);
      expect(authz.cachedDecisions).toBeLessThanOrEqual(3);
    }
    expect(authz.cachedDecisions).toBe(3);
  });
});
