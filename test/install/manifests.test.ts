// What `tether init` / `tether join` install, checked as data: every Deployment runs the tether
// image non-root on a read-only root with probes on its ops port; the hub's RBAC grants nothing by
// wildcard and Secrets only by name; the agent is a single Recreate Deployment whose tunnel flags
// follow the options; the hub certificates cover the addresses agents dial and are kept across runs.
import { createHash, webcrypto, X509Certificate } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { describe, expect, it } from 'vitest';
import { agentManifests } from '../../src/install/agent.ts';
import { hubManifests } from '../../src/install/hub.ts';
import { hubPki, type SecretLookup } from '../../src/install/hub-pki.ts';
import { hubNames, hubNamespace } from '../../src/install/names.ts';
import { createCertificateAuthority } from '../../src/pki/index.ts';

interface Container {
  image: string;
  imagePullPolicy: string;
  args: string[];
  securityContext: Record<string, unknown>;
  livenessProbe: { httpGet: unknown };
  readinessProbe: { httpGet: unknown };
  ports: Array<{ name: string; containerPort: number }>;
}
interface Spec {
  type?: string;
  replicas?: number;
  strategy?: unknown;
  ports: Array<{ nodePort?: number }>;
  template: { spec: { securityContext: { runAsNonRoot?: boolean }; containers: Container[] } };
}
type Obj = KubernetesObject & {
  spec: Spec;
  rules?: Array<{ verbs: string[]; resources: string[]; apiGroups: string[]; resourceNames?: string[] }>;
  stringData?: Record<string, string>;
  data?: Record<string, string>;
};

const image = { image: 'localhost/tether:test', imagePullPolicy: 'Never' as const };

function hub(type: 'NodePort' | 'LoadBalancer' | 'ClusterIP' = 'NodePort'): Obj[] {
  return hubManifests({
    ...image,
    replicas: 2,
    agentEndpoint: { type, nodePort: 31091 },
    gatewayCaBundle: 'Q0E=',
  }) as Obj[];
}

function containerOf(d: Obj): Container {
  return d.spec.template.spec.containers[0] as Container;
}

