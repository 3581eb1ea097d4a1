// Work agent benchmark: N ManifestWorks of one ConfigMap each for one cluster, on real local
// control planes (hub + cluster1, no tunnel).
//
//   npm run bench -- work [--quick] [--works=N] [--workers=N] [--cpu-prof=DIR]
//
// The works are created on the hub first; then the agent starts in a child process (so its CPU
// time is its own) with the restricted hub identity a registered cluster has. Measured: time from
// the agent's start until every work reports Applied at its generation, the agent's CPU seconds,
// and requests per work to the hub and to the managed cluster (counted in the agent, at
// client-node's per-request authentication hook). Then every work is deleted and the clean-up
// (ConfigMaps, AppliedManifestWorks, finalizers) is measured the same way.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { type ManifestWork, manifestWorkResource } from '../src/api/index.ts';
import {
  findCondition,
  type KubeObject,
  kubeconfigFromParts,
  kubeconfigToYaml,
  ResourceClient,
} from '../src/kube/index.ts';
import { startEnvironment } from '../src/localenv/environment.ts';
import { issueCertificate, loadCertificateAuthority } from '../src/pki/index.ts';
import { agentSubject } from '../src/tunnel/identity.ts';
import { startWorkAgent } from '../src/work/agent/index.ts';
import { type BenchOptions, flag, nowMs, printTable, round, sleep } from './lib/stats.ts';

const CLUSTER = 'bench-cluster';
const NAMESPACE = 'bench-work';

interface AgentStats {
  cpuUserMs: number;
  cpuSystemMs: number;
  hubRequests: number;
  managedRequests: number;
  rssMb: number;
  heapMb: number;
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

/**
 * Counts every request (watches included) made through `kc` or a view of it (the agent wraps its
 * KubeConfigs to share connections, so the count must follow `this`, not a bound original).
 */
function countRequests(kc: KubeConfig): { count: number } {
  const counter = { count: 0 };
  const authenticate = KubeConfig.prototype.applySecurityAuthentication;
  kc.applySecurityAuthentication = async function (this: KubeConfig, context) {
    counter.count++;
    return authenticate.call(this, context);
  };
  return counter;
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
        hubRequests: hubCount.count,
        managedRequests: managedCount.count,
        rssMb: process.memoryUsage().rss / 2 ** 20,
        heapMb: process.memoryUsage().heapUsed / 2 ** 20,
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
    await sleep(250);
  }
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

    const applied = async () => {
      const { items } = await works.list({ namespace: CLUSTER });
      return items.filter((w) => {
        const c = findCondition(w.status?.conditions, 'Applied');
        return c?.status === 'True' && c.observedGeneration === w.metadata.generation;
      }).length;
    };
    progress(
      `starting the agent (workers: ${workers ?? 'default'}) and waiting for ${n} works to be Applied…`,
    );
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
    await waitUntil(
      'all works gone',
      600_000,
      async () => (await works.list({ namespace: CLUSTER })).items.length === 0,
    );
    const deleteSeconds = (Date.now() - deleteStart) / 1000;
    const afterDelete = await child.stats();
    const leftover = (await configMaps.list({ namespace: NAMESPACE })).items.filter((c) =>
      c.metadata?.name?.startsWith('bench-'),
    );

    const cpuS = (s: AgentStats) => (s.cpuUserMs + s.cpuSystemMs) / 1000;
    const perWork = (x: number) => round(x / n, 2);
    const result = {
      bench: 'work',
      works: n,
      workers: workers ?? 4,
      create_works_s: round(createSeconds, 2),
      agent_ready_s: round((readyAt - applyStart) / 1000, 2),
      all_applied_s: round(applySeconds, 2),
      apply_agent_cpu_s: round(cpuS(afterApply), 2),
      apply_hub_requests_per_work: perWork(afterApply.hubRequests),
      apply_managed_requests_per_work: perWork(afterApply.managedRequests),
      all_deleted_s: round(deleteSeconds, 2),
      delete_agent_cpu_s: round(cpuS(afterDelete) - cpuS(afterApply), 2),
      delete_hub_requests_per_work: perWork(afterDelete.hubRequests - afterApply.hubRequests),
      delete_managed_requests_per_work: perWork(afterDelete.managedRequests - afterApply.managedRequests),
      leftover_configmaps: leftover.length,
      agent_rss_mb: round(afterDelete.rssMb, 1),
      agent_heap_mb: round(afterDelete.heapMb, 1),
      target_all_applied_s: 60,
      quick: opts.quick,
      loadavg_1m: round(loadavg()[0] ?? 0),
    };
    printTable(
      ['phase', 'works', 'wall s', 'agent CPU s', 'hub req/work', 'managed req/work'],
      [
        [
          'apply (agent start → all Applied)',
          String(n),
          String(result.all_applied_s),
          String(result.apply_agent_cpu_s),
          String(result.apply_hub_requests_per_work),
          String(result.apply_managed_requests_per_work),
        ],
        [
          'delete (delete → all gone)',
          String(n),
          String(result.all_deleted_s),
          String(result.delete_agent_cpu_s),
          String(result.delete_hub_requests_per_work),
          String(result.delete_managed_requests_per_work),
        ],
      ],
    );
    console.log(JSON.stringify(result));
  } finally {
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
