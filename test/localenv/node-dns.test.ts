// The cluster DNS manifests and Corefile (src/localenv/node-dns.ts) against what the node and the
// CoreDNS build (hack/coredns) provide: each assertion names what would break without it.
import { readFileSync } from 'node:fs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { SERVICE_CLUSTER_IP_RANGE } from '../../src/localenv/controlplane.ts';
import { CLUSTER_DNS_IP, clusterDnsObjects, corefile, DNS_POD_PORT } from '../../src/localenv/node-dns.ts';

const IMAGE = 'localhost/tether-coredns:abc';
// biome-ignore lint/suspicious/noExplicitAny: manifests are plain objects here
type Obj = KubernetesObject & Record<string, any>;
const objects = clusterDnsObjects(IMAGE) as Obj[];
const byKind = (kind: string): Obj => {
  const o = objects.find((x) => x.kind === kind);
  if (!o) throw new Error(`no ${kind}`);
  return o;
};

function ipToInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

describe('cluster DNS manifests', () => {
  it('kube-dns sits at a fixed ClusterIP in the service range, in the band the apiserver does not hand out first', () => {
    const svc = byKind('Service');
    expect(svc.metadata).toMatchObject({ name: 'kube-dns', namespace: 'kube-system' });
    expect(svc.spec.clusterIP).toBe(CLUSTER_DNS_IP);
    const [net, bits] = SERVICE_CLUSTER_IP_RANGE.split('/');
    const size = 2 ** (32 - Number(bits));
    const offset = ipToInt(CLUSTER_DNS_IP) - ipToInt(net ?? '');
    expect(offset).toBeGreaterThan(1); // .0 is the network, .1 the kubernetes Service
    // KEP-3070: the lower max(16, min(size/16, 256)) addresses are for static assignment
    expect(offset).toBeLessThan(Math.max(16, Math.min(size / 16, 256)));
  });

  it('the Service sends port 53 (UDP and TCP) to the unprivileged port CoreDNS listens on as nobody', () => {
    const svc = byKind('Service');
    expect(svc.spec.ports).toEqual([
      { name: 'dns', port: 53, targetPort: DNS_POD_PORT, protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, targetPort: DNS_POD_PORT, protocol: 'TCP' },
    ]);
    const pod = byKind('Deployment').spec.template.spec;
    expect(svc.spec.selector).toEqual(byKind('Deployment').spec.template.metadata.labels);
    const c = pod.containers[0];
    expect(c.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([
      DNS_POD_PORT,
      DNS_POD_PORT,
    ]);
    expect(c.securityContext).toMatchObject({ runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
    expect(corefile()).toContain(`cluster.local:${DNS_POD_PORT} `);
  });

  it('the pod uses the imported image (no registry) and does not resolve through itself', () => {
    const pod = byKind('Deployment').spec.template.spec;
    expect(pod.containers[0]).toMatchObject({ image: IMAGE, imagePullPolicy: 'Never' });
    expect(pod.dnsPolicy).toBe('Default');
    expect(pod.serviceAccountName).toBe('coredns');
    expect(pod.volumes[0].configMap.name).toBe(byKind('ConfigMap').metadata?.name);
    expect(byKind('ConfigMap').data.Corefile).toBe(corefile());
  });

  it('RBAC lets the coredns ServiceAccount list and watch services, endpointslices and namespaces', () => {
    const role = byKind('ClusterRole');
    const binding = byKind('ClusterRoleBinding');
    expect(binding.roleRef.name).toBe(role.metadata?.name);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }]);
    const allowed = (group: string, resource: string): boolean =>
      role.rules.some(
        (r: { apiGroups: string[]; resources: string[]; verbs: string[] }) =>
          r.apiGroups.includes(group) &&
          r.resources.includes(resource) &&
          r.verbs.includes('list') &&
          r.verbs.includes('watch'),
      );
    expect(allowed('', 'services')).toBe(true);
    expect(allowed('', 'namespaces')).toBe(true);
    expect(allowed('discovery.k8s.io', 'endpointslices')).toBe(true);
  });

  it('Corefile: no forward (there is no upstream), NXDOMAIN for everything outside the cluster zones', () => {
    const cf = corefile();
    expect(cf).not.toMatch(/\bforward\b/);
    expect(cf).toMatch(/^\.:1053 \{[^}]*template ANY ANY \{\s*rcode NXDOMAIN\s*\}/m);
  });

  it('Corefile names only plugins hack/coredns compiles in (CoreDNS refuses unknown directives at start)', () => {
    const main = readFileSync(new URL('../../hack/coredns/main.go', import.meta.url), 'utf8');
    const block = /var directives = \[\]string\{([^}]*)\}/.exec(main)?.[1] ?? '';
    const built = new Set([...block.matchAll(/"([a-z_0-9]+)"/g)].map((m) => m[1]));
    expect(built.size).toBeGreaterThan(0);
    for (const plugin of built) expect(main).toContain(`"github.com/coredns/coredns/plugin/${plugin}"`);
    // top-level words of each server block (the kubernetes and template bodies hold options, not plugins)
    const used = new Set<string>();
    let depth = 0;
    for (const line of corefile().split('\n')) {
      const t = line.trim();
      if (t === '}') depth--;
      else if (depth === 1 && t) used.add(t.split(/\s+/)[0] ?? '');
      if (t.endsWith('{')) depth++;
    }
    expect([...used].filter((p) => !built.has(p))).toEqual([]);
    expect(used).toContain('kubernetes');
  });
});
