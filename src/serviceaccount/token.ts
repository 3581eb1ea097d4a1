// ServiceAccount tokens on the managed cluster: asking for one (TokenRequest), asking whether one
// is still good (TokenReview), and reading the claims of one without verifying it (the agent only
// reads tokens it obtained itself or finds in its own Secret; the apiserver does the verifying).
// Also the rules turning an MSA's spec and annotations into TokenRequest parameters.
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiError, InvalidArgumentError } from '../errors.ts';
import { isNotFound, ResourceClient } from '../kube/index.ts';
import {
  serviceAccountResource,
  type TokenRequest,
  type TokenReview,
  tokenRequestResource,
  tokenReviewResource,
} from './core.ts';
import { parseGoDuration } from './duration.ts';

/**
 * MSA annotation (beyond OCM): comma-separated audiences for this account's tokens. When present
 * it replaces the agent's `audiences` option for that MSA; when neither is set the token carries
 * the managed apiserver's own audiences.
 */
export const tokenAudiencesAnnotation = 'authentication.open-cluster-management.io/token-audiences';

/** kube-apiserver refuses TokenRequests for less than 10 minutes. */
export const minTokenSeconds = 600;
/** …and for more than 2^32 seconds. */
export const maxTokenSeconds = 2 ** 32;
const maxAudiences = 16;
const maxAudienceLength = 253;
/** A service-account JWT is ~1 KiB; refuse to parse anything absurd someone put in a Secret. */
const maxTokenLength = 64 * 1024;

/** expirationSeconds for spec.rotation.validity; InvalidArgumentError says what is wrong. */
export function tokenExpirationSeconds(validity: string): number {
  let ms: number;
  try {
    ms = parseGoDuration(validity);
  } catch (err) {
    throw new InvalidArgumentError(`spec.rotation.validity: ${(err as Error).message}`);
  }
  const seconds = Math.floor(ms / 1000);
  if (seconds < minTokenSeconds) {
    throw new InvalidArgumentError(
      `spec.rotation.validity "${validity}" is shorter than 10m0s, the least kube-apiserver issues a token for`,
    );
  }
  if (seconds > maxTokenSeconds) {
    throw new InvalidArgumentError(`spec.rotation.validity "${validity}" is longer than 2^32 seconds`);
  }
  return seconds;
}

/** Audiences from a comma list (annotation or flag): trimmed, empty entries dropped, deduplicated, sorted. */
export function parseAudiences(list: string | readonly string[] | undefined): string[] {
  if (list === undefined) return [];
  const raw = typeof list === 'string' ? list.split(',') : list;
  const out = [...new Set(raw.map((a) => a.trim()).filter((a) => a.length > 0))].sort();
  if (out.length > maxAudiences) throw new InvalidArgumentError(`more than ${maxAudiences} token audiences`);
  const long = out.find((a) => a.length > maxAudienceLength);
  if (long)
    throw new InvalidArgumentError(`token audience "${long.slice(0, 40)}…" is longer than 253 characters`);
  return out;
}

/** The claims of a service-account JWT that the agent checks. */
export interface TokenClaims {
  sub?: string;
  aud: string[];
  /** seconds since the epoch */
  iat?: number;
  exp?: number;
  serviceAccountUid?: string;
}

/** The payload of a JWT, not verified; undefined when `token` is not a JWT. */
export function decodeTokenClaims(token: string): TokenClaims | undefined {
  if (token.length > maxTokenLength) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!payload || typeof payload !== 'object') return undefined;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const aud = payload.aud;
  const k8s = payload['kubernetes.io'] as { serviceaccount?: { uid?: unknown } } | undefined;
  const uid = k8s?.serviceaccount?.uid;
  return {
    sub: typeof payload.sub === 'string' ? payload.sub : undefined,
    aud: typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud.filter((a) => typeof a === 'string') : [],
    iat: num(payload.iat),
    exp: num(payload.exp),
    serviceAccountUid: typeof uid === 'string' ? uid : undefined,
  };
}

/** `system:serviceaccount:<namespace>:<name>`, the username a token of that account authenticates as. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** The managed kube-apiserver has no `serviceaccounts/token` subresource (no bound-token signing). */
export class TokenRequestUnsupportedError extends ApiError {
  constructor(server: string) {
    super(
      404,
      'NotFound',
      `the managed kube-apiserver ${server} does not serve TokenRequest (POST serviceaccounts/<name>/token ` +
        'answered 404 while the ServiceAccount exists): start it with --service-account-issuer and ' +
        '--service-account-signing-key-file (Kubernetes ≥ 1.22), or point the agent at a cluster that has them',
    );
    this.name = 'TokenRequestUnsupportedError';
  }
}

export interface IssuedToken {
  token: string;
  /** RFC 3339, what the apiserver granted (it may cap the requested lifetime) */
  expirationTimestamp: string;
}

/** A new token for ServiceAccount `namespace/name` via TokenRequest. */
export async function requestServiceAccountToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
  spec: { expirationSeconds: number; audiences: readonly string[] },
): Promise<IssuedToken> {
  const client = new ResourceClient<TokenRequest>(kc, tokenRequestResource(name));
  let created: TokenRequest;
  try {
    created = await client.create({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: { namespace },
      spec: {
        expirationSeconds: spec.expirationSeconds,
        ...(spec.audiences.length > 0 ? { audiences: [...spec.audiences] } : {}),
      },
    });
  } catch (err) {
    // 404 is either "no such ServiceAccount" or "no such subresource": only the second is fatal.
    if (isNotFound(err)) {
      const accounts = new ResourceClient(kc, serviceAccountResource);
      if (await accounts.get(name, namespace))
        throw new TokenRequestUnsupportedError(kc.getCurrentCluster()?.server ?? '');
    }
    throw err;
  }
  const status = created.status;
  if (!status?.token || !status.expirationTimestamp) {
    throw new ApiError(
      500,
      'InternalError',
      `TokenRequest for ${namespace}/${name} came back without a token`,
    );
  }
  return { token: status.token, expirationTimestamp: status.expirationTimestamp };
}

export interface TokenReviewResult {
  authenticated: boolean;
  username?: string;
  uid?: string;
  error?: string;
}

/** Ask the managed apiserver whether `token` authenticates (for these audiences, if any). */
export async function reviewToken(
  kc: KubeConfig,
  token: string,
  audiences: readonly string[],
): Promise<TokenReviewResult> {
  const client = new ResourceClient<TokenReview>(kc, tokenReviewResource);
  const review = await client.create({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    metadata: {},
    spec: { token, ...(audiences.length > 0 ? { audiences: [...audiences] } : {}) },
  });
  return {
    authenticated: review.status?.authenticated === true,
    username: review.status?.user?.username,
    uid: review.status?.user?.uid,
    error: review.status?.error,
  };
}
