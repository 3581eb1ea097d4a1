// Which certificate subjects may hold a tunnel, and for which cluster: a cluster's registration
// identity, or its cluster-proxy addon identity (OCM's default addon subject) — never another
// addon's, and never a subject whose CN and groups name different clusters.
import { describe, expect, it } from 'vitest';
import {
  addonIdentityFromSubject,
  tunnelIdentityFromSubject,
} from '../../src/proxy-server/agent-identity.ts';
import { agentIdentityFromSubject, agentSubject } from '../../src/tunnel/identity.ts';

/** OCM's default subject of addon `addon`'s agent on `cluster` (addon-framework DefaultUser/Groups). */
function addonSubject(cluster: string, addon: string, agent = 'addon-agent') {
  return {
    commonName: `system:open-cluster-management:cluster:${cluster}:addon:${addon}:agent:${agent}`,
    organizations: [
      `system:open-cluster-management:cluster:${cluster}:addon:${addon}`,
      `system:open-cluster-management:addon:${addon}`,
      'system:authenticated',
    ],
  };
}

const identityOf = (s: { commonName: string; organizations: string[] }) =>
  tunnelIdentityFromSubject(s.commonName, s.organizations);

describe('tunnel identities', () => {
  it("a cluster's registration identity holds its cluster's tunnel, as before", () => {
    expect(identityOf(agentSubject('cluster1', 'agent-7'))).toEqual({
      cluster: 'cluster1',
      agent: 'agent-7',
    });
  });

  it('the cluster-proxy addon identity holds the tunnel of the cluster its certificate names', () => {
    expect(identityOf(addonSubject('cluster1', 'cluster-proxy', 'k8s-agent-1'))).toEqual({
      cluster: 'cluster1',
      agent: 'cluster-proxy:k8s-agent-1',
      addon: 'cluster-proxy',
    });
  });

  it("another addon's identity cannot hold a cluster-proxy tunnel", () => {
    for (const addon of ['managed-serviceaccount', 'helloworld', 'cluster-proxy-x', 'cluster-gateway'])
      expect(identityOf(addonSubject('cluster1', addon)), addon).toBeUndefined();
  });

  it('a cluster-proxy CN whose addon group names another cluster or addon is refused', () => {
    const s = addonSubject('cluster1', 'cluster-proxy');
    const otherCluster = addonSubject('cluster2', 'cluster-proxy').organizations;
    expect(tunnelIdentityFromSubject(s.commonName, otherCluster)).toBeUndefined();
    const otherAddon = addonSubject('cluster1', 'helloworld').organizations;
    expect(tunnelIdentityFromSubject(s.commonName, otherAddon)).toBeUndefined();
    // only the addon-wide group (no cluster in it): refused
    expect(tunnelIdentityFromSubject(s.commonName, [s.organizations[1] as string])).toBeUndefined();
    expect(tunnelIdentityFromSubject(s.commonName, [])).toBeUndefined();
  });

  it("cluster-proxy's custom-signer subject (no cluster in it) and malformed names are refused", () => {
    expect(
      tunnelIdentityFromSubject('open-cluster-management:cluster-proxy:proxy-agent', [
        'open-cluster-management:cluster-proxy',
      ]),
    ).toBeUndefined();
    for (const cluster of ['Cluster1', 'a_b', '', 'x'.repeat(64)]) {
      const s = addonSubject(cluster, 'cluster-proxy');
      expect(identityOf(s), cluster).toBeUndefined();
    }
    const noAgent = addonSubject('cluster1', 'cluster-proxy', '');
    expect(identityOf(noAgent)).toBeUndefined();
  });

  it("an addon identity is never read as its cluster's registration identity, nor the reverse", () => {
    const s = addonSubject('cluster1', 'cluster-proxy');
    expect(agentIdentityFromSubject(s.commonName, s.organizations)).toBeUndefined();
    const r = agentSubject('cluster1', 'agent-7');
    expect(addonIdentityFromSubject(r.commonName, r.organizations)).toBeUndefined();
  });
});
