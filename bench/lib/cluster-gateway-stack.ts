// The stack the gateway benchmark measures, on real control planes: hub + cluster1 kube-apiservers
// (processes of their own), and in this process a proxy-server, one proxy-agent for cluster
// `bench-gw` whose kube-apiserver is cluster1's, and the gateway registered with the hub aggregator.
// It hands back one HTTP client per path (undici Pools, keep-alive) so every figure is taken from
// the same client code: direct to cluster1 (admin certificate), through the hub, straight to the
// gateway (front-proxy certificate, as the aggregator calls it), and direct with the gateway's own
// credential and impersonation headers (what the managed apiserver is asked for a gateway request).
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Pool } from 'undici';
import {
  type ManagedCluster,
  managedClusterResource,
  managedServiceAccountLabel,
} from '../../src/api/index.ts';
import {
  hubAdminsGroup,
  type LocalGateway,
  managedClusterGroup,
  managedClusterUser,
  startLocalGateway,
} from '../../src/gateway/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { type Environment, startEnvironment } from '../../src/localenv/environment.ts';
import type { ControlPlaneInfo } from '../../src/localenv/types.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import { targetPolicy } from '../../src/proxy-agent/targets.ts';
import { ProxyServer } from '../../src/proxy-server/server.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';

export const BENCH_CLUSTER = 'bench-gw';
export const BENCH_NAMESPACE = 'bench-gateway';
/** USER_HZ of /proc/<pid>/stat times (100 on Linux). */
const clockTicksPerSecond = 100;

/** One client path: a pool, how to turn a managed-cluster path into its URL path, headers to add. */
export interface ClientPath {
  name: string;
  /** a fresh pool (its own connections) for this path */
  pool(connections?: number): Pool;
  /** managed-cluster API path → request path on this client's server */
  path(p: string): string;
  headers: Record<string, string>;
}

export interface GatewayBenchStack {
  env: Environment;
  gateway: LocalGateway;
  c1: CoreV1Api;
  hubCore: CoreV1Api;
  direct: ClientPath;
  /** cluster1 with the gateway's token and the hub admin impersonated, as the gateway asks it */
  directImpersonating: ClientPath;
  /** through the hub kube-apiserver and its aggregator */
  hub: ClientPath;
  /** straight to the gateway with the front-proxy certificate (no hub) */
  gatewayOnly: ClientPath;
  /** the hub itself (for its own resources: paths are taken as they are) */
  hubLocal: ClientPath;
  /** cluster-proxy's user-server in the gateway process: `/<cluster>/…` with cluster1's token passed through */
  userServer: ClientPath;
  /** CPU time (user + system, ms) used so far by this process and by the control-plane processes */
  cpuMs(): { bench: number; controlPlanes: number };
  stop(): Promise<void>;
}

function mtlsPool(url: string, caPem: string, certPem: string, keyPem: string, connections: number): Pool {
  return new Pool(url, {
    connections,
    connect: { ca: caPem, cert: certPem, key: keyPem, servername: 'localhost' },
    bodyTimeout: 0,
  });
}

function adminPath(cp: ControlPlaneInfo, name: string, path: (p: string) => string): ClientPath {
  const pki = dirname(cp.caCertPath);
  const ca = readFileSync(cp.caCertPath, 'utf8');
  const cert = readFileSync(join(pki, 'admin.crt'), 'utf8');
  const key = readFileSync(join(pki, 'admin.key'), 'utf8');
  return {
    name,
    pool: (connections = 128) => mtlsPool(cp.apiserverUrl, ca, cert, key, connections),
    path,
    headers: {},
  };
}

