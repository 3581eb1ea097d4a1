// Work agent benchmark: N ManifestWorks of one ConfigMap each for one cluster, on real local
// control planes (hub + cluster1, no tunnel).
//
//   npm run bench -- work [--quick] [--works=N] [--workers=N] [--cpu-prof=DIR] [--apply-only]
//
// The works are created on the hub first; then the agent starts in a child process (so its CPU
// time is its own) with the restricted hub identity a registered cluster has. Measured: time from
// the agent's start until every work reports Applied at its generation, the agent's CPU seconds,
// and requests per work to the hub and to the managed cluster, by verb and resource (counted in
// the agent at client-node's per-request authentication hook, so only the agent's own requests
// count; watches count once when opened). Then every work is deleted and the clean-up
// (ConfigMaps, AppliedManifestWorks, finalizers) is measured the same way.
//
// Baseline, measured in the same run just before the agent starts: the same N ConfigMaps
// server-side applied straight to the managed apiserver from one client with the agent's
// concurrency: the floor the agent cannot beat (it also writes the hub and AppliedManifestWorks).
// Both phases also report the CPU seconds the control planes (etcd, kube-apiserver,
// kube-controller-manager of hub and cluster1) spent, which a loaded machine does not distort.
import { type ChildProcess, fork } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { type ManifestWork, manifestWorkResource } from '../src/api/index.ts';
import {
  findCondition,
  Informer,
  type KubeObject,
  kubeconfigFromParts,
  kubeconfigToYaml,
  ResourceClient,
} from '../src/kube/index.ts';
import { type Environment, startEnvironment } from '../src/localenv/environment.ts';
import { issueCertificate, loadCertificateAuthority } from '../src/pki/index.ts';
import { agentSubject } from '../src/tunnel/identity.ts';
import { startWorkAgent } from '../src/work/agent/index.ts';
import { type BenchOptions, flag, median, nowMs, percentile, printTable, round, sleep } from './lib/stats.ts';

const CLUSTER = 'bench-cluster';
const NAMESPACE = 'bench-work';
const BASELINE_NAMESPACE = 'bench-baseline';
/** startWorkAgent's default `workers` (the baseline runs with the same concurrency) */
const DEFAULT_AGENT_WORKERS = 4;

/** Requests by `<verb> <resource>[/<subresource>]`, verbs named as apiserver metrics name them. */
type RequestCounts = Record<string, number>;

interface AgentStats {
  cpuUserMs: number;
  cpuSystemMs: number;
  hubRequests: RequestCounts;
  managedRequests: RequestCounts;
  rssMb: number;
  heapMb: number;
  /** request → response headers in the agent, ms, since the previous stats (p50, p99, max) */
  hubLatencyMs: number[];
  managedLatencyMs: number[];
  /** connections the agent opened so far (undici's client:connected), hub and managed */
  hubConnections: number;
  managedConnections: number;
}

type ChildMessage =
  | { type: 'ready'; at: number }
  | ({ type: 'stats' } & AgentStats)
  | { type: 'error'; message: string };

interface ChildConfig {
  hubKubeconfig: string;
  managedKubeconfigPath: string;
  workers?: number;
}

