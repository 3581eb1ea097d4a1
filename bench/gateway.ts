// Gateway benchmark on real control planes: every figure through the gateway is set against the same
// operation straight to the managed kube-apiserver, measured in the same run.
//
//   npm run bench -- gateway [--quick]
//
// Path measured: client → hub kube-apiserver (authn, RBAC, aggregator) → gateway (front-proxy auth,
// cached SubjectAccessReview) → tunnel stream (proxy-server ⇄ proxy-agent, reversed HTTP/2 over
// mTLS) → cluster1 kube-apiserver. Baseline: client → cluster1 kube-apiserver (mTLS, keep-alive).
// The client, gateway, proxy-server and proxy-agent share this process; the apiservers are processes
// of their own. Also reported: the gateway without the hub in front (front-proxy certificate
// straight to the gateway port), to tell the hub's share from the gateway's.
//
// Cases: get-small (sequential GETs of one ConfigMap, p50/p99), watch-100 (100 concurrent watches:
// time to establish, and delivery latency of one event to all), list-2000 (one unpaginated list
// of 2 000 ConfigMaps of 512 B).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Pool } from 'undici';
import { type ManagedCluster, managedClusterResource, managedServiceAccountLabel } from '../src/api/index.ts';
import { startLocalGateway } from '../src/gateway/index.ts';
import { ResourceClient } from '../src/kube/index.ts';
import { startEnvironment } from '../src/localenv/environment.ts';
import type { ControlPlaneInfo } from '../src/localenv/types.ts';
import { issueCertificate, loadCertificateAuthority } from '../src/pki/index.ts';
import { ProxyAgent } from '../src/proxy-agent/agent.ts';
import { targetPolicy } from '../src/proxy-agent/targets.ts';
import { ProxyServer } from '../src/proxy-server/server.ts';
import { agentSubject } from '../src/tunnel/identity.ts';
import { pollUntil } from '../src/wait.ts';
import { type BenchOptions, nowMs, percentile, printTable, round } from './lib/stats.ts';

const CLUSTER = 'bench-gw';
const NS = 'bench-gateway';

interface Row {
  case: string;
  path: string;
  figures: string;
  ratio: string;
}

function mtlsPool(
  cp: ControlPlaneInfo,
  connections = 128,
  opts: { cert?: string; key?: string; url?: string } = {},
): Pool {
  const pki = dirname(cp.caCertPath);
  return new Pool(opts.url ?? cp.apiserverUrl, {
    connections,
    connect: {
      ca: readFileSync(cp.caCertPath, 'utf8'),
      cert: opts.cert ?? readFileSync(join(pki, 'admin.crt'), 'utf8'),
      key: opts.key ?? readFileSync(join(pki, 'admin.key'), 'utf8'),
      servername: 'localhost',
    },
    bodyTimeout: 0,
  });
}

