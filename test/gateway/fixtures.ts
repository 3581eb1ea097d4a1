// Fixtures for the gateway e2e files: an in-process proxy-server (hub CA) with proxy-agents behind
// the environment's real squid, managed clusters registered on the real hub (ManagedCluster +
// hand-made ManagedServiceAccount token Secret, since the MSA agent is not part of this test), and
// the gateway itself, registered with the hub aggregator. Every file starts its own and cleans up.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { WebSocketServer } from 'ws';
import {
  type ManagedCluster,
  managedClusterResource,
  managedServiceAccountLabel,
} from '../../src/api/index.ts';
import {
  credentialTypeLabel,
  defaultCredentialNamespace,
  gatewayApiServiceName,
  gatewayManagedClusterRbac,
  kubeConfigForCluster,
  type LocalGateway,
  type LocalGatewayOptions,
  startLocalGateway,
} from '../../src/gateway/index.ts';
import {
  type KubeObject,
  kubeconfigFromParts,
  kubeconfigToYaml,
  ResourceClient,
} from '../../src/kube/index.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../../src/pki/index.ts';
import { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import { type HostPort, targetPolicy } from '../../src/proxy-agent/targets.ts';
import { ProxyServer } from '../../src/proxy-server/server.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from '../e2e/env.ts';
import { adminKubeConfig } from '../e2e/helpers.ts';

export const env = testEnv();
export const hubKc: KubeConfig = adminKubeConfig(env.hub);
export const cluster1Kc: KubeConfig = adminKubeConfig(env.cluster1);
export const hubCore = hubKc.makeApiClient(CoreV1Api);
export const cluster1Core = cluster1Kc.makeApiClient(CoreV1Api);
const managedClusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const apiServices = new ResourceClient<KubeObject & { spec?: Record<string, unknown> }>(hubKc, {
  group: 'apiregistration.k8s.io',
  version: 'v1',
  plural: 'apiservices',
  kind: 'APIService',
  namespaced: false,
});

/** A managed cluster of the fixture: its tunnel target and how the hub verifies it. */
export interface FixtureCluster {
  name: string;
  /** what the agent dials for kube-apiserver:443 */
  apiserver: HostPort;
  /** URL and CA in the ManagedCluster's client config */
  url: string;
  caPem: string;
  agent?: ProxyAgent;
}

export interface GatewayFixture {
  server: ProxyServer;
  gateway: LocalGateway;
  dir: string;
  clusters: Map<string, FixtureCluster>;
  /** registers a managed cluster (ManagedCluster, MSA Secret with `token`) and starts its agent */
  addCluster(
    c: Omit<FixtureCluster, 'agent'>,
    token: string,
    annotations?: Record<string, string>,
  ): Promise<void>;
  startAgent(name: string): Promise<void>;
  stopAgent(name: string): Promise<void>;
  /** path of a kubeconfig (hub admin) rewritten to `cluster`'s gateway proxy */
  kubeconfigFor(cluster: string): string;
  /** a scratch file in the fixture's directory */
  file(name: string, content: string): string;
  stop(): Promise<void>;
}

const cleanups: Array<() => Promise<unknown>> = [];

/** Undoes what helpers here created (fixture.stop() does it too). */
export async function runFixtureCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
}