describe('hub manifests', () => {
  it('runs the hub controllers, proxy-server and gateway as hardened Deployments of the tether image', () => {
    const deployments = hub().filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata?.name).sort()).toEqual(
      [hubNames.controllers, hubNames.gateway, hubNames.proxyServer].sort(),
    );
    for (const d of deployments) {
      expect(d.metadata?.namespace).toBe(hubNamespace);
      expect(d.spec.replicas).toBe(2);
      const c = containerOf(d);
      expect(c.image).toBe('localhost/tether:test');
      expect(c.imagePullPolicy).toBe('Never');
      expect(['hub', 'proxy-server', 'gateway']).toContain(c.args[0]);
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(d.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
      expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'ops' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'ops' });
      const ops = c.ports.find((p) => p.name === 'ops')?.containerPort;
      expect(c.args).toContain(`--ops-port=${ops}`);
      // probes reach the ops server only if it listens on the pod IP
      expect(
        c.args.some((a: string) => a === '--ops-bind-address=0.0.0.0' || a === '--bind-address=0.0.0.0'),
      ).toBe(true);
    }
    const server = deployments.find((d) => d.metadata?.name === hubNames.proxyServer) as Obj;
    expect(containerOf(server).args).toContain('--server-count=2');
    expect(containerOf(server).args).toContain('--server-id=$(TETHER_POD_NAME)');
  });

  it('exposes the agent endpoint as the chosen Service type and the APIService with the given caBundle', () => {
    for (const type of ['NodePort', 'LoadBalancer', 'ClusterIP'] as const) {
      const svc = hub(type).find(
        (o) => o.kind === 'Service' && o.metadata?.name === hubNames.proxyServerAgents,
      );
      expect(svc?.spec.type).toBe(type);
      expect(svc?.spec.ports[0]?.nodePort).toBe(type === 'NodePort' ? 31091 : undefined);
    }
    const api = hub().find((o) => o.kind === 'APIService');
    expect(api?.spec).toMatchObject({
      group: 'cluster.core.oam.dev',
      caBundle: 'Q0E=',
      service: { namespace: hubNamespace, name: hubNames.gateway, port: 443 },
    });
  });

  it("offers the built-in addons with the hub's image, and cluster-proxy only with the agent endpoint and its CA", () => {
    const controllers = (objects: Obj[]) =>
      objects.find((o) => o.kind === 'Deployment' && o.metadata?.name === hubNames.controllers) as Obj;
    const without = containerOf(controllers(hub()));
    expect(without.args).toContain('--addon-image=localhost/tether:test');
    expect(without.args).toContain('--addon-image-pull-policy=Never');
    expect(without.args.some((a: string) => a.startsWith('--cluster-proxy'))).toBe(false);
    const withProxy = controllers(
      hubManifests({
        ...image,
        replicas: 1,
        agentEndpoint: { type: 'NodePort', nodePort: 31091 },
        gatewayCaBundle: 'Q0E=',
        clusterProxyServer: '10.0.0.5:31091',
      }) as Obj[],
    );
    const c = containerOf(withProxy);
    expect(c.args).toContain('--cluster-proxy-server=10.0.0.5:31091');
    const caFile = c.args.find((a: string) => a.startsWith('--cluster-proxy-ca-file='))?.split('=')[1] ?? '';
    // the file is the proxy-server CA's certificate (never its key), mounted from its Secret
    const mount = (
      c as unknown as { volumeMounts: Array<{ name: string; mountPath: string }> }
    ).volumeMounts.find((m) => caFile.startsWith(`${m.mountPath}/`));
    const volumes = (
      withProxy.spec.template.spec as unknown as {
        volumes: Array<{ name: string; secret?: { secretName: string; items?: Array<{ key: string }> } }>;
      }
    ).volumes;
    const volume = volumes.find((v) => v.name === mount?.name);
    expect(volume?.secret?.secretName).toBe(hubNames.proxyServerCa);
    expect(volume?.secret?.items?.map((i) => i.key)).toEqual(['ca.crt']);
    expect(caFile.endsWith('/ca.crt')).toBe(true);
  });

  it('grants the hub controllers what the built-in addon managers do, and the proxy-server addon reads', () => {
    const rules = (name: string) =>
      hub().find((o) => o.kind === 'ClusterRole' && o.metadata?.name === `open-cluster-management:${name}`)
        ?.rules ?? [];
    const allows = (name: string, resource: string, verb: string) =>
      rules(name).some(
        (r) =>
          r.apiGroups.includes('addon.open-cluster-management.io') &&
          r.resources.includes(resource) &&
          r.verbs.includes(verb),
      );
    expect(allows(hubNames.controllers, 'managedclusteraddons/status', 'update')).toBe(true);
    expect(allows(hubNames.controllers, 'managedclusteraddons/finalizers', 'update')).toBe(true);
    expect(allows(hubNames.controllers, 'clustermanagementaddons', 'create')).toBe(true);
    expect(allows(hubNames.proxyServer, 'managedclusteraddons', 'watch')).toBe(true);
    expect(allows(hubNames.proxyServer, 'managedclusteraddons', 'update')).toBe(false);
  });

  it('grants no wildcard, and Secrets on the hub only by name', () => {
    const roles = hub().filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
    expect(roles.length).toBeGreaterThan(3);
    for (const role of roles) {
      for (const rule of role.rules ?? []) {
        expect(rule.verbs).not.toContain('*');
        expect(rule.resources).not.toContain('*');
        expect(rule.apiGroups).not.toContain('*');
        if (rule.resources.includes('secrets') && role.kind === 'ClusterRole') {
          expect(rule.resourceNames, `${role.metadata?.name} reads every Secret`).toBeDefined();
        }
      }
    }
  });

  it('lets no hub component read Events, so a cluster flooding its namespace with them fills no hub cache', () => {
    const roles = hub().filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
    const readsEvents = roles.flatMap((role) =>
      (role.rules ?? [])
        .filter(
          (r) => r.resources.includes('events') && r.verbs.some((v) => ['get', 'list', 'watch'].includes(v)),
        )
        .map((r) => `${role.metadata?.name}: ${r.verbs.join(',')} events`),
    );
    expect(readsEvents).toEqual([]);
  });
});

