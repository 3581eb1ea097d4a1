// Built-in add-ons on a cluster whose klusterlet agent hosts them in-process: the hub renders no
// Deployment, ServiceAccount or RBAC for them, only ConfigMap `<addon>-in-process`, and judges them by
// Lease; on every other cluster (and for add-ons the claim does not list) nothing changes.
import { describe, expect, it } from 'vitest';
import { clusterProxyAddon } from '../../src/addon/builtin/cluster-proxy.ts';
import { builtinAddonNames } from '../../src/addon/builtin/index.ts';
import { managedServiceAccountAddon } from '../../src/addon/builtin/managed-serviceaccount.ts';
import {
  hostsInProcess,
  inProcessAddonLabel,
  inProcessAddonNames,
  inProcessAddonsClaim,
  inProcessAddonsOf,
  inProcessClaimValue,
} from '../../src/api/addon-in-process.ts';
import type { ClusterClaim, ManagedCluster } from '../../src/api/cluster.ts';
import { checkInProcessAddons } from '../../src/cli/agent-addons.ts';
import { exposeClaims } from '../../src/registration/agent/claims.ts';
import { cluster, one, render, renderContext } from './builtin-fixtures.ts';

const caPem = '-----BEGIN CERTIFICATE-----\nproxy-server-ca\n-----END CERTIFICATE-----\n';
const proxy = clusterProxyAddon({
  proxyServer: 'proxy.hub.example:8091',
  proxyServerCaPem: caPem,
  proxyServerName: 'proxy-server.hub',
  image: 'localhost/tether:1.2.3',
});
const msa = managedServiceAccountAddon({ image: 'localhost/tether:1.2.3' });

function hosting(name: string, value: string): ManagedCluster {
  return {
    ...cluster(name),
    status: { clusterClaims: [{ name: inProcessAddonsClaim, value }] },
  } as ManagedCluster;
}

function contextOn(c: ManagedCluster, addon: string) {
  return { ...renderContext(addon, c.metadata.name ?? ''), cluster: c };
}

describe('built-in add-ons hosted by the klusterlet agent', () => {
  it('the claim lists the hosted add-ons sorted, once each, and is read back the same', () => {
    const value = inProcessClaimValue(['managed-serviceaccount', 'cluster-proxy', 'cluster-proxy']);
    expect(value).toBe('cluster-proxy,managed-serviceaccount');
    expect([...inProcessAddonsOf(hosting('c1', value))]).toEqual(['cluster-proxy', 'managed-serviceaccount']);
    expect(inProcessAddonsOf(cluster('c1')).size).toBe(0);
    expect(hostsInProcess(hosting('c1', 'cluster-proxy'), 'managed-serviceaccount')).toBe(false);
  });

  it('the hostable add-ons are built-in ones with an agent (not cluster-gateway)', () => {
    for (const n of inProcessAddonNames) expect(builtinAddonNames).toContain(n);
    expect(inProcessAddonNames).not.toContain('cluster-gateway');
  });

  it('cluster-proxy on a hosting cluster: no Deployment or ServiceAccount, its ConfigMap carries the address, server name and CA; Lease health', async () => {
    const c = hosting('cluster1', 'cluster-proxy,managed-serviceaccount');
    const objects = await render(proxy, contextOn(c, 'cluster-proxy'));
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'Namespace/open-cluster-management-agent-addon',
      'ConfigMap/cluster-proxy-in-process',
    ]);
    const cm = one<{ data: Record<string, string> }>(objects, 'ConfigMap');
    expect(cm.metadata?.labels?.[inProcessAddonLabel]).toBe('cluster-proxy');
    expect(cm.data).toEqual({
      'proxy-server': 'proxy.hub.example:8091',
      'server-name': 'proxy-server.hub',
      'ca.crt': caPem,
    });
    expect(proxy.healthFor?.(c)).toEqual({ type: 'Lease' });
    expect(proxy.healthFor?.(cluster('cluster2'))).toEqual({ type: 'DeploymentAvailability' });
  });

  it('managed-serviceaccount on a hosting cluster: no Deployment, ServiceAccount or RBAC; Lease health', async () => {
    const c = hosting('cluster1', 'managed-serviceaccount');
    const objects = await render(msa, contextOn(c, 'managed-serviceaccount'));
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'Namespace/open-cluster-management-agent-addon',
      'ConfigMap/managed-serviceaccount-in-process',
    ]);
    expect(msa.healthFor?.(c)).toEqual({ type: 'Lease' });
  });

  it('an add-on the claim does not list still renders its Deployment', async () => {
    const c = hosting('cluster1', 'managed-serviceaccount');
    const objects = await render(proxy, contextOn(c, 'cluster-proxy'));
    expect(objects.map((o) => o.kind)).toContain('Deployment');
    expect(proxy.healthFor?.(c)).toEqual({ type: 'DeploymentAvailability' });
  });

  it("the agent's claim is reserved: a ClusterClaim object of the same name cannot replace or hide it", () => {
    const agentClaim = { name: inProcessAddonsClaim, value: 'cluster-proxy' };
    const forged = {
      apiVersion: 'cluster.open-cluster-management.io/v1alpha1',
      kind: 'ClusterClaim',
      metadata: { name: inProcessAddonsClaim },
      spec: { value: 'managed-serviceaccount' },
    } as ClusterClaim;
    const { claims } = exposeClaims([forged], 0, [agentClaim]);
    expect(claims).toEqual([agentClaim]);
  });

  it('--in-process-addons takes only hostable add-ons, with an error naming them', () => {
    expect(checkInProcessAddons(['managed-serviceaccount', 'cluster-proxy', 'cluster-proxy'])).toEqual([
      'cluster-proxy',
      'managed-serviceaccount',
    ]);
    expect(() => checkInProcessAddons(['cluster-gateway'])).toThrow(
      /"cluster-gateway" cannot run in the agent \(it hosts cluster-proxy, managed-serviceaccount\)/,
    );
  });
});
