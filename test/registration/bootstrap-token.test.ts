// The bootstrap-token Secret `tether init --use-bootstrap-token` writes: Kubernetes' token format and
// fields, clusteradm's label and name, and the expiry asked for (bootstrap-token.ts).
import { describe, expect, it } from 'vitest';
import { newBootstrapTokenSecret } from '../../src/registration/bootstrap-token.ts';

describe('newBootstrapTokenSecret', () => {
  it('is a kube-system bootstrap.kubernetes.io/token Secret clusteradm finds, in Kubernetes’ token format', () => {
    const now = new Date('2026-11-28T10:00:00.500Z');
    const t = newBootstrapTokenSecret(3600, now);
    const [id, secret] = t.token.split('.');
    expect(t.token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(t.secret.metadata).toEqual({
      name: `bootstrap-token-${id}`,
      namespace: 'kube-system',
      labels: { app: 'cluster-manager' },
    });
    expect(t.secret.type).toBe('bootstrap.kubernetes.io/token');
    expect(t.secret.stringData).toMatchObject({
      'token-id': id,
      'token-secret': secret,
      'usage-bootstrap-authentication': 'true',
      'auth-extra-groups': 'system:bootstrappers:managedcluster',
      expiration: '2026-11-28T11:00:00Z',
    });
    expect(t.expires.toISOString()).toBe('2026-11-28T11:00:00.500Z');
  });

  it('draws every character from [a-z0-9] and makes a new token each time', () => {
    const seen = new Set(Array.from({ length: 50 }, () => newBootstrapTokenSecret(60).token));
    expect(seen.size).toBe(50);
    const lowest = newBootstrapTokenSecret(60, new Date(), () => 0).token;
    const highest = newBootstrapTokenSecret(60, new Date(), (max) => max - 1).token;
    expect(lowest).toBe('aaaaaa.aaaaaaaaaaaaaaaa');
    expect(highest).toBe('999999.9999999999999999');
  });
});
