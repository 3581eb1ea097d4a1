import { describe, expect, it } from 'vitest';
import type { GitOpsCluster } from '../../../src/api/index.ts';
import {
  argoCdClusterSecret,
  argoCdManagedRbacWork,
  gatewayAccessRbac,
} from '../../../src/placement/argocd/index.ts';

const g: GitOpsCluster = {
  apiVersion: 'apps.open-cluster-management.io/v1beta1',
  kind: 'GitOpsCluster',
  metadata: { name: 'importer', namespace: 'team-a' },
  spec: { argoServer: { argoNamespace: 'argocd' }, placementRef: { name: 'all' } },
};
const hub = { server: 'https://hub.example:6443', caPem: '-----BEGIN CERTIFICATE-----\nx\n' };
const decode = (v: string | undefined) => Buffer.from(v ?? '', 'base64').toString('utf8');

describe('Argo CD cluster Secret', () => {
  it('holds name, the gateway URL as server, and Argo CD config JSON with the token and the hub CA', () => {
    const s = argoCdClusterSecret(g, 'cluster1', hub, 'tok');
    expect(s.metadata?.namespace).toBe('argocd');
    expect(s.metadata?.labels?.['argocd.argoproj.io/secret-type']).toBe('cluster');
    expect(decode(s.data['name'])).toBe('cluster1');
    expect(decode(s.data['server'])).toBe(
      'https://hub.example:6443/apis/cluster.core.oam.dev/v1alpha1/clustergateways/cluster1/proxy',
    );
    expect(JSON.parse(decode(s.data['config']))).toEqual({
      bearerToken: 'tok',
      tlsClientConfig: { insecure: false, caData: Buffer.from(hub.caPem).toString('base64') },
    });
  });

  it('hub RBAC names exactly the decided clusters, and grants nothing when none is decided', () => {
    const [role, binding] = gatewayAccessRbac(g, ['b', 'a']);
    expect((role as { rules: Array<{ resourceNames: string[] }> }).rules[0]?.resourceNames).toEqual([
      'a',
      'b',
    ]);
    expect((binding as { subjects: unknown[] }).subjects).toEqual([
      { kind: 'ServiceAccount', name: 'importer-argocd', namespace: 'team-a' },
    ]);
    const [empty] = gatewayAccessRbac(g, []);
    expect((empty as { rules: unknown[] }).rules).toEqual([]);
  });

  it("the ManifestWork binds the managed role to the gateway's prefixed name of the hub ServiceAccount", () => {
    const w = argoCdManagedRbacWork(g, 'cluster1', 'view');
    expect(w.metadata.namespace).toBe('cluster1');
    const crb = w.spec.workload?.manifests?.[0] as unknown as {
      roleRef: { name: string };
      subjects: Array<{ name: string }>;
    };
    expect(crb.roleRef.name).toBe('view');
    expect(crb.subjects[0]?.name).toBe('cluster:hub:system:serviceaccount:team-a:importer-argocd');
  });
});
