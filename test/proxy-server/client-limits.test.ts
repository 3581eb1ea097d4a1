// Per-client limits of the CONNECT frontend: counts per address and per caller, and the token bucket.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClientLimiter } from '../../src/proxy-server/client-limits.ts';
import { managedClusterRefusal } from '../../src/proxy-server/cluster-admission.ts';
import { isManagedClusterIdentity } from '../../src/tunnel/identity.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('ClientLimiter', () => {
  it('caps connections per address and gives a slot back once, however often release is called', () => {
    const l = new ClientLimiter({ maxConnectionsPerAddress: 2 });
    const a = l.connection('10.0.0.1');
    const b = l.connection('10.0.0.1');
    expect(a && b).toBeTruthy();
    expect(l.connection('10.0.0.1')).toBeUndefined();
    expect(l.connection('10.0.0.2')).toBeDefined();
    a?.();
    a?.();
    expect(l.connection('10.0.0.1')).toBeDefined();
    expect(l.connection('10.0.0.1')).toBeUndefined();
  });

  it('caps open tunnels and pending dials per caller, independently of other callers', () => {
    const l = new ClientLimiter({ maxTunnelsPerCaller: 3, maxPendingDialsPerCaller: 2 });
    const t1 = l.tunnel('a');
    const t2 = l.tunnel('a');
    expect(l.tunnel('a')).toMatchObject({ limit: 'maxPendingDialsPerCaller' });
    expect(l.tunnel('b')).not.toHaveProperty('limit');
    if ('limit' in t1 || 'limit' in t2) throw new Error('unexpected refusal');
    t1.dialed();
    const t3 = l.tunnel('a');
    expect(t3).not.toHaveProperty('limit');
    if ('limit' in t3) throw new Error('unexpected refusal');
    t2.dialed();
    t3.dialed();
    expect(l.tunnel('a')).toMatchObject({ limit: 'maxTunnelsPerCaller' });
    expect(l.openTunnels('a')).toBe(3);
    t1.closed();
    t1.closed();
    expect(l.openTunnels('a')).toBe(2);
    expect(l.pendingDials('a')).toBe(0);
  });

  it('refills the per-caller bucket at the configured rate', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const l = new ClientLimiter({ tunnelRatePerCaller: 10, tunnelBurstPerCaller: 2 });
    const open = () => {
      const t = l.tunnel('a');
      if ('limit' in t) return t.limit;
      t.closed();
      return 'ok';
    };
    expect([open(), open(), open()]).toEqual(['ok', 'ok', 'tunnelRatePerCaller']);
    vi.advanceTimersByTime(100); // one token at 10/s
    expect([open(), open()]).toEqual(['ok', 'tunnelRatePerCaller']);
  });

  it('rejects limits below 1', () => {
    expect(() => new ClientLimiter({ maxTunnelsPerCaller: 0 })).toThrow(/maxTunnelsPerCaller/);
  });
});

describe('who may hold a tunnel and who is a hub service', () => {
  const mc = (spec: { hubAcceptsClient?: boolean }, deleting = false) => ({
    apiVersion: 'cluster.open-cluster-management.io/v1' as const,
    kind: 'ManagedCluster' as const,
    metadata: { name: 'c1', ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec,
  });

  it('admits only an existing, accepted ManagedCluster that is not being deleted', () => {
    expect(managedClusterRefusal('c1', mc({ hubAcceptsClient: true }))).toBeUndefined();
    expect(managedClusterRefusal('c1', undefined)).toMatch(/does not exist/);
    expect(managedClusterRefusal('c1', mc({}))).toMatch(/not accepted/);
    expect(managedClusterRefusal('c1', mc({ hubAcceptsClient: false }))).toMatch(/not accepted/);
    expect(managedClusterRefusal('c1', mc({ hubAcceptsClient: true }, true))).toMatch(/being deleted/);
  });

  it('treats every system:open-cluster-management: user or group as a managed-cluster identity', () => {
    expect(isManagedClusterIdentity('system:open-cluster-management:c1:agent', [])).toBe(true);
    expect(isManagedClusterIdentity('x', ['system:open-cluster-management:managed-clusters'])).toBe(true);
    expect(isManagedClusterIdentity('x', ['system:open-cluster-management:cluster:c1:addon:a'])).toBe(true);
    expect(isManagedClusterIdentity('tether-hub-service', ['system:authenticated'])).toBe(false);
    expect(isManagedClusterIdentity('system:serviceaccount:ns:svc', ['system:serviceaccounts'])).toBe(false);
  });
});
