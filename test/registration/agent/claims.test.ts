// OCM's claim exposure rule: reserved names first, custom ones sorted and capped, spoke-only hidden.
import { describe, expect, it } from 'vitest';
import { type ClusterClaim, WellKnownClusterClaim } from '../../../src/api/index.ts';
import { exposeClaims, spokeOnlyClaimLabel } from '../../../src/registration/agent/claims.ts';

const claim = (name: string, value: string, labels?: Record<string, string>): ClusterClaim => ({
  apiVersion: 'cluster.open-cluster-management.io/v1alpha1',
  kind: 'ClusterClaim',
  metadata: { name, ...(labels ? { labels } : {}) },
  spec: { value },
});

describe('exposeClaims', () => {
  it('puts reserved claims first, then custom claims sorted by name', () => {
    const { claims, truncated } = exposeClaims(
      [
        claim('zone.example.com', 'z1'),
        claim(WellKnownClusterClaim.Platform, 'AWS'),
        claim('app.example.com', 'a'),
        claim(WellKnownClusterClaim.Id, 'c-123'),
      ],
      20,
    );
    expect(claims.map((c) => c.name)).toEqual([
      'id.k8s.io',
      'platform.open-cluster-management.io',
      'app.example.com',
      'zone.example.com',
    ]);
    expect(truncated).toBe(0);
  });

  it('caps custom claims at the limit without counting reserved ones', () => {
    const custom = Array.from({ length: 5 }, (_, i) => claim(`c${4 - i}.example.com`, `v${i}`));
    const { claims, truncated } = exposeClaims(
      [...custom, claim(WellKnownClusterClaim.KubeVersion, 'v1.36')],
      3,
    );
    expect(claims.map((c) => c.name)).toEqual([
      'kubeversion.open-cluster-management.io',
      'c0.example.com',
      'c1.example.com',
      'c2.example.com',
    ]);
    expect(truncated).toBe(2);
  });

  it('leaves out spoke-only claims and claims without a value', () => {
    const { claims } = exposeClaims(
      [
        claim('local.example.com', 'x', { [spokeOnlyClaimLabel]: '' }),
        claim('empty.example.com', ''),
        claim('a.b', 'c'),
      ],
      20,
    );
    expect(claims).toEqual([{ name: 'a.b', value: 'c' }]);
  });
});