/** `GET /apis/g/v/namespaces/ns/things/x/status` → `get things/status` (list and watch told apart). */
export function requestKind(method: string, url: string, contentType = ''): string {
  const { pathname, searchParams } = new URL(url, 'https://x');
  const parts = pathname.split('/').filter(Boolean);
  let rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const [resource = '(discovery)', name, subresource] = rest;
  const verbs: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  let verb = verbs[method] ?? 'get';
  if (method === 'GET' && !name) verb = searchParams.get('watch') === 'true' ? 'watch' : 'list';
  if (method === 'PATCH' && contentType.includes('apply-patch')) verb = 'apply';
  return `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;
}

/**
 * Counts every request (watches included) made through `kc` or a view of it (the agent wraps its
 * KubeConfigs to share connections, so the count must follow `this`, not a bound original).
 */
function countRequests(kc: KubeConfig): RequestCounts {
  const counts: RequestCounts = {};
  const authenticate = KubeConfig.prototype.applySecurityAuthentication;
  kc.applySecurityAuthentication = async function (this: KubeConfig, context) {
    const ctx = context as {
      getHttpMethod?: () => string;
      getUrl?: () => string;
      getHeaders?: () => Record<string, string>;
    };
    const type = ctx.getHeaders?.()['Content-Type'] ?? '';
    const kind =
      ctx.getUrl && ctx.getHttpMethod ? requestKind(ctx.getHttpMethod(), ctx.getUrl(), type) : 'other';
    counts[kind] = (counts[kind] ?? 0) + 1;
    return authenticate.call(this, context);
  };
  return counts;
}

/** Response times of the agent's requests (undici's diagnostics channels), hub and managed apart. */
function requestLatencies(hubOrigin: string) {
  const started = new WeakMap<object, number>();
  let hub: number[] = [];
  let managed: number[] = [];
  const connections = { hub: 0, managed: 0 };
  type Message = { request: { origin?: string } };
  // A new connection is a TLS handshake on both ends: pooling failures show here, not as requests.
  subscribe('undici:client:connected', (m) => {
    const { connectParams } = m as { connectParams: { protocol?: string; host?: string } };
    if (`${connectParams.protocol}//${connectParams.host}` === hubOrigin) connections.hub++;
    else connections.managed++;
  });
  subscribe('undici:request:create', (m) => started.set((m as Message).request, performance.now()));
  subscribe('undici:request:headers', (m) => {
    const { request } = m as Message;
    const t0 = started.get(request);
    if (t0 === undefined) return;
    (request.origin === hubOrigin ? hub : managed).push(performance.now() - t0);
  });
  const summary = (xs: number[]) =>
    [median(xs), percentile(xs, 99), Math.max(0, ...xs)].map((x) => round(x, 1));
  return {
    take() {
      const out = {
        hubLatencyMs: summary(hub),
        managedLatencyMs: summary(managed),
        hubConnections: connections.hub,
        managedConnections: connections.managed,
      };
      hub = [];
      managed = [];
      return out;
    },
  };
}

/** The child: one work agent, answering stats requests over IPC. */
async function childMain(config: ChildConfig): Promise<void> {
  const send = (m: ChildMessage) => process.send?.(m);
  const hub = new KubeConfig();
  hub.loadFromString(config.hubKubeconfig);
  const managed = new KubeConfig();
  managed.loadFromFile(config.managedKubeconfigPath);
  const hubCount = countRequests(hub);
  const managedCount = countRequests(managed);
  const latency = requestLatencies(new URL(hub.getCurrentCluster()?.server ?? '').origin);
  const agent = await startWorkAgent({
    clusterName: CLUSTER,
    agentId: 'bench-agent',
    hubKubeConfig: hub,
    managedKubeConfig: managed,
    ...(config.workers ? { workers: config.workers } : {}),
  });
  await agent.ready;
  send({ type: 'ready', at: Date.now() });
  process.on('message', async (m: { type: string }) => {
    if (m.type === 'stats') {
      const cpu = process.cpuUsage();
      (globalThis as { gc?: () => void }).gc?.();
      send({
        type: 'stats',
        cpuUserMs: cpu.user / 1000,
        cpuSystemMs: cpu.system / 1000,
        hubRequests: { ...hubCount },
        managedRequests: { ...managedCount },
        rssMb: process.memoryUsage().rss / 2 ** 20,
        heapMb: process.memoryUsage().heapUsed / 2 ** 20,
        ...latency.take(),
      });
    } else if (m.type === 'stop') {
      await agent.stop();
      process.exit(0);
    }
  });
  process.on('disconnect', () => process.exit(0));
}

class AgentChild {
  private readonly child: ChildProcess;
  private readonly waiters: Array<(m: ChildMessage) => void> = [];
  readonly exited: Promise<void>;

  constructor(config: ChildConfig, execArgv: string[] = []) {
    this.child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--expose-gc', ...execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        TETHER_LOG_LEVEL: process.env.TETHER_LOG_LEVEL ?? 'warn',
        // As bin/tether.js starts `tether agent`: with Node's compile cache (its default place),
        // so the agent's start is not charged with compiling and type-stripping every module.
        NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache'),
        TETHER_BENCH_WORK_AGENT: JSON.stringify(config),
      },
    });
    this.exited = new Promise((r) => this.child.once('exit', () => r()));
    this.child.on('message', (m: ChildMessage) => this.waiters.shift()?.(m));
  }

  private next(): Promise<ChildMessage> {
    return new Promise((resolve, reject) => {
      this.waiters.push(resolve);
      this.exited.then(() => reject(new Error('the agent child exited')));
    });
  }

  async ready(): Promise<number> {
    const m = await this.next();
    if (m.type !== 'ready') throw new Error(`agent child: ${m.type === 'error' ? m.message : m.type}`);
    return m.at;
  }

  async stats(): Promise<AgentStats> {
    const reply = this.next();
    this.child.send({ type: 'stats' });
    const m = await reply;
    if (m.type !== 'stats') throw new Error(`agent child answered ${m.type}`);
    return m;
  }

  async stop(): Promise<void> {
    this.child.send({ type: 'stop' });
    await Promise.race([this.exited, sleep(10_000)]);
    this.child.kill('SIGKILL');
  }
}