describe("cluster-proxy's user-server and the frontend's NodePort", () => {
  const service = (objs: Obj[], name: string) =>
    objs.find((o) => o.kind === 'Service' && o.metadata?.name === name) as Obj;
  const args = (objs: Obj[], name: string) =>
    containerOf(objs.find((o) => o.kind === 'Deployment' && o.metadata?.name === name) as Obj).args;

  it("is served by the gateway behind OCM's Service cluster-proxy-addon-user:9092, ClusterIP by default", () => {
    const objs = hub();
    const svc = service(objs, 'cluster-proxy-addon-user');
    expect(svc.metadata?.namespace).toBe(hubNamespace);
    expect(svc.spec.type).toBe('ClusterIP');
    expect(svc.spec.ports).toEqual([{ name: 'user-server', port: 9092, targetPort: 'user-server' }]);
    expect(args(objs, hubNames.gateway)).toContain('--user-server-port=9092');
    // ManagedServiceAccount kubeconfigs name the in-cluster Service, verified by the gateway's CA
    expect(args(objs, hubNames.controllers)).toEqual(
      expect.arrayContaining([
        `--user-server-url=https://cluster-proxy-addon-user.${hubNamespace}.svc:9092`,
        '--user-server-ca-file=/etc/tether/user-server-ca/ca.crt',
      ]),
    );
    expect(service(objs, hubNames.proxyServer).spec.type).toBe('ClusterIP');
  });

  it('becomes a NodePort with the URL clients use when asked (tether init --user-server-*, --connect-node-port)', () => {
    const objs = hubManifests({
      ...image,
      replicas: 1,
      agentEndpoint: { type: 'NodePort', nodePort: 31091 },
      gatewayCaBundle: 'Q0E=',
      userServer: { nodePort: 31092, url: 'https://10.0.0.5:31092' },
      connectNodePort: 31090,
    }) as Obj[];
    expect(service(objs, 'cluster-proxy-addon-user').spec).toMatchObject({
      type: 'NodePort',
      ports: [{ nodePort: 31092 }],
    });
    expect(service(objs, hubNames.proxyServer).spec).toMatchObject({
      type: 'NodePort',
      ports: [{ nodePort: 31090 }],
    });
    expect(args(objs, hubNames.controllers)).toContain('--user-server-url=https://10.0.0.5:31092');
  });
});

