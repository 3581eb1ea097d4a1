// TokenRequest parameters from an MSA and reading a service-account JWT without verifying it.
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.ts';
import {
  decodeTokenClaims,
  parseAudiences,
  serviceAccountUsername,
  tokenExpirationSeconds,
} from '../../src/serviceaccount/index.ts';

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const fakeJwt = (payload: Record<string, unknown>) => `${b64url({ alg: 'RS256' })}.${b64url(payload)}.sig`;

describe('tokenExpirationSeconds', () => {
  it('turns spec.rotation.validity into whole seconds', () => {
    expect(tokenExpirationSeconds('8640h0m0s')).toBe(8640 * 3600);
    expect(tokenExpirationSeconds('10m')).toBe(600);
    expect(tokenExpirationSeconds('660.9s')).toBe(660);
  });

  it('says what is wrong with a validity the apiserver would refuse', () => {
    expect(() => tokenExpirationSeconds('1d')).toThrow(/spec.rotation.validity: invalid duration "1d"/);
    expect(() => tokenExpirationSeconds('9m59s')).toThrow(/shorter than 10m0s/);
    expect(() => tokenExpirationSeconds('-1h')).toThrow(InvalidArgumentError);
    expect(() => tokenExpirationSeconds('2000000h')).toThrow(/longer than 2\^32 seconds/);
  });
});

describe('parseAudiences', () => {
  it('trims, drops empty entries, deduplicates and sorts', () => {
    expect(parseAudiences(' b, a,,b ,')).toEqual(['a', 'b']);
    expect(parseAudiences(['x', 'x'])).toEqual(['x']);
    expect(parseAudiences(undefined)).toEqual([]);
    expect(parseAudiences('')).toEqual([]);
  });

  it('limits what an annotation can ask for', () => {
    expect(() => parseAudiences(Array.from({ length: 17 }, (_, i) => `a${i}`))).toThrow(/more than 16/);
    expect(() => parseAudiences('x'.repeat(254))).toThrow(/longer than 253/);
  });
});

describe('decodeTokenClaims', () => {
  it('reads sub, aud, iat, exp and the ServiceAccount uid', () => {
    const token = fakeJwt({
      sub: serviceAccountUsername('ns', 'sa'),
      aud: ['https://kubernetes.default.svc'],
      iat: 100,
      exp: 700,
      'kubernetes.io': { namespace: 'ns', serviceaccount: { name: 'sa', uid: 'u-1' } },
    });
    expect(decodeTokenClaims(token)).toEqual({
      sub: 'system:serviceaccount:ns:sa',
      aud: ['https://kubernetes.default.svc'],
      iat: 100,
      exp: 700,
      serviceAccountUid: 'u-1',
    });
    expect(decodeTokenClaims(fakeJwt({ aud: 'one' }))?.aud).toEqual(['one']);
  });

  it('answers undefined for anything that is not a JWT', () => {
    expect(decodeTokenClaims('not-a-token')).toBeUndefined();
    expect(decodeTokenClaims('a.!!!.c')).toBeUndefined();
    expect(decodeTokenClaims(`a.${Buffer.from('"str"').toString('base64url')}.c`)).toBeUndefined();
    expect(decodeTokenClaims(`a.${'A'.repeat(70_000)}.c`)).toBeUndefined();
  });
});