/** Run `task` over `items` with at most `limit` in flight. */
async function inParallel<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

async function restrictedHubKubeconfig(
  hub: KubeConfig,
  caCertPath: string,
  caKeyPath: string,
  server: string,
) {
  const rbac = (plural: string, kind: string) =>
    new ResourceClient<KubeObject>(hub, {
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      plural,
      kind,
      namespaced: true,
    });
  const name = 'open-cluster-management:work-agent';
  await rbac('roles', 'Role').create({
    metadata: { name, namespace: CLUSTER },
    rules: [
      {
        apiGroups: [manifestWorkResource.group],
        resources: ['manifestworks'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      {
        apiGroups: [manifestWorkResource.group],
        resources: ['manifestworks/status'],
        verbs: ['get', 'update', 'patch'],
      },
      // as the hub grants a registered cluster: the agent records events about its works
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
    ],
  } as KubeObject);
  await rbac('rolebindings', 'RoleBinding').create({
    metadata: { name, namespace: CLUSTER },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [
      {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Group',
        name: `system:open-cluster-management:${CLUSTER}`,
      },
    ],
  } as KubeObject);
  const caPem = readFileSync(caCertPath, 'utf8');
  const ca = await loadCertificateAuthority(caPem, readFileSync(caKeyPath, 'utf8'));
  const { certPem, keyPem } = await issueCertificate(ca, {
    ...agentSubject(CLUSTER, 'work'),
    usage: 'client',
  });
  return kubeconfigToYaml(kubeconfigFromParts({ server, caPem, certPem, keyPem, name: 'bench-work-agent' }));
}

async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not done within ${timeoutMs} ms`);
    await sleep(50);
  }
}

const metricVerbs: Record<string, string> = { POST: 'create', PUT: 'update', APPLY: 'apply' };

/** apiserver_request_total of `apiserverUrl` by "verb resource[/sub]", verbs lower-cased as requestKind names them. */
async function scrapeRequestTotals(apiserverUrl: string, caCertPath: string): Promise<RequestCounts> {
  const pki = dirname(caCertPath);
  const dispatcher = new Agent({
    connect: {
      ca: readFileSync(caCertPath, 'utf8'),
      cert: readFileSync(join(pki, 'admin.crt'), 'utf8'),
      key: readFileSync(join(pki, 'admin.key'), 'utf8'),
      servername: 'localhost',
    },
  });
  try {
    const res = await request(`${apiserverUrl}/metrics`, { dispatcher });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET ${apiserverUrl}/metrics: ${res.statusCode}`);
    const totals: RequestCounts = {};
    for (const line of text.split('\n')) {
      if (!line.startsWith('apiserver_request_total{')) continue;
      const close = line.lastIndexOf('}');
      const labels: Record<string, string> = {};
      for (const m of line.slice(0, close).matchAll(/(\w+)="([^"]*)"/g)) labels[m[1] ?? ''] = m[2] ?? '';
      const verb = metricVerbs[labels.verb ?? ''] ?? (labels.verb ?? '').toLowerCase();
      const key = `${verb} ${labels.resource || '(non-resource)'}${labels.subresource ? `/${labels.subresource}` : ''}`;
      totals[key] = (totals[key] ?? 0) + Number(line.slice(close + 1).trim());
    }
    return totals;
  } finally {
    await dispatcher.close();
  }
}