describe('agent manifests', () => {
  const base = { ...image, clusterName: 'c1', bootstrapKubeconfig: 'apiVersion: v1\nkind: Config\n' };

  it('is one Recreate Deployment with the bootstrap kubeconfig; tunnel flags only with a proxy-server', () => {
    const plain = agentManifests(base) as Obj[];
    const d = plain.find((o) => o.kind === 'Deployment') as Obj;
    expect(d.spec.replicas).toBe(1);
    expect(d.spec.strategy).toEqual({ type: 'Recreate' });
    expect(containerOf(d).args).toContain('--cluster-name=c1');
    expect(containerOf(d).args.some((a: string) => a.startsWith('--proxy-server'))).toBe(false);
    const bootstrap = plain.find(
      (o) => o.kind === 'Secret' && o.metadata?.name === 'bootstrap-hub-kubeconfig',
    );
    expect(bootstrap?.stringData?.kubeconfig).toBe(base.bootstrapKubeconfig);

    const tunnel = agentManifests({
      ...base,
      proxyServer: '10.0.0.5:31091',
      proxyServerCaPem: 'PEM',
      proxyUrl: 'http://squid:3128',
    }) as Obj[];
    const args: string[] = containerOf(tunnel.find((o) => o.kind === 'Deployment') as Obj).args;
    expect(args).toContain('--proxy-server=10.0.0.5:31091');
    expect(args).toContain('--proxy-url=http://squid:3128');
    expect(args.find((a) => a.startsWith('--hub-ca-file='))).toBeDefined();
    expect(tunnel.find((o) => o.metadata?.name === 'tether-proxy-server-ca')?.stringData?.['ca.crt']).toBe(
      'PEM',
    );
  });

  it('leaves the ManagedServiceAccount agent to the addon when asked (tether join --no-serviceaccount)', () => {
    const args = (o: Parameters<typeof agentManifests>[0]) =>
      containerOf(agentManifests(o).find((x) => x.kind === 'Deployment') as Obj).args;
    expect(args(base)).not.toContain('--no-serviceaccount');
    expect(args({ ...base, serviceAccountAgent: false })).toContain('--no-serviceaccount');
  });

  it("passes the agent's periods only when set (tether join --status-sync-interval, --addon-lease-*)", () => {
    const args = (o: Parameters<typeof agentManifests>[0]) =>
      containerOf(agentManifests(o).find((x) => x.kind === 'Deployment') as Obj).args;
    const periods = (a: string) => /^--(addon-lease|status-sync)/.test(a);
    expect(args(base).filter(periods)).toEqual([]);
    expect(
      args({
        ...base,
        statusSyncIntervalSeconds: 2,
        addonLeaseDurationSeconds: 5,
        addonLeaseSyncIntervalSeconds: 1,
      }).filter(periods),
    ).toEqual(['--status-sync-interval=2', '--addon-lease-duration=5', '--addon-lease-sync-interval=1']);
  });

  it('hosted mode: everything in klusterlet-<cluster> with the managed kubeconfig mounted, and no cluster-wide right', () => {
    const bootstrapKubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: hub, cluster: {server: "https://hub.example:6443"}}]',
      'contexts: [{name: hub, context: {cluster: hub, user: bootstrap}}]',
      'users: [{name: bootstrap, user: {token: t}}]',
      'current-context: hub',
    ].join('\n');
    const objects = agentManifests({
      ...base,
      bootstrapKubeconfig,
      managedClusterKubeconfig: 'MANAGED',
    }) as Obj[];
    const ns = 'klusterlet-c1';
    const namespace = objects.find((o) => o.kind === 'Namespace');
    expect(namespace?.metadata?.name).toBe(ns);
    // the hub the agent joins, for the boundary that lets only that hub's works deploy its hosted add-ons here
    expect(namespace?.metadata?.annotations).toEqual({
      'agent.tether.dev/hub-hash': createHash('sha256').update('https://hub.example:6443').digest('hex'),
    });
    for (const o of objects.filter((x) => x.kind !== 'Namespace')) expect(o.metadata?.namespace).toBe(ns);
    expect(objects.some((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'ClusterRole')).toBe(false);
    const role = objects.find((o) => o.kind === 'Role') as Obj;
    expect(role.rules?.flatMap((r) => r.resources).sort()).toEqual(['events', 'secrets']);
    expect(role.rules?.find((r) => r.resources.includes('secrets'))?.verbs).toContain('delete');
    expect(role.rules?.find((r) => r.resources.includes('events'))?.verbs).not.toContain('delete');
    const binding = objects.find((o) => o.kind === 'RoleBinding') as Obj & { subjects: unknown[] };
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'klusterlet-agent-sa', namespace: ns },
    ]);
    expect(
      objects.find((o) => o.kind === 'Secret' && o.metadata?.name === 'external-managed-kubeconfig')
        ?.stringData,
    ).toEqual({ kubeconfig: 'MANAGED' });
    const args = containerOf(objects.find((o) => o.kind === 'Deployment') as Obj).args;
    expect(args).toContain(`--agent-namespace=${ns}`);
    expect(args).toContain('--spoke-kubeconfig=/etc/tether/spoke/kubeconfig');
    // a default-mode agent keeps its cluster-admin binding and its namespace
    const plain = agentManifests(base) as Obj[];
    expect(plain.find((o) => o.kind === 'ClusterRoleBinding')).toBeDefined();
    expect(containerOf(plain.find((o) => o.kind === 'Deployment') as Obj).args).not.toContain(
      '--spoke-kubeconfig=/etc/tether/spoke/kubeconfig',
    );
  });
});

