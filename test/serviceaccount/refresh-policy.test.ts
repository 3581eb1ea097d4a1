// When the agent replaces a projected token, decided from the Secret and what the MSA asks for.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ManagedServiceAccount } from '../../src/api/index.ts';
import { createCertificateAuthority } from '../../src/pki/index.ts';
import {
  refreshAtMs,
  staleTokenReason,
  type TokenFacts,
} from '../../src/serviceaccount/agent/refresh-policy.ts';
import { newTokenSecret, tokenSecretData } from '../../src/serviceaccount/agent/token-secret.ts';

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const jwt = (payload: Record<string, unknown>) => `${b64url({ alg: 'RS256' })}.${b64url(payload)}.sig`;
const hash = (t: string) => createHash('sha256').update(t).digest('hex');
const ca = await createCertificateAuthority('managed-ca');
const endpoint = { name: 'c1', server: 'https://10.0.0.1:6443', caPem: ca.certPem };
const msa: ManagedServiceAccount = {
  apiVersion: 'authentication.open-cluster-management.io/v1beta1',
  kind: 'ManagedServiceAccount',
  metadata: { name: 'gw', namespace: 'c1', uid: 'm-1' },
};
const username = 'system:serviceaccount:addon:gw';
const iat = 1_000_000;
const claims = { sub: username, iat, exp: iat + 600, 'kubernetes.io': { serviceaccount: { uid: 'sa-1' } } };
const token = jwt(claims);
const facts = (over: Partial<TokenFacts> = {}): TokenFacts => ({
  secret: newTokenSecret(msa, tokenSecretData(endpoint, token)),
  endpoint,
  username,
  serviceAccountUid: 'sa-1',
  audiences: [],
  expirationSeconds: 600,
  refreshAtFraction: 0.8,
  knownTokenHash: undefined,
  hash,
  now: (iat + 100) * 1000,
  ...over,
});
const withToken = (t: string) => newTokenSecret(msa, tokenSecretData(endpoint, t));

describe('staleTokenReason', () => {
  it('keeps a fresh token of this ServiceAccount in an intact Secret', () => {
    expect(staleTokenReason(facts())).toBeUndefined();
    expect(staleTokenReason(facts({ knownTokenHash: hash(token) }))).toBeUndefined();
  });

  it('refreshes at the fraction of the real lifetime, and only then', () => {
    expect(refreshAtMs({ aud: [], iat, exp: iat + 600 }, 0.8)).toBe((iat + 480) * 1000);
    expect(staleTokenReason(facts({ now: (iat + 479) * 1000 }))).toBeUndefined();
    expect(staleTokenReason(facts({ now: (iat + 480) * 1000 }))).toMatch(/due for rotation/);
    expect(staleTokenReason(facts({ now: (iat + 599) * 1000, refreshAtFraction: 1 }))).toBeUndefined();
  });

  it.each<[string, Partial<TokenFacts>, RegExp]>([
    ['no Secret', { secret: undefined }, /no token Secret/],
    ['a Secret without token', { secret: { metadata: {}, data: {} } }, /holds no token/],
    ['a token the agent did not write', { knownTokenHash: hash('other') }, /was changed/],
    [
      'someone else’s account',
      { username: 'system:serviceaccount:addon:other' },
      /is for system:serviceaccount:addon:gw/,
    ],
    ['a recreated ServiceAccount', { serviceAccountUid: 'sa-2' }, /earlier ServiceAccount/],
    ['other audiences', { audiences: ['vault'] }, /audiences differ/],
    ['a shortened validity', { expirationSeconds: 300 }, /shortened/],
  ])('refreshes for %s', (_what, over, reason) => {
    expect(staleTokenReason(facts(over))).toMatch(reason);
  });

  it('keeps a token whose lifetime the apiserver capped below the validity', () => {
    expect(staleTokenReason(facts({ expirationSeconds: 86_400 }))).toBeUndefined();
  });

  it('refreshes when ca.crt or kubeconfig were changed, or the token is not a JWT', () => {
    const secret = withToken(token);
    const tampered = { ...secret, data: { ...secret.data, 'ca.crt': 'eA==' } };
    expect(staleTokenReason(facts({ secret: tampered }))).toMatch(/ca.crt were changed/);
    expect(staleTokenReason(facts({ secret: withToken('opaque') }))).toMatch(/not a JWT/);
    expect(staleTokenReason(facts({ secret: withToken(jwt({ sub: username })) }))).toMatch(/no iat\/exp/);
  });
});