/** Starts everything; stop() tears it down again (also after a failed start). */
export async function startGatewayBenchStack(progress: (msg: string) => void): Promise<GatewayBenchStack> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-gateway-'));
  const stops: Array<() => Promise<unknown>> = [];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    progress('starting hub + cluster1 control planes');
    const env = await startEnvironment({ clusters: 1, dir, tunnel: false, progress });
    stops.push(() => env.stop());
    const [cluster1] = env.clusters;
    if (!cluster1) throw new Error('no cluster1');
    const hubKc = new KubeConfig();
    hubKc.loadFromFile(env.hub.kubeconfigPath);
    const c1Kc = new KubeConfig();
    c1Kc.loadFromFile(cluster1.kubeconfigPath);
    const log = pino({ level: process.env.TETHER_LOG_LEVEL ?? 'silent' });

    // Tunnel: proxy-server + one agent for BENCH_CLUSTER whose kube-apiserver is cluster1's.
    const ca = await loadCertificateAuthority(
      readFileSync(env.hub.caCertPath, 'utf8'),
      readFileSync(env.hub.caKeyPath, 'utf8'),
    );
    const serving = await issueCertificate(ca, {
      commonName: 'bench-proxy',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
    });
    const server = new ProxyServer({
      serverId: 'bench',
      serverCount: 1,
      host: '127.0.0.1',
      port: 0,
      tls: { ...serving, clientCaPem: ca.certPem },
      log,
    });
    const port = await server.start();
    stops.push(() => server.stop(100));
    const agentCert = await issueCertificate(ca, {
      ...agentSubject(BENCH_CLUSTER, 'bench'),
      usage: 'client',
    });
    const u = new URL(cluster1.apiserverUrl);
    const agent = new ProxyAgent({
      cluster: BENCH_CLUSTER,
      agentId: 'bench',
      servers: [`127.0.0.1:${port}`],
      tls: { ...agentCert, hubCaPem: ca.certPem },
      resolveTarget: targetPolicy({ host: u.hostname, port: Number(u.port) }, []),
      log,
    });
    agent.start();
    stops.push(() => agent.stop());
    await server.waitForAgents(BENCH_CLUSTER);

    // Credentials: a cluster1 token for the gateway, as the MSA agent would project it; the gateway
    // impersonates hub callers as cluster:hub:<user>, and the hub's system:masters (the benchmark's
    // hub client) is cluster-admin on cluster1, as `tether up` sets it up.
    const c1 = c1Kc.makeApiClient(CoreV1Api);
    const c1Rbac = c1Kc.makeApiClient(RbacAuthorizationV1Api);
    await c1.createNamespace({ body: { metadata: { name: BENCH_NAMESPACE } } });
    await c1.createNamespacedServiceAccount({
      namespace: 'default',
      body: { metadata: { name: 'bench-gw' } },
    });
    const caPem = readFileSync(cluster1.caCertPath, 'utf8');
    const hubCore = hubKc.makeApiClient(CoreV1Api);
    await new ResourceClient<ManagedCluster>(hubKc, managedClusterResource).create({
      metadata: { name: BENCH_CLUSTER },
      spec: {
        hubAcceptsClient: true,
        managedClusterClientConfigs: [
          { url: cluster1.apiserverUrl, caBundle: Buffer.from(caPem).toString('base64') },
        ],
      },
    });
    await hubCore.createNamespace({ body: { metadata: { name: BENCH_CLUSTER } } });
    const token =
      (
        await c1.createNamespacedServiceAccountToken({
          name: 'bench-gw',
          namespace: 'default',
          body: { spec: {} },
        })
      ).status?.token ?? '';
    const clusterAdmin = {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'cluster-admin',
    };
    await c1Rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'bench-gw' },
        roleRef: clusterAdmin,
        subjects: [{ kind: 'ServiceAccount', name: 'bench-gw', namespace: 'default' }],
      },
    });
    await c1Rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'bench-gw-hub-admins' },
        roleRef: clusterAdmin,
        subjects: [{ kind: 'Group', name: hubAdminsGroup, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    await hubCore.createNamespacedSecret({
      namespace: BENCH_CLUSTER,
      body: {
        metadata: { name: 'tether-gateway', labels: { [managedServiceAccountLabel]: 'true' } },
        stringData: { token, 'ca.crt': caPem },
      },
    });
    progress('starting the gateway and registering the APIService');
    const gateway = await startLocalGateway({
      hubKubeConfig: hubKc,
      dial: (c, t) => server.dial(c, t),
      userServer: { host: '127.0.0.1', port: 0 },
      log,
    });
    stops.push(() => gateway.stop());
    await pollUntil(() => gateway.store.get(BENCH_CLUSTER)?.status.healthy, {
      timeoutMs: 30_000,
      description: 'the ClusterGateway to be healthy',
    });

    // Who the hub admin is, as the aggregator names it to the gateway.
    const hubPki = dirname(env.hub.caCertPath);
    const adminCert = new X509Certificate(readFileSync(join(hubPki, 'admin.crt')));
    const adminUser = /(?:^|\n)CN=([^\n]+)/.exec(adminCert.subject)?.[1] ?? 'tether-admin';
    const adminGroups = [...adminCert.subject.matchAll(/(?:^|\n)O=([^\n]+)/g)].map((m) => m[1] as string);
    const gwPath = (p: string): string =>
      `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${BENCH_CLUSTER}/proxy${p}`;
    const fpDir = dirname(env.hub.frontProxyCaCertPath);
    const fpCert = readFileSync(join(fpDir, 'front-proxy-client.crt'), 'utf8');
    const fpKey = readFileSync(join(fpDir, 'front-proxy-client.key'), 'utf8');
    const identity = (p: string): string => p;
    return {
      env,
      gateway,
      c1,
      hubCore,
      direct: adminPath(cluster1, 'direct', identity),
      directImpersonating: {
        name: 'direct-impersonating',
        pool: (connections = 128) =>
          new Pool(cluster1.apiserverUrl, {
            connections,
            connect: { ca: caPem, servername: 'localhost' },
            bodyTimeout: 0,
          }),
        path: identity,
        headers: {
          authorization: `Bearer ${token}`,
          'impersonate-user': managedClusterUser(adminUser),
          ...(adminGroups.length > 0
            ? { 'impersonate-group': managedClusterGroup(adminGroups[0] ?? '') }
            : {}),
        },
      },
      hub: adminPath(env.hub, 'hub', gwPath),
      userServer: {
        name: 'user-server',
        pool: (connections = 128) =>
          new Pool(`https://127.0.0.1:${gateway.userServerPort}`, {
            connections,
            connect: { ca: gateway.caPem, servername: 'localhost' },
            bodyTimeout: 0,
          }),
        path: (p) => `/${BENCH_CLUSTER}${p}`,
        headers: { authorization: `Bearer ${token}` },
      },
      hubLocal: adminPath(env.hub, 'hub-local', identity),
      gatewayOnly: {
        name: 'gateway-only',
        pool: (connections = 128) =>
          mtlsPool(`https://127.0.0.1:${gateway.port}`, gateway.caPem, fpCert, fpKey, connections),
        path: gwPath,
        headers: {
          'x-remote-user': adminUser,
          ...(adminGroups[0] ? { 'x-remote-group': adminGroups[0] } : {}),
        },
      },
      cpuMs: () => {
        const self = process.cpuUsage();
        let ticks = 0;
        for (const pid of env.pids()) {
          try {
            // utime and stime: fields 14 and 15 of /proc/<pid>/stat, after the parenthesized name.
            const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
            ticks += Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
          } catch {
            // a process that just exited
          }
        }
        return {
          bench: (self.user + self.system) / 1000,
          controlPlanes: (ticks * 1000) / clockTicksPerSecond,
        };
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
