// The CONNECT frontend's authority, written by dialers and parsed by the frontend from one module:
// every target a dialer writes parses back to the same cluster and target, and what is not
// `<cluster>:443` or `<export>.<cluster>:<port>` is refused.
import { describe, expect, it } from 'vitest';
import { connectAuthority, parseConnectAuthority } from '../../src/tunnel/connect-authority.ts';

describe('CONNECT authority', () => {
  it('round-trips every target a dialer writes', () => {
    for (const [cluster, target] of [
      ['cluster1', 'kube-apiserver:443'],
      ['c-2', 'metrics:8443'],
      ['edge-7', 'node-exporter:9100'],
    ] as const) {
      const authority = connectAuthority(cluster, target);
      expect(parseConnectAuthority(authority)).toEqual({ cluster, target });
    }
    expect(connectAuthority('cluster1', 'kube-apiserver:443')).toBe('cluster1:443');
    expect(connectAuthority('cluster1', 'metrics:8443')).toBe('metrics.cluster1:8443');
  });

  it("parses cluster-proxy's second apiserver name, <cluster>.open-cluster-management-agent-addon:443", () => {
    expect(parseConnectAuthority('cluster1.open-cluster-management-agent-addon:443')).toEqual({
      cluster: 'cluster1',
      target: 'kube-apiserver:443',
    });
    // no other port, and never an export in a cluster of that name
    expect(parseConnectAuthority('cluster1.open-cluster-management-agent-addon:8443')).toBeUndefined();
  });

  it('refuses what names no cluster and target', () => {
    for (const bad of [
      'cluster1:80',
      'a.b.c:443',
      'Cluster1:443',
      'cluster1:0',
      'cluster1:65536',
      'cluster1',
      '-x:443',
      'x.cluster1:',
      '[::1]:443',
      'cluster1:443 ',
    ])
      expect(parseConnectAuthority(bad), bad).toBeUndefined();
  });
});
