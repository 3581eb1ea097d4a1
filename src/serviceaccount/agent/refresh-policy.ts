// When a projected token must be replaced, decided from what is at hand without asking anyone:
// the hub Secret, the ServiceAccount, what the MSA asks for and what the agent last wrote. The one
// check that needs the managed apiserver (TokenReview) stays with the reconciler. Pure functions.

import type { Secret } from '../core.ts';
import { decodeTokenClaims, type TokenClaims } from '../token.ts';
import type { ManagedClusterEndpoint } from './token-secret.ts';
import { alteredSecretKeys, secretToken } from './token-secret.ts';

export interface TokenFacts {
  secret: Secret | undefined;
  endpoint: ManagedClusterEndpoint;
  /** system:serviceaccount:<ns>:<name> */
  username: string;
  serviceAccountUid: string | undefined;
  /** requested audiences, sorted; [] for the apiserver's own */
  audiences: readonly string[];
  /** what spec.rotation.validity asks for */
  expirationSeconds: number;
  /** fraction of the lifetime after which to refresh (1 = at expiry) */
  refreshAtFraction: number;
  /** sha256 of the token this agent last wrote or verified for the key, if it remembers one */
  knownTokenHash: string | undefined;
  hash(token: string): string;
  now: number;
}

/** iat + fraction · (exp − iat) in ms since the epoch. */
export function refreshAtMs(claims: TokenClaims, fraction: number): number {
  const iat = claims.iat ?? 0;
  const exp = claims.exp ?? 0;
  return (iat + fraction * (exp - iat)) * 1000;
}

/** Why the Secret's token must be replaced, or undefined when it may stay (pending a TokenReview). */
export function staleTokenReason(f: TokenFacts): string | undefined {
  if (!f.secret) return 'no token Secret on the hub';
  const token = secretToken(f.secret);
  if (!token) return 'the Secret holds no token';
  if (f.knownTokenHash !== undefined && f.knownTokenHash !== f.hash(token)) {
    return 'the token in the Secret was changed';
  }
  const altered = alteredSecretKeys(f.secret, f.endpoint);
  if (altered.length > 0) return `Secret keys ${altered.join(', ')} were changed`;
  const claims = decodeTokenClaims(token);
  if (!claims) return 'the token in the Secret is not a JWT';
  if (claims.sub !== f.username) return `the token is for ${claims.sub ?? 'nobody'}, not ${f.username}`;
  if (f.serviceAccountUid && claims.serviceAccountUid && claims.serviceAccountUid !== f.serviceAccountUid) {
    return 'the token belongs to an earlier ServiceAccount of that name';
  }
  if (f.audiences.length > 0 && [...claims.aud].sort().join(',') !== f.audiences.join(',')) {
    return 'the token audiences differ from the requested ones';
  }
  if (claims.iat === undefined || claims.exp === undefined) return 'the token has no iat/exp';
  // A shorter validity applies at once; a longer one (or a lifetime the apiserver capped) waits.
  if (claims.exp - claims.iat > f.expirationSeconds + 1) return 'spec.rotation.validity was shortened';
  if (f.now >= refreshAtMs(claims, f.refreshAtFraction)) return 'the token is due for rotation';
  return undefined;
}