/** A ServiceAccount on cluster1 bound to cluster-admin, and a token for it (the MSA's job). */
export async function cluster1AdminToken(name: string): Promise<string> {
  const namespace = 'tether-gateway-e2e';
  await cluster1Core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => {});
  await cluster1Core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
    .catch(() => {});
  const rbac = cluster1Kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac
    .createClusterRoleBinding({
      body: {
        metadata: { name: `tether-gateway-e2e-${name}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      },
    })
    .catch(() => {});
  cleanups.push(() => rbac.deleteClusterRoleBinding({ name: `tether-gateway-e2e-${name}` }).catch(() => {}));
  cleanups.push(() => cluster1Core.deleteNamespacedServiceAccount({ name, namespace }).catch(() => {}));
  const tr = await cluster1Core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return tr.status?.token ?? '';
}

/** Creates RBAC objects on cluster1 (ClusterRole, ClusterRoleBinding), undone by the cleanups. */
export async function applyOnCluster1(objects: KubeObject[]): Promise<void> {
  for (const obj of objects) {
    const kind = obj.kind as 'ClusterRole' | 'ClusterRoleBinding';
    const client = new ResourceClient(cluster1Kc, {
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      plural: kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings',
      kind,
      namespaced: false,
    });
    const name = obj.metadata?.name ?? '';
    await client.delete(name, undefined, { ignoreNotFound: true });
    await client.create(obj);
    cleanups.push(() => client.delete(name, undefined, { ignoreNotFound: true }));
  }
}

/**
 * A ServiceAccount on cluster1 with exactly the rights gatewayManagedClusterRbac gives the gateway
 * (what `tether up`'s ManifestWork applies: impersonate only, plus cluster-admin for
 * cluster:hub:system:masters unless hubAdmins is false), and a token for it (the MSA's job).
 */
export async function cluster1GatewayToken(
  name: string,
  opts: { hubAdmins?: boolean } = {},
): Promise<string> {
  const namespace = 'tether-gateway-e2e';
  await cluster1Core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => {});
  await cluster1Core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
    .catch(() => {});
  cleanups.push(() => cluster1Core.deleteNamespacedServiceAccount({ name, namespace }).catch(() => {}));
  await applyOnCluster1(
    gatewayManagedClusterRbac({ namespace, serviceAccount: name }, { hubAdmins: opts.hubAdmins }),
  );
  const tr = await cluster1Core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return tr.status?.token ?? '';
}

/**
 * A hub user authenticated by a client certificate from the hub CA (CN = user, O = groups) and
 * granted `verbs` on clustergateways/proxy (and get/list on clustergateways) by hub RBAC.
 * Returns its TLS material and the path of its gateway kubeconfig for `cluster`.
 */
export async function hubUser(
  f: GatewayFixture,
  user: string,
  verbs: string[],
  cluster: string,
  groups: string[] = [],
): Promise<{
  kubeconfig: string;
  tls: { ca: string; cert: string; key: string; host: string; port: number };
}> {
  const ca = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  const cert = await issueCertificate(ca, { commonName: user, organizations: groups, usage: 'client' });
  if (verbs.length > 0) {
    const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
    const name = `tether-gateway-e2e:${user}`;
    await rbac.createClusterRole({
      body: {
        metadata: { name },
        rules: [
          { apiGroups: ['cluster.core.oam.dev'], resources: ['clustergateways/proxy'], verbs },
          { apiGroups: ['cluster.core.oam.dev'], resources: ['clustergateways'], verbs: ['get', 'list'] },
        ],
      },
    });
    cleanups.push(() => rbac.deleteClusterRole({ name }).catch(() => {}));
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
      },
    });
    cleanups.push(() => rbac.deleteClusterRoleBinding({ name }).catch(() => {}));
  }
  const kc = kubeconfigFromParts({
    name: user,
    server: env.hub.apiserverUrl,
    caPem: readFileSync(env.hub.caCertPath, 'utf8'),
    certPem: cert.certPem,
    keyPem: cert.keyPem,
  });
  const u = new URL(env.hub.apiserverUrl);
  return {
    kubeconfig: f.file(`${user}-${cluster}.kubeconfig`, kubeconfigToYaml(kubeConfigForCluster(kc, cluster))),
    tls: {
      ca: readFileSync(env.hub.caCertPath, 'utf8'),
      cert: cert.certPem,
      key: cert.keyPem,
      host: u.hostname,
      port: Number(u.port),
    },
  };
}

export function cluster1Target(): { apiserver: HostPort; url: string; caPem: string } {
  const u = new URL(env.cluster1.apiserverUrl);
  return {
    apiserver: { host: u.hostname, port: Number(u.port) },
    url: env.cluster1.apiserverUrl,
    caPem: readFileSync(env.cluster1.caCertPath, 'utf8'),
  };
}

export async function startGatewayFixture(
  gatewayOptions: Partial<Omit<LocalGatewayOptions, 'hubKubeConfig' | 'dial'>> = {},
): Promise<GatewayFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-gw-e2e-'));
  const ca: CertificateAuthority = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  const serving = await issueCertificate(ca, {
    commonName: 'gateway-e2e-proxy-server',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  const server = new ProxyServer({
    serverId: 'gateway-e2e',
    serverCount: 1,
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: ca.certPem },
  });
  const serverPort = await server.start();
  const clusters = new Map<string, FixtureCluster>();
  // The APIService is a singleton: remember one a global gateway may have registered, to put back.
  const previous = await apiServices.get(gatewayApiServiceName);
  const gateway = await startLocalGateway({
    hubKubeConfig: hubKc,
    dial: (cluster, target) => server.dial(cluster, target),
    healthIntervalMs: 1000,
    namespace: 'tether-gateway-e2e',
    serviceName: `gateway-${process.pid}`,
    ...gatewayOptions,
  });

  const startAgent = async (name: string): Promise<void> => {
    const c = clusters.get(name);
    if (!c) throw new Error(`unknown fixture cluster ${name}`);
    const cert = await issueCertificate(ca, { ...agentSubject(name, 'gw-agent'), usage: 'client' });
    c.agent = new ProxyAgent({
      cluster: name,
      agentId: 'gw-agent',
      servers: [`127.0.0.1:${serverPort}`],
      tls: { certPem: cert.certPem, keyPem: cert.keyPem, hubCaPem: ca.certPem },
      resolveTarget: targetPolicy(c.apiserver, []),
      proxyUrl: env.tunnel.squidUrl,
      backoff: { initialMs: 50, maxMs: 500 },
    });
    c.agent.start();
    await server.waitForAgents(name, 1, 30_000);
  };

  const stopAgent = async (name: string): Promise<void> => {
    const c = clusters.get(name);
    await c?.agent?.stop();
    if (c) c.agent = undefined;
  };

  const addCluster = async (
    c: Omit<FixtureCluster, 'agent'>,
    token: string,
    annotations: Record<string, string> = {},
  ): Promise<void> => {
    clusters.set(c.name, { ...c });
    await startAgent(c.name);
    await managedClusters.create({
      metadata: { name: c.name, annotations },
      spec: {
        hubAcceptsClient: true,
        managedClusterClientConfigs: [{ url: c.url, caBundle: Buffer.from(c.caPem).toString('base64') }],
      },
    });
    cleanups.push(() => managedClusters.delete(c.name, undefined, { ignoreNotFound: true }));
    await hubCore.createNamespace({ body: { metadata: { name: c.name } } }).catch(() => {});
    cleanups.push(() => hubCore.deleteNamespace({ name: c.name }).catch(() => {}));
    await hubCore.createNamespacedSecret({
      namespace: c.name,
      body: {
        metadata: { name: 'tether-gateway', labels: { [managedServiceAccountLabel]: 'true' } },
        data: {
          token: Buffer.from(token).toString('base64'),
          'ca.crt': Buffer.from(c.caPem).toString('base64'),
        },
      },
    });
    await pollUntil(() => gateway.store.get(c.name)?.status.healthy === true, {
      timeoutMs: 30_000,
      description: `ClusterGateway ${c.name} to be healthy`,
    });
  };

  const kubeconfigs = new Map<string, string>();
  return {
    server,
    gateway,
    dir,
    clusters,
    addCluster,
    startAgent,
    stopAgent,
    kubeconfigFor(cluster) {
      let path = kubeconfigs.get(cluster);
      if (!path) {
        path = join(dir, `${cluster}.kubeconfig`);
        writeFileSync(path, kubeconfigToYaml(kubeConfigForCluster(hubKc, cluster)), { mode: 0o600 });
        kubeconfigs.set(cluster, path);
      }
      return path;
    },
    file(name, content) {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    },
    async stop() {
      for (const c of clusters.values()) await c.agent?.stop();
      await gateway.stop();
      if (previous?.spec) {
        await apiServices.apply(
          { metadata: { name: gatewayApiServiceName }, spec: previous.spec },
          { fieldManager: 'tether-gateway', force: true },
        );
      }
      await server.stop(100);
      await runFixtureCleanups();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `kubectl` args that keep its discovery cache per fixture (no cross-test cache effects). */
export function cacheArgs(f: GatewayFixture): string[] {
  return ['--cache-dir', join(f.dir, 'kube-cache')];
}

/** TLS material of the hub admin (client certificate) for raw requests to the hub apiserver. */
export function hubAdminTls(): { ca: string; cert: string; key: string; host: string; port: number } {
  const pki = dirname(env.hub.caCertPath);
  const u = new URL(env.hub.apiserverUrl);
  return {
    ca: readFileSync(env.hub.caCertPath, 'utf8'),
    cert: readFileSync(join(pki, 'admin.crt'), 'utf8'),
    key: readFileSync(join(pki, 'admin.key'), 'utf8'),
    host: u.hostname,
    port: Number(u.port),
  };
}

/** A request the stand-in apiserver parsed (health probes left out). */
export interface SeenRequest {
  method: string;
  url: string;
  headers: Record<string, string[]>;
  /** CN of a verified client certificate (the gateway's X.509 credential) */
  clientCN?: string;
}

export interface TestUpstream {
  port: number;
  caPem: string;
  /** CA that signs client certificates the upstream accepts */
  clientCa: CertificateAuthority;
  /** every request it parsed, in order */
  seen: SeenRequest[];
  close(): Promise<void>;
}

/**
 * A stand-in managed apiserver: `/healthz` → ok; any other request → JSON echo of method, URL,
 * headers (distinct) and client-certificate CN; Upgrade `websocket` → a WebSocket echo (any
 * subprotocol offered first is accepted); any other Upgrade (SPDY/3.1) → 101 and a raw byte echo.
 * With `refuseUpgrades`, every Upgrade is answered 403 on a connection kept alive for more requests,
 * as kube-apiserver answers an exec the caller may not run.
 */
export async function startTestUpstream(opts: { refuseUpgrades?: boolean } = {}): Promise<TestUpstream> {
  const ca = await createCertificateAuthority('gateway-e2e-upstream-ca');
  const clientCa = await createCertificateAuthority('gateway-e2e-upstream-client-ca');
  const serving = await issueCertificate(ca, {
    commonName: 'upstream',
    usage: 'server',
    dnsNames: ['localhost', 'upstream.gateway.test'],
    ipAddresses: ['127.0.0.1'],
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (p) => [...p][0] ?? false });
  wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
  const sockets = new Set<Duplex>();
  const seen: SeenRequest[] = [];
  const record = (req: IncomingMessage): string | undefined => {
    const socket = req.socket as TLSSocket;
    const cn = socket.authorized ? socket.getPeerCertificate().subject?.CN : undefined;
    const clientCN = Array.isArray(cn) ? cn[0] : cn;
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headersDistinct as Record<string, string[]>,
      clientCN,
    });
    return clientCN;
  };
  const server = createHttpsServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: clientCa.certPem,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      if (req.url === '/healthz') {
        res.end('ok');
        return;
      }
      const cn = record(req);
      if (req.headers.upgrade) {
        res.writeHead(403, { 'content-type': 'application/json' }).end('{"kind":"Status","code":403}');
        return;
      }
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            method: req.method,
            url: req.url,
            headers: req.headersDistinct,
            clientCN: cn,
            body,
          }),
        );
      });
    },
  );
  server.on('connection', (s: Duplex) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  // Without an upgrade listener Node serves an Upgrade request as any other and keeps parsing.
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    record(req);
    if ((req.headers.upgrade ?? '').toLowerCase() === 'websocket') {
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
      return;
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${req.headers.upgrade}\r\n` +
        `X-Seen-Authorization: ${req.headers.authorization ?? ''}\r\n\r\n`,
    );
    if (head.length > 0) socket.write(head);
    socket.pipe(socket);
  };
  if (!opts.refuseUpgrades) server.on('upgrade', upgrade);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    caPem: ca.certPem,
    clientCa,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        wss.close();
        server.close(() => r());
      }),
  };
}