describe('hub certificates', () => {
  it('cover the addresses agents dial and keep their CAs across runs', async () => {
    const agentCa = await createCertificateAuthority('agents');
    const first = await hubPki({
      proxyServerHosts: ['10.244.1.2'],
      agentCaPem: agentCa.certPem,
      lookup: async () => undefined,
    });
    const secrets = new Map(
      first.objects.map((o) => [o.metadata?.name ?? '', (o as Obj).stringData ?? (o as Obj).data]),
    );
    const serving = new X509Certificate(secrets.get(hubNames.proxyServerTls)?.['tls.crt'] ?? '');
    expect(serving.subjectAltName).toContain('IP Address:10.244.1.2');
    expect(serving.subjectAltName).toContain(`DNS:${hubNames.proxyServer}.${hubNamespace}.svc`);
    expect(serving.verify(new X509Certificate(first.proxyServerCaPem).publicKey)).toBe(true);
    expect(secrets.get(hubNames.agentCa)?.['ca.crt']).toBe(agentCa.certPem);

    const lookup: SecretLookup = async (name) => secrets.get(name);
    const second = await hubPki({ proxyServerHosts: ['hub.example'], agentCaPem: agentCa.certPem, lookup });
    expect(second.proxyServerCaPem).toBe(first.proxyServerCaPem);
    expect(second.gatewayCaBundle).toBe(first.gatewayCaBundle);
    const reissued = second.objects.find((o) => o.metadata?.name === hubNames.proxyServerTls) as Obj;
    expect(new X509Certificate(reissued.stringData?.['tls.crt'] ?? '').subjectAltName).toContain(
      'DNS:hub.example',
    );
  });

  it("the gateway's certificate also serves the user-server: its Service names and given hosts, replaced when a host is missing", async () => {
    const agentCa = await createCertificateAuthority('agents');
    const gatewayCert = (objects: KubernetesObject[]) =>
      new X509Certificate(
        (objects.find((o) => o.metadata?.name === hubNames.gatewayTls) as Obj).stringData?.['tls.crt'] ?? '',
      );
    const first = await hubPki({
      proxyServerHosts: [],
      agentCaPem: agentCa.certPem,
      lookup: async () => undefined,
    });
    const cert = gatewayCert(first.objects);
    expect(cert.checkHost(`cluster-proxy-addon-user.${hubNamespace}.svc`)).toBeDefined();
    expect(cert.checkHost(`${hubNames.gateway}.${hubNamespace}.svc`)).toBeDefined();
    const secrets = new Map(
      first.objects.map((o) => [o.metadata?.name ?? '', (o as Obj).stringData ?? (o as Obj).data]),
    );
    const lookup: SecretLookup = async (name) => secrets.get(name);
    // same hosts: kept (the APIService caBundle stays)
    const kept = await hubPki({ proxyServerHosts: [], agentCaPem: agentCa.certPem, lookup });
    expect(kept.gatewayCaBundle).toBe(first.gatewayCaBundle);
    // a host the kept certificate does not cover: a new one (and a new caBundle) that does
    const moved = await hubPki({
      proxyServerHosts: [],
      userServerHosts: ['10.0.0.5'],
      agentCaPem: agentCa.certPem,
      lookup,
    });
    expect(moved.gatewayCaBundle).not.toBe(first.gatewayCaBundle);
    expect(gatewayCert(moved.objects).checkIP('10.0.0.5')).toBe('10.0.0.5');
  });

  it("refuses a CA it cannot use (the Helm chart's RSA CA) instead of replacing what agents trust", async () => {
    const alg = {
      name: 'RSASSA-PKCS1-v1_5',
      hash: 'SHA-256',
      publicExponent: new Uint8Array([1, 0, 1]),
      modulusLength: 2048,
    };
    const keys = (await webcrypto.subtle.generateKey(alg, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.createSelfSigned(
      { name: 'CN=helm-ca', keys, signingAlgorithm: alg },
      webcrypto,
    );
    const keyPem = x509.PemConverter.encode(
      await webcrypto.subtle.exportKey('pkcs8', keys.privateKey),
      'PRIVATE KEY',
    );
    const lookup: SecretLookup = async (name) =>
      name === hubNames.proxyServerCa ? { 'ca.crt': cert.toString('pem'), 'ca.key': keyPem } : undefined;
    await expect(hubPki({ proxyServerHosts: [], agentCaPem: 'x', lookup })).rejects.toThrow(
      /tether-proxy-server-ca holds a CA tether init cannot use.*Helm chart/,
    );
  });
});