function diffCounts(after: RequestCounts, before: RequestCounts = {}): RequestCounts {
  const out: RequestCounts = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

const sumCounts = (c: RequestCounts) => Object.values(c).reduce((a, b) => a + b, 0);

/** "patch manifestworks/status 1.00, create events 1.00" per work, largest first. */
function perWorkBreakdown(c: RequestCounts, n: number): Record<string, number> {
  const sorted = Object.entries(c).sort((a, b) => b[1] - a[1]);
  return Object.fromEntries(sorted.map(([k, v]) => [k, round(v / n, 3)]));
}

/** CPU seconds (user + system) of one process so far, from /proc (Linux; 100 ticks/s); 0 when gone. */
function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds so far of every control-plane process ("hub/kube-apiserver", "cluster1/etcd", …). */
function controlPlaneCpu(env: Environment): RequestCounts {
  const out: RequestCounts = {};
  for (const p of env.processes()) {
    if (p.name.includes('/')) out[p.name] = (out[p.name] ?? 0) + cpuSecondsOf(p.pid);
  }
  return out;
}

/**
 * The floor: `names` ConfigMaps server-side applied straight to the managed apiserver with
 * `concurrency` requests in flight from this process. Wall seconds and this process's CPU seconds.
 */
async function directApplyBaseline(
  managed: KubeConfig,
  namespace: string,
  names: readonly string[],
  concurrency: number,
): Promise<{ seconds: number; cpuSeconds: number }> {
  const configMaps = new ResourceClient<KubeObject & { data?: Record<string, string> }>(managed, {
    group: '',
    version: 'v1',
    plural: 'configmaps',
    kind: 'ConfigMap',
    namespaced: true,
  });
  const cpu0 = process.cpuUsage();
  const start = nowMs();
  await inParallel(names, concurrency, (name) =>
    configMaps.apply(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { work: name } },
      { fieldManager: 'bench-baseline', force: true },
    ),
  );
  const seconds = (nowMs() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

export async function run(opts: BenchOptions): Promise<void> {
  const n = Number(flag(opts.args, 'works') ?? (opts.quick ? 100 : 500));
  const workersFlag = flag(opts.args, 'workers');
  const workers = workersFlag ? Number(workersFlag) : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-work-'));
  const t0 = nowMs();
  const progress = (msg: string) =>
    process.stderr.write(`[work ${((nowMs() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
  const env = await startEnvironment({ clusters: 1, dir, tunnel: false, progress });
  let child: AgentChild | undefined;
  let watched: Informer<ManifestWork> | undefined;
  try {
    const cluster1 = env.clusters[0];
    if (!cluster1) throw new Error('no cluster1');
    const hub = new KubeConfig();
    hub.loadFromFile(env.hub.kubeconfigPath);
    const managed = new KubeConfig();
    managed.loadFromFile(cluster1.kubeconfigPath);
    const namespaces = (kc: KubeConfig) =>
      new ResourceClient<KubeObject>(kc, {
        group: '',
        version: 'v1',
        plural: 'namespaces',
        kind: 'Namespace',
        namespaced: false,
      });
    await namespaces(hub).create({ metadata: { name: CLUSTER } });
    await namespaces(managed).create({ metadata: { name: NAMESPACE } });
    await namespaces(managed).create({ metadata: { name: BASELINE_NAMESPACE } });
    const hubKubeconfig = await restrictedHubKubeconfig(
      hub,
      env.hub.caCertPath,
      env.hub.caKeyPath,
      env.hub.apiserverUrl,
    );

    const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
    const names = Array.from({ length: n }, (_, i) => `bench-${String(i).padStart(4, '0')}`);
    progress(`creating ${n} ManifestWorks…`);
    const createStart = nowMs();
    await inParallel(names, 16, (name) =>
      works.create({
        metadata: { name, namespace: CLUSTER },
        spec: {
          workload: {
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                metadata: { name, namespace: NAMESPACE },
                data: { work: name },
              },
            ],
          },
        },
      }),
    );
    const createSeconds = (nowMs() - createStart) / 1000;

    const concurrency = workers ?? DEFAULT_AGENT_WORKERS;
    progress(`baseline: ${n} server-side applies of the same ConfigMaps, ${concurrency} in flight…`);
    // Control planes (etcd, kube-apiserver, kube-controller-manager of hub and cluster1): what
    // each phase costs them, load-insensitive unlike wall time.
    const planesCpu0 = controlPlaneCpu(env);
    const baseline = await directApplyBaseline(managed, BASELINE_NAMESPACE, names, concurrency);
    const planesCpuBaseline = sumCounts(diffCounts(controlPlaneCpu(env), planesCpu0));

    // Watched, not listed: listing 500 works every few hundred ms would load the hub apiserver
    // the agent is being measured against.
    watched = new Informer<ManifestWork>(works, { namespace: CLUSTER });
    watched.start();
    await watched.waitForSync(60_000);
    const workCache = watched;
    const applied = async () =>
      workCache.list().filter((w) => {
        const c = findCondition(w.status?.conditions, 'Applied');
        return c?.status === 'True' && c.observedGeneration === w.metadata.generation;
      }).length;
    progress(
      `starting the agent (workers: ${workers ?? 'default'}) and waiting for ${n} works to be Applied…`,
    );
    const hubMetricsBefore = await scrapeRequestTotals(env.hub.apiserverUrl, env.hub.caCertPath);
    const planesCpu1 = controlPlaneCpu(env);
    const applyStart = Date.now();
    const cpuProf = flag(opts.args, 'cpu-prof');
    const execArgv = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : [];
    child = new AgentChild(
      { hubKubeconfig, managedKubeconfigPath: cluster1.kubeconfigPath, workers },
      execArgv,
    );
    const readyAt = await child.ready();
    await waitUntil('all works Applied', 600_000, async () => (await applied()) === n);
    const applySeconds = (Date.now() - applyStart) / 1000;
    const afterApply = await child.stats();
    const planesCpuApplyByProcess = diffCounts(controlPlaneCpu(env), planesCpu1);
    const planesCpuApply = sumCounts(planesCpuApplyByProcess);
    // Cross-check from the hub apiserver's own metrics: everything but the bench's polling lists.
    const hubMetricsApply = diffCounts(
      await scrapeRequestTotals(env.hub.apiserverUrl, env.hub.caCertPath),
      hubMetricsBefore,
    );
    for (const k of Object.keys(hubMetricsApply)) if (k.startsWith('list ')) delete hubMetricsApply[k];

    // --apply-only: the goal is the apply phase; the clean-up takes several times as long.
    const applyOnly = flag(opts.args, 'apply-only') !== undefined;
    let deleteSeconds = 0;
    let afterDelete = afterApply;
    let leftover: KubeObject[] = [];
    if (!applyOnly) {
      progress(`deleting ${n} works and waiting for the clean-up…`);
      const deleteStart = Date.now();
      await inParallel(names, 16, (name) => works.delete(name, CLUSTER));
      const configMaps = new ResourceClient<KubeObject>(managed, {
        group: '',
        version: 'v1',
        plural: 'configmaps',
        kind: 'ConfigMap',
        namespaced: true,
      });
      await waitUntil('all works gone', 600_000, async () => workCache.list().length === 0);
      deleteSeconds = (Date.now() - deleteStart) / 1000;
      afterDelete = await child.stats();
      leftover = (await configMaps.list({ namespace: NAMESPACE })).items.filter((c) =>
        c.metadata?.name?.startsWith('bench-'),
      );
    }

    const cpuS = (s: AgentStats) => (s.cpuUserMs + s.cpuSystemMs) / 1000;
    const perWork = (x: number) => round(x / n, 2);
    const hubApply = afterApply.hubRequests;
    const hubDelete = diffCounts(afterDelete.hubRequests, afterApply.hubRequests);
    const managedApply = afterApply.managedRequests;
    const managedDelete = diffCounts(afterDelete.managedRequests, afterApply.managedRequests);
    const applyAfterReady = applySeconds - (readyAt - applyStart) / 1000;
    const result = {
      bench: 'work',
      works: n,
      workers: concurrency,
      create_works_s: round(createSeconds, 2),
      baseline_direct_ssa_s: round(baseline.seconds, 2),
      baseline_direct_ssa_cpu_s: round(baseline.cpuSeconds, 2),
      agent_ready_s: round((readyAt - applyStart) / 1000, 2),
      all_applied_s: round(applySeconds, 2),
      applied_after_ready_s: round(applyAfterReady, 2),
      ratio_vs_direct: round(applySeconds / baseline.seconds, 2),
      ratio_after_ready_vs_direct: round(applyAfterReady / baseline.seconds, 2),
      baseline_control_planes_cpu_s: round(planesCpuBaseline, 2),
      apply_control_planes_cpu_s: round(planesCpuApply, 2),
      control_planes_cpu_ratio_vs_direct: round(planesCpuApply / planesCpuBaseline, 2),
      apply_control_planes_cpu_s_by_process: Object.fromEntries(
        Object.entries(planesCpuApplyByProcess).map(([k, v]) => [k, round(v, 2)]),
      ),
      apply_agent_cpu_s: round(cpuS(afterApply), 2),
      cpu_ratio_vs_direct: round(cpuS(afterApply) / baseline.cpuSeconds, 2),
      apply_hub_requests_per_work: perWork(sumCounts(hubApply)),
      apply_hub_requests_per_work_by_kind: perWorkBreakdown(hubApply, n),
      apply_hub_apiserver_metrics_per_work_by_kind: perWorkBreakdown(hubMetricsApply, n),
      apply_hub_request_ms_p50_p99_max: afterApply.hubLatencyMs,
      apply_managed_request_ms_p50_p99_max: afterApply.managedLatencyMs,
      apply_hub_connections: afterApply.hubConnections,
      apply_managed_connections: afterApply.managedConnections,
      apply_managed_requests_per_work: perWork(sumCounts(managedApply)),
      apply_managed_requests_per_work_by_kind: perWorkBreakdown(managedApply, n),
      all_deleted_s: round(deleteSeconds, 2),
      delete_agent_cpu_s: round(cpuS(afterDelete) - cpuS(afterApply), 2),
      delete_hub_requests_per_work: perWork(sumCounts(hubDelete)),
      delete_hub_requests_per_work_by_kind: perWorkBreakdown(hubDelete, n),
      delete_hub_connections: afterDelete.hubConnections - afterApply.hubConnections,
      delete_managed_connections: afterDelete.managedConnections - afterApply.managedConnections,
      delete_managed_requests_per_work: perWork(sumCounts(managedDelete)),
      delete_managed_requests_per_work_by_kind: perWorkBreakdown(managedDelete, n),
      leftover_configmaps: leftover.length,
      agent_rss_mb: round(afterDelete.rssMb, 1),
      agent_heap_mb: round(afterDelete.heapMb, 1),
      target_all_applied_s: 8,
      target_hub_requests_per_work: 1.5,
      request_counting: 'agent client (client-node auth hook); cross-check: hub apiserver_request_total',
      quick: opts.quick,
      apply_only: applyOnly,
      loadavg_1m: round(loadavg()[0] ?? 0),
    };
    printTable(
      ['phase', 'works', 'wall s', 'CPU s', 'control planes CPU s', 'hub req/work', 'managed req/work'],
      [
        [
          `baseline: direct SSA, ${concurrency} in flight`,
          String(n),
          String(result.baseline_direct_ssa_s),
          String(result.baseline_direct_ssa_cpu_s),
          String(result.baseline_control_planes_cpu_s),
          '0',
          '1',
        ],
        [
          'apply (agent start → all Applied)',
          String(n),
          String(result.all_applied_s),
          String(result.apply_agent_cpu_s),
          String(result.apply_control_planes_cpu_s),
          String(result.apply_hub_requests_per_work),
          String(result.apply_managed_requests_per_work),
        ],
        [
          'delete (delete → all gone)',
          String(n),
          String(result.all_deleted_s),
          String(result.delete_agent_cpu_s),
          '-',
          String(result.delete_hub_requests_per_work),
          String(result.delete_managed_requests_per_work),
        ],
      ],
    );
    console.log('');
    const kinds = (c: Record<string, number>) =>
      Object.entries(c)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || '-';
    printTable(
      ['requests per work', 'by verb and resource'],
      [
        ['apply, hub (agent)', kinds(result.apply_hub_requests_per_work_by_kind)],
        [
          'apply, hub (apiserver metrics, no lists)',
          kinds(result.apply_hub_apiserver_metrics_per_work_by_kind),
        ],
        ['apply, managed (agent)', kinds(result.apply_managed_requests_per_work_by_kind)],
        ['delete, hub (agent)', kinds(result.delete_hub_requests_per_work_by_kind)],
        ['delete, managed (agent)', kinds(result.delete_managed_requests_per_work_by_kind)],
        ['apply, control planes CPU s', kinds(result.apply_control_planes_cpu_s_by_process)],
      ],
    );
    console.log(JSON.stringify(result));
  } finally {
    await watched?.stop();
    await child?.stop();
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const childConfig = process.env.TETHER_BENCH_WORK_AGENT;
if (childConfig && process.argv[1] === fileURLToPath(import.meta.url)) {
  childMain(JSON.parse(childConfig) as ChildConfig).catch((err: unknown) => {
    process.send?.({ type: 'error', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
}