async function get(pool: Pool, path: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await pool.request({
    method: 'GET',
    path,
    headers: { accept: 'application/json', ...headers },
  });
  const body = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${body.slice(0, 200)}`);
  return body;
}

async function latencies(
  pool: Pool,
  path: string,
  n: number,
  headers?: Record<string, string>,
): Promise<number[]> {
  for (let i = 0; i < Math.min(50, n); i++) await get(pool, path, headers);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = nowMs();
    await get(pool, path, headers);
    out.push(nowMs() - t);
  }
  return out;
}

/** Opens `count` watches; resolves when all are established, with a waiter for a named event. */
async function openWatches(
  pool: Pool,
  path: string,
  count: number,
): Promise<{ establishedMs: number; waitFor: (name: string) => Promise<number[]>; close: () => void }> {
  const aborts: AbortController[] = [];
  const seen: Array<Map<string, number>> = [];
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const abort = new AbortController();
      aborts.push(abort);
      const map = new Map<string, number>();
      seen[i] = map;
      const res = await pool.request({ method: 'GET', path, signal: abort.signal });
      if (res.statusCode !== 200) throw new Error(`watch ${path}: ${res.statusCode}`);
      let buf = '';
      res.body.on('data', (d: Buffer) => {
        buf += d.toString();
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const name = /"name":"([^"]+)"/.exec(line)?.[1];
          if (name && !map.has(name)) map.set(name, nowMs());
          nl = buf.indexOf('\n');
        }
      });
      res.body.on('error', () => {});
    }),
  );
  const establishedMs = nowMs() - t0;
  return {
    establishedMs,
    waitFor: async (name) => {
      await pollUntil(() => seen.every((m) => m.has(name)), {
        timeoutMs: 30_000,
        intervalMs: 5,
        description: `all ${count} watches to see ${name}`,
      });
      return seen.map((m) => m.get(name) as number);
    },
    close: () => {
      for (const a of aborts) a.abort();
    },
  };
}

export async function run(opts: BenchOptions): Promise<void> {
  const quick = opts.quick;
  const t0 = nowMs();
  const progress = (msg: string): void => {
    process.stderr.write(`[gateway ${((nowMs() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
  };
  const rows: Row[] = [];
  const emit = (json: Record<string, unknown>, row: Row): void => {
    console.log(JSON.stringify({ bench: 'gateway', ...json, quick, loadavg_1m: round(loadavg()[0] ?? 0) }));
    rows.push(row);
  };
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-gateway-'));
  progress('starting hub + cluster1 control planes');
  const env = await startEnvironment({ clusters: 1, dir, tunnel: false, progress });
  const [cluster1] = env.clusters;
  if (!cluster1) throw new Error('no cluster1');
  const hubKc = new KubeConfig();
  hubKc.loadFromFile(env.hub.kubeconfigPath);
  const c1Kc = new KubeConfig();
  c1Kc.loadFromFile(cluster1.kubeconfigPath);
  const stops: Array<() => Promise<unknown>> = [];
  const log = pino({ level: process.env.TETHER_LOG_LEVEL ?? 'silent' });
  try {
    // Tunnel: proxy-server + one agent for CLUSTER whose kube-apiserver is cluster1's.
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
    const agentCert = await issueCertificate(ca, { ...agentSubject(CLUSTER, 'bench'), usage: 'client' });
    const u = new URL(cluster1.apiserverUrl);
    const agent = new ProxyAgent({
      cluster: CLUSTER,
      agentId: 'bench',
      servers: [`127.0.0.1:${port}`],
      tls: { ...agentCert, hubCaPem: ca.certPem },
      resolveTarget: targetPolicy({ host: u.hostname, port: Number(u.port) }, []),
      log,
    });
    agent.start();
    stops.push(() => agent.stop());
    await server.waitForAgents(CLUSTER);

    // Credentials: cluster1 admin token for the gateway, as the MSA agent would project it.
    const c1 = c1Kc.makeApiClient(CoreV1Api);
    await c1.createNamespace({ body: { metadata: { name: NS } } });
    await c1.createNamespacedServiceAccount({
      namespace: 'default',
      body: { metadata: { name: 'bench-gw' } },
    });
    const caPem = readFileSync(cluster1.caCertPath, 'utf8');
    const hubCore = hubKc.makeApiClient(CoreV1Api);
    await new ResourceClient<ManagedCluster>(hubKc, managedClusterResource).create({
      metadata: { name: CLUSTER },
      spec: {
        hubAcceptsClient: true,
        managedClusterClientConfigs: [
          { url: cluster1.apiserverUrl, caBundle: Buffer.from(caPem).toString('base64') },
        ],
      },
    });
    await hubCore.createNamespace({ body: { metadata: { name: CLUSTER } } });
    const token = (
      await c1.createNamespacedServiceAccountToken({
        name: 'bench-gw',
        namespace: 'default',
        body: { spec: {} },
      })
    ).status?.token;
    await c1Kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: 'bench-gw' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: 'bench-gw', namespace: 'default' }],
      },
    });
    await hubCore.createNamespacedSecret({
      namespace: CLUSTER,
      body: {
        metadata: { name: 'tether-gateway', labels: { [managedServiceAccountLabel]: 'true' } },
        stringData: { token: token ?? '', 'ca.crt': caPem },
      },
    });
    progress('starting the gateway and registering the APIService');
    const gateway = await startLocalGateway({ hubKubeConfig: hubKc, dial: (c, t) => server.dial(c, t), log });
    stops.push(() => gateway.stop());
    await pollUntil(() => gateway.store.get(CLUSTER)?.status.healthy, {
      timeoutMs: 30_000,
      description: 'the ClusterGateway to be healthy',
    });

    const direct = mtlsPool(cluster1);
    const viaHub = mtlsPool(env.hub);
    const fpDir = dirname(env.hub.frontProxyCaCertPath);
    const viaGatewayOnly = new Pool(`https://127.0.0.1:${gateway.port}`, {
      connections: 128,
      connect: {
        ca: gateway.caPem,
        cert: readFileSync(join(fpDir, 'front-proxy-client.crt'), 'utf8'),
        key: readFileSync(join(fpDir, 'front-proxy-client.key'), 'utf8'),
        servername: 'localhost',
      },
      bodyTimeout: 0,
    });
    stops.push(() => Promise.all([direct.close(), viaHub.close(), viaGatewayOnly.close()]));
    const gw = (path: string) =>
      `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${CLUSTER}/proxy${path}`;
    const asAdmin = { 'x-remote-user': 'tether-admin', 'x-remote-group': 'system:masters' };

    // get-small
    await c1.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: 'small' }, data: { a: 'b' } },
    });
    const small = `/api/v1/namespaces/${NS}/configmaps/small`;
    const n = quick ? 300 : 2000;
    progress(`get-small: ${n} sequential GETs per path`);
    const base = await latencies(direct, small, n);
    const through = await latencies(viaHub, gw(small), n);
    const gwOnly = await latencies(viaGatewayOnly, gw(small), n, asAdmin);
    // The hub's own cost per request, for reference: a GET of a ConfigMap stored on the hub.
    await hubCore.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'bench-small' } },
    });
    const hubLocal = await latencies(viaHub, '/api/v1/namespaces/default/configmaps/bench-small', n);
    const stats = (xs: number[]) => ({
      p50: round(percentile(xs, 50), 3),
      p99: round(percentile(xs, 99), 3),
    });
    const [b, t, g, h] = [stats(base), stats(through), stats(gwOnly), stats(hubLocal)];
    emit(
      {
        case: 'get-small',
        n,
        direct_ms: b,
        hub_gateway_ms: t,
        gateway_only_ms: g,
        hub_local_get_ms: h,
        ratio_p50: round(t.p50 / b.p50),
        ratio_p99: round(t.p99 / b.p99),
        gateway_only_ratio_p50: round(g.p50 / b.p50),
        gateway_only_ratio_p99: round(g.p99 / b.p99),
      },
      {
        case: 'get-small',
        path: 'hub+gateway+tunnel vs direct',
        figures: `p50 ${t.p50} vs ${b.p50} ms; p99 ${t.p99} vs ${b.p99} ms (a hub-local GET: p50 ${h.p50}, p99 ${h.p99})`,
        ratio: `${round(t.p50 / b.p50)}× p50, ${round(t.p99 / b.p99)}× p99`,
      },
    );
    rows.push({
      case: 'get-small',
      path: 'gateway+tunnel (no hub) vs direct',
      figures: `p50 ${g.p50} vs ${b.p50} ms; p99 ${g.p99} vs ${b.p99} ms`,
      ratio: `${round(g.p50 / b.p50)}× p50, ${round(g.p99 / b.p99)}× p99`,
    });

    // watch-100
    const watches = 100;
    progress(`watch-${watches}: ${watches} concurrent watches per path`);
    const watchPath = `/api/v1/namespaces/${NS}/configmaps?watch=true&resourceVersion=0`;
    const results: Record<string, { establishedMs: number; p50: number; p99: number }> = {};
    for (const [label, pool, path] of [
      ['direct', direct, watchPath],
      ['hub_gateway', viaHub, gw(watchPath)],
    ] as const) {
      const w = await openWatches(pool, path, watches);
      const name = `event-${label.replace('_', '-')}`;
      const created = nowMs();
      await c1.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name } } });
      const seenAt = await w.waitFor(name);
      w.close();
      const delays = seenAt.map((s) => s - created);
      results[label] = {
        establishedMs: round(w.establishedMs, 1),
        p50: round(percentile(delays, 50), 2),
        p99: round(percentile(delays, 99), 2),
      };
    }
    const wd = results.direct!;
    const wg = results.hub_gateway!;
    emit(
      { case: `watch-${watches}`, direct: wd, hub_gateway: wg, ratio_delivery_p99: round(wg.p99 / wd.p99) },
      {
        case: `watch-${watches}`,
        path: 'hub+gateway+tunnel vs direct',
        figures: `establish ${wg.establishedMs} vs ${wd.establishedMs} ms; event to all: p50 ${wg.p50} vs ${wd.p50}, p99 ${wg.p99} vs ${wd.p99} ms`,
        ratio: `${round(wg.p99 / wd.p99)}× delivery p99`,
      },
    );

    // list-2000
    const count = 2000;
    progress(`list-${count}: creating ${count} ConfigMaps`);
    const payload = 'x'.repeat(512);
    for (let i = 0; i < count; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, count - i) }, (_, j) =>
          c1.createNamespacedConfigMap({
            namespace: NS,
            body: { metadata: { name: `item-${i + j}` }, data: { payload } },
          }),
        ),
      );
    }
    const listPath = `/api/v1/namespaces/${NS}/configmaps`;
    const reps = quick ? 3 : 10;
    const timeList = async (pool: Pool, path: string): Promise<{ ms: number; bytes: number }> => {
      await get(pool, path);
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < reps; i++) {
        const t = nowMs();
        const body = await get(pool, path);
        times.push(nowMs() - t);
        bytes = body.length;
        const items = (JSON.parse(body) as { items: unknown[] }).items.length;
        if (items < count) throw new Error(`list returned ${items} items`);
      }
      return { ms: round(percentile(times, 50), 1), bytes };
    };
    const ld = await timeList(direct, listPath);
    const lg = await timeList(viaHub, gw(listPath));
    emit(
      {
        case: `list-${count}`,
        reps,
        bytes: ld.bytes,
        direct_ms: ld.ms,
        hub_gateway_ms: lg.ms,
        ratio: round(lg.ms / ld.ms),
      },
      {
        case: `list-${count}`,
        path: 'hub+gateway+tunnel vs direct',
        figures: `median ${lg.ms} vs ${ld.ms} ms (${(ld.bytes / 1e6).toFixed(1)} MB)`,
        ratio: `${round(lg.ms / ld.ms)}×`,
      },
    );
    console.log('');
    console.log(
      `gateway benchmark (${quick ? 'quick' : 'full'}); client, gateway, proxy-server and agent in one process`,
    );
    printTable(
      ['case', 'path', 'figures', 'ratio'],
      rows.map((r) => [r.case, r.path, r.figures, r.ratio]),
    );
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
