// The MSA status the agent writes: conditions through setCondition, times from the token.
import { describe, expect, it } from 'vitest';
import type { ManagedServiceAccount } from '../../src/api/index.ts';
import { failedStatus, projectedStatus } from '../../src/serviceaccount/agent/status.ts';

const msa = (status?: ManagedServiceAccount['status']): ManagedServiceAccount => ({
  apiVersion: 'authentication.open-cluster-management.io/v1beta1',
  kind: 'ManagedServiceAccount',
  metadata: { name: 'gw', namespace: 'c1', generation: 3 },
  ...(status ? { status } : {}),
});
const details = {
  username: 'system:serviceaccount:addon:gw',
  clusterName: 'c1',
  now: new Date('2026-01-01T00:00:00Z'),
};
const claims = {
  aud: [],
  iat: Date.parse('2026-01-01T00:00:00Z') / 1000,
  exp: Date.parse('2026-01-02T00:00:00Z') / 1000,
};

describe('projectedStatus', () => {
  it('reports both conditions True, the expiry TokenRequest granted and the refresh time of the token', () => {
    const status = projectedStatus(msa(), claims, { ...details, issuedExpiration: '2026-01-01T20:00:00Z' });
    expect(status?.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration])).toEqual([
      ['SecretCreated', 'True', 'SecretCreated', 3],
      ['TokenReported', 'True', 'TokenReported', 3],
    ]);
    expect(status?.expirationTimestamp).toBe('2026-01-01T20:00:00Z');
    expect(status?.tokenSecretRef).toEqual({ name: 'gw', lastRefreshTimestamp: '2026-01-01T00:00:00Z' });
  });

  it('uses the token exp for a kept token and writes nothing when nothing changed', () => {
    const status = projectedStatus(msa(), claims, details);
    expect(status?.expirationTimestamp).toBe('2026-01-02T00:00:00Z');
    expect(
      projectedStatus(msa(status), claims, { ...details, now: new Date('2026-01-01T05:00:00Z') }),
    ).toBeUndefined();
  });

  it('turns a failure back to True with a new transition time', () => {
    const failed = failedStatus(
      msa(projectedStatus(msa(), claims, details)),
      'boom',
      new Date('2026-01-01T01:00:00Z'),
    );
    const back = projectedStatus(msa(failed), claims, { ...details, now: new Date('2026-01-01T02:00:00Z') });
    const reported = back?.conditions?.find((c) => c.type === 'TokenReported');
    expect(reported).toMatchObject({ status: 'True', lastTransitionTime: '2026-01-01T02:00:00Z' });
    expect(back?.conditions?.find((c) => c.type === 'SecretCreated')?.lastTransitionTime).toBe(
      '2026-01-01T00:00:00Z',
    );
  });
});

describe('failedStatus', () => {
  it('sets TokenReported False / TokenReportFailed with the error text, cut to 1024 characters', () => {
    const status = failedStatus(msa(), 'x'.repeat(5000));
    const c = status?.conditions?.[0];
    expect(c).toMatchObject({ type: 'TokenReported', status: 'False', reason: 'TokenReportFailed' });
    expect(c?.message.length).toBe(1024);
    expect(failedStatus(msa(status), 'x'.repeat(5000))).toBeUndefined();
  });
});
