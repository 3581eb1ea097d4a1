// Authorization of gateway callers: a SubjectAccessReview on the hub, asked as the caller the
// aggregator named (user, groups, extra), for the clustergateways resource or its proxy / health /
// tunnel subresource, or for the console's static files (resource `console`, gateway/console.ts). Decisions are cached briefly and boundedly (grants longer than denials, like the
// apiserver's webhook authorizer), and identical reviews in flight are asked once. The bound: a
// decision is served at most `allowTtlMs` (default 10 s) after the review that made it answered,
// so a revoked grant stops working within that time plus one review's latency; at most
// `maxEntries` (default 10 000) decisions are kept, the oldest dropped first.
import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Caller } from './front-proxy.ts';
import { gatewayGroup, gatewayVersion } from './types.ts';

export interface AccessRequest {
  verb: string;
  /** default clustergateways */
  resource?: 'clustergateways' | 'console';
  subresource?: 'proxy' | 'health' | 'tunnel';
  /** the ClusterGateway name; absent for list/watch of the collection */
  name?: string;
}

export interface Decision {
  allowed: boolean;
  reason: string;
}

export interface AuthorizerOptions {
  /** how long a grant is reused (default 10 s): the longest a revoked grant keeps working */
  allowTtlMs?: number;
  /** how long a denial is reused (default 3 s): the longest a new grant waits */
  denyTtlMs?: number;
  /** decisions kept at most (default 10 000) */
  maxEntries?: number;
}

/** The verb a proxied HTTP method means (what the apiserver's RequestInfo says for it). */
export function verbForMethod(method: string): string {
  switch (method.toUpperCase()) {
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return 'get';
  }
}

// POSTs that only ask the managed apiserver a question about the caller (`kubectl auth whoami`,
// `kubectl auth can-i`, `--list`): nothing is stored. Matched literally, so no other path (dot
// segments, encodings, a trailing name) can pass for one.
const selfSubjectReview =
  /^\/apis\/(authentication\.k8s\.io\/v1(beta1|alpha1)?\/selfsubjectreviews|authorization\.k8s\.io\/v1(beta1)?\/(selfsubjectaccessreviews|selfsubjectrulesreviews))$/;

/**
 * The hub verb on `clustergateways/proxy` a proxied request needs. From the HTTP method, except:
 * an Upgrade (exec, attach, port-forward over SPDY or WebSocket) needs `create` whatever its method,
 * as the apiserver asks `create` on pods/exec for a WebSocket GET; a self-subject review POST is a
 * read-only question and needs `get`.
 */
export function verbForProxyRequest(method: string, upstreamPath: string, upgrade: boolean): string {
  if (upgrade) return 'create';
  if (method.toUpperCase() === 'POST' && selfSubjectReview.test(upstreamPath)) return 'get';
  return verbForMethod(method);
}

/** The apiserver's wording for a denial, so kubectl users see the familiar message. */
export function forbiddenMessage(caller: Caller | undefined, access: AccessRequest): string {
  const who = caller ? `User "${caller.user}"` : 'the anonymous user';
  const plural = access.resource ?? 'clustergateways';
  const resource = access.subresource ? `${plural}/${access.subresource}` : plural;
  const scope = access.name
    ? `${plural}.${gatewayGroup} "${access.name}" is forbidden`
    : `${plural}.${gatewayGroup} is forbidden`;
  return `${scope}: ${who} cannot ${access.verb} resource "${resource}" in API group "${gatewayGroup}" at the cluster scope`;
}

export class SubjectAccessReviewAuthorizer {
  private readonly api: AuthorizationV1Api;
  private readonly cache = new Map<string, { decision: Decision; expires: number }>();
  private readonly inflight = new Map<string, Promise<Decision>>();
  private readonly allowTtlMs: number;
  private readonly denyTtlMs: number;
  private readonly maxEntries: number;

  constructor(hubKubeConfig: KubeConfig, opts: AuthorizerOptions = {}) {
    this.api = hubKubeConfig.makeApiClient(AuthorizationV1Api);
    this.allowTtlMs = opts.allowTtlMs ?? 10_000;
    this.denyTtlMs = opts.denyTtlMs ?? 3_000;
    this.maxEntries = opts.maxEntries ?? 10_000;
  }

  /** Decisions currently cached (never more than maxEntries). */
  get cachedDecisions(): number {
    return this.cache.size;
  }

  async authorize(caller: Caller, access: AccessRequest): Promise<Decision> {
    const key = JSON.stringify([
      caller.user,
      caller.groups,
      Object.entries(caller.extra).sort(),
      access.verb,
      access.resource ?? 'clustergateways',
      access.subresource ?? '',
      access.name ?? '',
    ]);
    const hit = this.cache.get(key);
    if (hit && hit.expires > Date.now()) return hit.decision;
    if (hit) this.cache.delete(key);
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const review = this.review(caller, access)
      .then((decision) => {
        if (this.cache.size >= this.maxEntries) {
          const oldest = this.cache.keys().next().value;
          if (oldest !== undefined) this.cache.delete(oldest);
        }
        const ttl = decision.allowed ? this.allowTtlMs : this.denyTtlMs;
        this.cache.set(key, { decision, expires: Date.now() + ttl });
        return decision;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, review);
    return review;
  }

  private async review(caller: Caller, access: AccessRequest): Promise<Decision> {
    const result = await this.api.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: caller.user,
          groups: caller.groups,
          extra: caller.extra,
          resourceAttributes: {
            group: gatewayGroup,
            version: gatewayVersion,
            resource: access.resource ?? 'clustergateways',
            verb: access.verb,
            ...(access.subresource ? { subresource: access.subresource } : {}),
            ...(access.name ? { name: access.name } : {}),
          },
        },
      },
    });
    return {
      allowed: result.status?.allowed === true && result.status.denied !== true,
      reason: result.status?.reason ?? '',
    };
  }
}