/**
 * A cluster-gateway credential Secret (Const endpoint) in open-cluster-management-credentials,
 * deleted by the fixture's cleanups.
 */
export async function credentialSecret(
  name: string,
  type: string,
  data: Record<string, string>,
): Promise<void> {
  await hubCore.createNamespace({ body: { metadata: { name: defaultCredentialNamespace } } }).catch(() => {});
  await hubCore.createNamespacedSecret({
    namespace: defaultCredentialNamespace,
    body: { metadata: { name, labels: { [credentialTypeLabel]: type } }, stringData: data },
  });
  cleanups.push(() =>
    hubCore.deleteNamespacedSecret({ name, namespace: defaultCredentialNamespace }).catch(() => {}),
  );
}

/** TLS options to dial the gateway port straight, as the aggregator does (front-proxy client certificate). */
export function frontProxyTls(f: GatewayFixture): {
  host: string;
  port: number;
  ca: string;
  cert: Buffer;
  key: Buffer;
} {
  const pki = dirname(env.hub.frontProxyCaCertPath);
  return {
    host: '127.0.0.1',
    port: f.gateway.port,
    ca: f.gateway.caPem,
    cert: readFileSync(join(pki, 'front-proxy-client.crt')),
    key: readFileSync(join(pki, 'front-proxy-client.key')),
  };
}

/**
 * A request straight to the gateway port, as the aggregator sends it (front-proxy client
 * certificate, identity in X-Remote-* headers) or, with frontProxy false, as anyone else would.
 */
export function direct(
  f: GatewayFixture,
  path: string,
  opts: { frontProxy: boolean; user?: string; groups?: string[]; headers?: Record<string, string> },
): Promise<{ status: number; body: string }> {
  const tls = frontProxyTls(f);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = { ...opts.headers };
    if (opts.user) headers['X-Remote-User'] = opts.user;
    if (opts.groups) headers['X-Remote-Group'] = opts.groups;
    const req = request(
      {
        host: '127.0.0.1',
        port: f.gateway.port,
        path,
        ca: f.gateway.caPem,
        servername: 'localhost',
        headers,
        ...(opts.frontProxy ? { cert: tls.cert, key: tls.key } : {}),
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
