// Join benchmark: N registration agents join one hub and turn Available, on real local control
// planes (a hub and ONE managed cluster, no tunnel). Targets (issue 14): 100 clusters Joined +
// Available ≤ 10 s; ≤ 15 hub requests per cluster to join and stay Available for one lease period.
//
//   npm run bench -- join [--quick] [--scenarios=10x1,100x1,100x4] [--accept=loop|precreate]
//                         [--timeout=SECONDS] [--lease=SECONDS] [--hold=SECONDS] [--cpu-prof=DIR]
//
// --lease is the clusters' spec.leaseDurationSeconds (default 60, OCM's); after the last cluster is
// done the agents keep running for --hold seconds (default: one lease period) and the hub requests
// are counted again, so "join and stay Available for one lease period" is one figure.
//
// Baseline ("floor"), measured in the same environment before the hub starts: per cluster, every
// object and state a joined cluster ends up with, each written once by one admin client, with no
// read and no watch — ManagedCluster, CSR (a real one: the KCM signs it), its approval, namespace,
// ClusterRole, ClusterRoleBinding, three RoleBindings, Lease, one status patch (HubAccepted, Joined,
// Available), one lease renewal — all N clusters side by side. Its request count is what the
// OCM protocol cannot go below without dropping an object; its wall time is this apiserver's speed
// for those writes under this run's load. The JSON line gives tether's figures as ratios to it.
//
// A scenario "NxP" runs N agents spread over P child processes (in-process within each child). All
// N agents use the one managed kube-apiserver as "their" cluster, each with its own agent namespace
// (ocm-agent-<i>) and cluster name (bench-<i>), and each its own bootstrap kubeconfig file holding a
// token of the hub's bootstrap ServiceAccount. Every scenario gets a fresh environment.
//
// The registration hub (startRegistrationHub only, no MSA controller, no leader election, bootstrap
// user auto-approved) runs in a child process of its own, so its CPU is its own. Acceptance, by
// default (--accept=loop), is what `tether accept` does: this process watches ManagedClusters and
// calls approveClusterCsrs for each one that appears. --accept=precreate instead creates the N
// ManagedClusters with hubAcceptsClient true before the agents start (the GitOps way); that prep is
// inside the request counts but outside the timed window, and reported on its own.
//
// Measured from the first agent's start until every ManagedCluster shows ManagedClusterJoined True
// and ManagedClusterConditionAvailable True: wall time (and per-cluster p50/max of each stage),
// hub kube-apiserver requests (the hub apiserver's apiserver_request_total from /metrics, after −
// before, per cluster, split by verb/resource and by client: agents, hub controllers, this
// process; the rest is the KCM), managed kube-apiserver requests, CPU seconds of the agent
// processes, the hub controllers and the control-plane processes, and RSS. Watches count when they
// end (apiserver metric rules). The hub requests are printed as a table by verb and resource: to
// join, and to join and stay Available for the hold period, next to the floor's.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CertificatesV1Api, KubeConfig, type RequestContext } from '@kubernetes/client-node';
import {
  clusterNameLabel,
  defaultLeaseDurationSeconds,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterLeaseName,
  managedClusterResource,
} from '../src/api/index.ts';
import {
  formatMicroTime,
  Informer,
  isConditionTrue,
  type KubeObject,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../src/kube/index.ts';
import { startEnvironment } from '../src/localenv/environment.ts';
import type { ControlPlaneInfo } from '../src/localenv/types.ts';
import { createCertificateRequest } from '../src/pki/index.ts';
import { type RegistrationAgent, startRegistrationAgent } from '../src/registration/agent/index.ts';
import {
  BOOTSTRAP_USER,
  bootstrapKubeconfigYaml,
  createBootstrapToken,
  ensureBootstrapIdentity,
} from '../src/registration/bootstrap.ts';
import {
  approveClusterCsrs,
  clusterRbac,
  kubeApiserverClientSignerName,
  startRegistrationHub,
} from '../src/registration/hub/index.ts';
import {
  type CertificateSigningRequest,
  certificateSigningRequestResource,
  clusterRoleBindingResource,
  clusterRoleResource,
  namespaceResource,
  roleBindingResource,
} from '../src/registration/hub/resources.ts';
import { agentSubject } from '../src/tunnel/identity.ts';
import {
  apiserverMetricLines,
  diffCounts,
  labelsOf,
  sumCounts,
  verbResource,
} from './lib/placement-metrics.ts';
import {
  type BenchOptions,
  flag,
  gc,
  percentile,
  printTable,
  round,
  sleep,
  withTimeout,
} from './lib/stats.ts';

const thisFile = fileURLToPath(import.meta.url);
/** --cpu-prof=DIR: the hub and agent child processes write V8 CPU profiles there when they exit */
let cpuProfDir: string | undefined;
const ROLE_ENV = 'TETHER_BENCH_JOIN_ROLE';
const CONFIG_ENV = 'TETHER_BENCH_JOIN_CONFIG';

// ---------------------------------------------------------------------------------------------
// Shared by every process: request counting and the child side of the IPC.

/** Requests started, by server; watches (watch=true) apart. */
interface RequestCounts {
  hub: number;
  hubWatches: number;
  managed: number;
  managedWatches: number;
  /** hub requests by "VERB resource" as the client sent them (403s included, unlike the apiserver's count) */
  hubByKind: Record<string, number>;
}

/**
 * "VERB resource[/subresource]" of a client request, in the apiserver metric's words: a GET of a
 * collection is LIST (WATCH with watch=true), of one object GET.
 */
function requestKind(method: string, url: string, contentType: string | undefined): string {
  const u = new URL(url);
  const parts = u.pathname.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length >= 3) rest.splice(0, 2);
  const [resource = '(non-resource)', name, sub] = rest;
  const what = sub ? `${resource}/${sub}` : resource;
  let verb = method.toUpperCase();
  if (verb === 'GET' && !name) verb = u.searchParams.get('watch') === 'true' ? 'WATCH' : 'LIST';
  if (verb === 'PATCH' && contentType?.startsWith('application/apply-patch')) verb = 'APPLY';
  return `${verb} ${what}`;
}

/**
 * Counts every client-node request of this process (watches included: all go through
 * applySecurityAuthentication), split by target server. Agents build their own KubeConfigs, so the
 * hook goes on the prototype.
 */
function countRequests(hubUrl: () => string): RequestCounts {
  const counts: RequestCounts = { hub: 0, hubWatches: 0, managed: 0, managedWatches: 0, hubByKind: {} };
  const authenticate = KubeConfig.prototype.applySecurityAuthentication;
  KubeConfig.prototype.applySecurityAuthentication = async function (
    this: KubeConfig,
    context: RequestContext,
  ) {
    const url = context.getUrl();
    const watch = /[?&]watch=true/.test(url);
    if (url.startsWith(hubUrl())) {
      counts[watch ? 'hubWatches' : 'hub']++;
      const headers = context.getHeaders();
      const kind = requestKind(
        context.getHttpMethod(),
        url,
        headers['Content-Type'] ?? headers['content-type'],
      );
      counts.hubByKind[kind] = (counts.hubByKind[kind] ?? 0) + 1;
    } else counts[watch ? 'managedWatches' : 'managed']++;
    return authenticate.call(this, context);
  };
  return counts;
}

interface ProcStats {
  at: number;
  cpuMs: number;
  rssMb: number;
  heapMb: number;
  requests: RequestCounts;
}

function procStats(counts: RequestCounts, collect: boolean): ProcStats {
  const cpu = process.cpuUsage();
  if (collect) gc();
  const mem = process.memoryUsage();
  return {
    at: Date.now(),
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssMb: mem.rss / 2 ** 20,
    heapMb: mem.heapUsed / 2 ** 20,
    requests: { ...counts, hubByKind: { ...counts.hubByKind } },
  };
}

type ChildOp = 'start' | 'stats' | 'stop';
interface ChildCall {
  id: number;
  op: ChildOp;
  arg?: unknown;
}
type ChildEvent = { event: 'ready' | 'creds' | 'joined'; at: number; cluster?: string };
type ChildReply = { id: number; result?: unknown; error?: string } | ChildEvent;

function serve(ops: Partial<Record<ChildOp, (arg: unknown) => Promise<unknown>>>): void {
  process.on('message', (m: ChildCall) => {
    const fn = ops[m.op];
    const done = (reply: ChildReply) =>
      process.send?.(reply, () => {
        if (m.op === 'stop') process.exit(0);
      });
    if (!fn) {
      done({ id: m.id, error: `unknown op ${m.op}` });
      return;
    }
    fn(m.arg).then(
      (result) => done({ id: m.id, result }),
      (err: unknown) =>
        done({ id: m.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ event: 'ready', at: Date.now() } satisfies ChildEvent);
}

// ---------------------------------------------------------------------------------------------
// Child: the registration hub.

interface HubChildConfig {
  hubUrl: string;
  hubKubeconfigPath: string;
}

async function hubChild(cfg: HubChildConfig): Promise<void> {
  const counts = countRequests(() => cfg.hubUrl);
  const kc = new KubeConfig();
  kc.loadFromFile(cfg.hubKubeconfigPath);
  const hub = await startRegistrationHub({
    hubKubeConfig: kc,
    autoApprovedCsrUsers: [BOOTSTRAP_USER],
    leaderElection: false,
  });
  serve({
    stats: async (collect) => procStats(counts, collect === true),
    stop: () => hub.stop(),
  });
}

// ---------------------------------------------------------------------------------------------
// Child: a share of the agents, all in this one process.

interface AgentSpec {
  clusterName: string;
  agentNamespace: string;
  bootstrapKubeconfigPath: string;
  leaseDurationSeconds: number;
}

interface AgentsChildConfig {
  hubUrl: string;
  managedKubeconfigPath: string;
  agents: AgentSpec[];
  timeoutMs: number;
}

async function agentsChild(cfg: AgentsChildConfig): Promise<void> {
  const counts = countRequests(() => cfg.hubUrl);
  const agents: RegistrationAgent[] = [];
  const send = (e: ChildEvent) => process.send?.(e);
  serve({
    start: async () => {
      for (const spec of cfg.agents) {
        const managed = new KubeConfig();
        managed.loadFromFile(cfg.managedKubeconfigPath);
        const agent = await startRegistrationAgent({
          clusterName: spec.clusterName,
          agentName: 'agent',
          managedKubeConfig: managed,
          bootstrapKubeconfigPath: spec.bootstrapKubeconfigPath,
          agentNamespace: spec.agentNamespace,
          leaseDurationSeconds: spec.leaseDurationSeconds,
        });
        agents.push(agent);
        const cluster = spec.clusterName;
        agent.waitForHubKubeConfig(cfg.timeoutMs).then(
          () => send({ event: 'creds', cluster, at: Date.now() }),
          () => {},
        );
        agent.joined(cfg.timeoutMs).then(
          () => send({ event: 'joined', cluster, at: Date.now() }),
          () => {},
        );
      }
      return Date.now();
    },
    stats: async (collect) => procStats(counts, collect === true),
    stop: async () => {
      const t = Date.now();
      await Promise.all(agents.map((a) => a.stop()));
      return Date.now() - t;
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Parent side.

/** Counts child log lines (pino JSON) by level and message; keeps the last lines for errors. */
class LogTally {
  /** "who level: msg" → count and the first line's error text */
  readonly kinds = new Map<string, { count: number; sample: string }>();
  readonly tail: string[] = [];

  add(who: string, line: string): void {
    if (!line.trim()) return;
    this.tail.push(line);
    if (this.tail.length > 20) this.tail.shift();
    let key = `${who} ${line.slice(0, 120)}`;
    let sample = '';
    try {
      const j = JSON.parse(line) as { level?: number; msg?: string; err?: unknown; problem?: unknown };
      if (j.level !== undefined && j.level < 40) return;
      key = `${who} ${j.level === 40 ? 'warn' : 'error'}: ${j.msg ?? ''}`;
      sample = String(j.err ?? j.problem ?? '').slice(0, 160);
    } catch {}
    const kind = this.kinds.get(key) ?? { count: 0, sample };
    kind.count++;
    this.kinds.set(key, kind);
  }

  /** Most frequent first. */
  top(limit: number): Array<{ what: string; count: number; sample: string }> {
    return [...this.kinds]
      .map(([what, k]) => ({ what, ...k }))
      .sort((a, b) => b.count - a.count)
      .slice(0, limit);
  }
}

class Child {
  private readonly proc: ChildProcess;
  readonly name: string;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  onEvent: (e: ChildEvent) => void = () => {};

  constructor(
    name: string,
    role: 'hub' | 'agents',
    config: HubChildConfig | AgentsChildConfig,
    logs: LogTally,
  ) {
    this.name = name;
    this.proc = fork(thisFile, [name], {
      execArgv: [
        '--expose-gc',
        ...(cpuProfDir
          ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`]
          : []),
      ],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: {
        ...process.env,
        TETHER_LOG_LEVEL: process.env.TETHER_LOG_LEVEL ?? 'warn',
        [ROLE_ENV]: role,
        [CONFIG_ENV]: JSON.stringify(config),
      },
    });
    for (const stream of [this.proc.stdout, this.proc.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (l) => logs.add(role, l));
    }
    this.exited = new Promise((r) => this.proc.once('exit', () => r()));
    let markReady: () => void = () => {};
    this.ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      this.proc.once('exit', (code, signal) => {
        const err = new Error(
          `${name} exited (code ${code}, signal ${signal}); last output:\n${logs.tail.join('\n')}`,
        );
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
    });
    this.ready.catch(() => {});
    this.proc.on('message', (m: ChildReply) => {
      if ('event' in m) {
        if (m.event === 'ready') markReady();
        else this.onEvent(m);
        return;
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(`${name}: ${m.error}`));
      else p.resolve(m.result);
    });
  }

  async call<T>(op: ChildOp, arg?: unknown): Promise<T> {
    await this.ready;
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.send({ id, op, arg } satisfies ChildCall);
    });
  }

  /** Asks the child to stop (its answer, if any), then makes sure it is gone. */
  async stop(timeoutMs = 30_000): Promise<unknown> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return undefined;
    const answer = await withTimeout(this.call('stop'), timeoutMs, `stopping ${this.name}`).catch(
      () => undefined,
    );
    const killer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(killer);
    return answer;
  }
}

/** apiserver_request_total by "VERB resource[/sub] code". */
type RequestTotals = Map<string, number>;

async function scrapeRequests(cp: ControlPlaneInfo): Promise<RequestTotals> {
  const totals: RequestTotals = new Map();
  for (const line of await apiserverMetricLines(cp)) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const { labels, value } = labelsOf(line);
    const key = `${verbResource(labels)} ${labels.code}`;
    totals.set(key, (totals.get(key) ?? 0) + value);
  }
  return totals;
}

/** Sum by "VERB resource" (codes merged), largest first. */
function byVerbResource(t: RequestTotals): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const [k, v] of t) {
    const key = k.slice(0, k.lastIndexOf(' '));
    m.set(key, (m.get(key) ?? 0) + v);
  }
  return [...m].sort((a, b) => b[1] - a[1]);
}

/** Requests answered with an error status, by code. */
function errorCodes(t: RequestTotals): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of t) {
    const code = k.slice(k.lastIndexOf(' ') + 1);
    if (Number(code) >= 400) out[code] = (out[code] ?? 0) + v;
  }
  return out;
}

/** CPU seconds (user + system) of a process so far, from /proc; 0 when it is gone. */
function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

function processName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return `pid${pid}`;
  }
}

/** "hub etcd" → pid, for the control-plane processes of the environment. */
function controlPlanePids(cps: ControlPlaneInfo[]): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const cp of cps) {
    const pids = (cp as ControlPlaneInfo & { pids?: number[] }).pids ?? [];
    for (const pid of pids) {
      const comm = processName(pid).replace('kube-controller', 'kcm').replace('kube-apiserver', 'apiserver');
      out.push([`${cp.name} ${comm}`, pid]);
    }
  }
  return out;
}

interface FloorResult {
  seconds: number;
  /** hub apiserver requests of the floor's window, this process's polls for issuance left out */
  requests: RequestTotals;
}

/**
 * The floor (see the header): for `n` clusters side by side, every object and state of a joined
 * cluster written once, then the wait for the KCM to sign the CSRs. Its ManagedClusters are
 * deleted afterwards (the hub, started later, must not reconcile them); nothing else carries the
 * cluster-name label, so the hub's caches and the bench's watchers never see them.
 */
async function runFloor(
  hubKc: KubeConfig,
  hub: ControlPlaneInfo,
  n: number,
  leaseSeconds: number,
): Promise<FloorResult> {
  const names = Array.from({ length: n }, (_, i) => `floor-${i}`);
  const csrPems = await Promise.all(
    names.map((name) => createCertificateRequest(agentSubject(name, 'agent')).then((r) => r.csrPem)),
  );
  const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
  const csrs = new ResourceClient<CertificateSigningRequest>(hubKc, certificateSigningRequestResource);
  const certificates = hubKc.makeApiClient(CertificatesV1Api);
  const namespaces = new ResourceClient<KubeObject>(hubKc, namespaceResource);
  const clusterRoles = new ResourceClient<KubeObject>(hubKc, clusterRoleResource);
  const clusterRoleBindings = new ResourceClient<KubeObject>(hubKc, clusterRoleBindingResource);
  const roleBindings = new ResourceClient<KubeObject>(hubKc, roleBindingResource);
  const leases = new ResourceClient<Lease>(hubKc, leaseResource);
  const unlabelled = <T extends KubeObject>(obj: T): T => ({
    ...obj,
    metadata: { ...obj.metadata, labels: undefined, finalizers: undefined },
  });
  const before = await scrapeRequests(hub);
  const t0 = Date.now();
  await Promise.all(
    names.map(async (name, i) => {
      await clusters.create({
        metadata: { name },
        spec: { hubAcceptsClient: true, leaseDurationSeconds: leaseSeconds },
      });
      const csr = await csrs.create({
        metadata: { name: `${name}-csr` },
        spec: {
          request: Buffer.from(csrPems[i] ?? '').toString('base64'),
          signerName: kubeApiserverClientSignerName,
          usages: ['digital signature', 'key encipherment', 'client auth'],
        },
      });
      const approved = {
        type: 'Approved',
        status: 'True',
        reason: 'BenchFloor',
        message: 'floor',
        lastUpdateTime: new Date(),
      };
      await certificates.replaceCertificateSigningRequestApproval({
        name: `${name}-csr`,
        body: { ...csr, status: { conditions: [approved] } } as never,
      });
      await namespaces.create({ metadata: { name } });
      const rbac = clusterRbac(name, true);
      await clusterRoles.create(unlabelled(rbac.clusterRole));
      await clusterRoleBindings.create(unlabelled(rbac.clusterRoleBinding));
      for (const binding of rbac.roleBindings) await roleBindings.create(unlabelled(binding));
      const now = formatMicroTime(new Date());
      const lease = await leases.create({
        metadata: { name: managedClusterLeaseName, namespace: name },
        spec: { holderIdentity: managedClusterLeaseName, leaseDurationSeconds: leaseSeconds, renewTime: now },
      });
      const condition = (type: string, reason: string) => ({
        type,
        status: 'True',
        reason,
        message: 'floor',
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      });
      await clusters.patchStatus(name, {
        status: {
          conditions: [
            condition(ManagedClusterCondition.HubAccepted, 'HubClusterAdminAccepted'),
            condition(ManagedClusterCondition.Joined, 'ManagedClusterJoined'),
            condition(ManagedClusterCondition.Available, 'ManagedClusterAvailable'),
          ],
        },
      });
      await leases.replace({ ...lease, spec: { ...lease.spec, renewTime: formatMicroTime(new Date()) } });
    }),
  );
  let polls = 0;
  for (;;) {
    polls++;
    const { items } = await csrs.list();
    const issued = items.filter((c) => names.includes((c.metadata?.name ?? '').replace(/-csr$/, '')));
    if (issued.length === n && issued.every((c) => c.status?.certificate)) break;
    if (Date.now() - t0 > 120_000) throw new Error('floor: the KCM did not sign the CSRs within 120 s');
    await sleep(100);
  }
  const seconds = (Date.now() - t0) / 1000;
  const requests = diffCounts(before, await scrapeRequests(hub));
  const listKey = [...requests.keys()].find((k) => k.startsWith('LIST certificatesigningrequests 200'));
  if (listKey) requests.set(listKey, (requests.get(listKey) ?? 0) - polls);
  await inParallel(names, 16, (name) => clusters.delete(name, undefined, { ignoreNotFound: true }));
  return { seconds, requests };
}

/** Run `task` over `items` with at most `limit` in flight. */
async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<unknown>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** This process's own requests (watchers, accept loop, pre-creation), installed once. */
let parentHubUrl = '';
let parentCountsInstalled: RequestCounts | undefined;
const parentCountsOf = () => {
  parentCountsInstalled ??= countRequests(() => parentHubUrl);
  return parentCountsInstalled;
};

interface Scenario {
  agents: number;
  procs: number;
}

type Accept = 'loop' | 'precreate';

/** Per cluster, ms since the epoch at which each stage was first seen. */
interface Timeline {
  created?: number;
  /** spec.hubAcceptsClient true seen (the accept loop's, or pre-created) */
  acceptSet?: number;
  /** HubAcceptedManagedCluster True (the hub's accept reconcile done) */
  accepted?: number;
  csrCreated?: number;
  csrApproved?: number;
  csrIssued?: number;
  creds?: number;
  joined?: number;
  available?: number;
  done?: number;
}
const stages: Array<keyof Timeline> = [
  'created',
  'acceptSet',
  'accepted',
  'csrCreated',
  'csrApproved',
  'csrIssued',
  'creds',
  'joined',
  'available',
  'done',
];

/** Hub requests per cluster by "VERB resource": to join, to join and hold, and the floor's. */
interface Breakdown {
  join: Record<string, number>;
  withHold: Record<string, number>;
  floor: Record<string, number>;
}

interface ScenarioResult {
  breakdown: Breakdown;
  /** join + hold, per cluster, client-side (403s included): who sends each kind of request */
  byClientKind: Record<'agents' | 'hub_controllers' | 'bench', Record<string, number>>;
  json: Record<string, unknown>;
  phases: Record<string, { p50: number; max: number; n: number }>;
  topRequests: Array<[string, number]>;
  warnings: Array<{ what: string; count: number; sample: string }>;
}

interface RunOptions {
  accept: Accept;
  timeoutMs: number;
  quick: boolean;
  /** the clusters' spec.leaseDurationSeconds */
  leaseSeconds: number;
  /** how long the agents keep running after the last cluster is done, counted apart */
  holdSeconds: number;
  progress: (msg: string) => void;
}

async function runScenario(s: Scenario, o: RunOptions): Promise<ScenarioResult> {
  const { accept, timeoutMs, quick, progress } = o;
  const n = s.agents;
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-join-'));
  const children: Child[] = [];
  let hubChildProc: Child | undefined;
  const informers: Array<Informer<ManagedCluster> | Informer<CertificateSigningRequest>> = [];
  let stopAccepting = false;
  progress(`[${n}x${s.procs}] starting hub + cluster1 control planes`);
  const env = await startEnvironment({ clusters: 1, dir, tunnel: false, progress: () => {} }).catch(
    (err: unknown) => {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    },
  );
  try {
    const cluster1 = env.clusters[0];
    if (!cluster1) throw new Error('no cluster1');
    const hubUrl = env.hub.apiserverUrl;
    parentHubUrl = hubUrl;
    const counts = parentCountsOf();
    const hubKc = new KubeConfig();
    hubKc.loadFromFile(env.hub.kubeconfigPath);
    await ensureBootstrapIdentity(hubKc);
    progress(`[${n}x${s.procs}] floor: ${n} clusters' objects written once, side by side`);
    const floor = await runFloor(hubKc, env.hub, n, o.leaseSeconds);
    const { token } = await createBootstrapToken(hubKc, 3600);
    const yaml = bootstrapKubeconfigYaml({
      hubApiserver: hubUrl,
      hubCaPem: readFileSync(env.hub.caCertPath, 'utf8'),
      token,
    });
    mkdirSync(join(dir, 'bootstrap'));
    const specs: AgentSpec[] = Array.from({ length: n }, (_, i) => {
      const path = join(dir, 'bootstrap', `bench-${i}.kubeconfig`);
      writeFileSync(path, yaml, { mode: 0o600 });
      return {
        clusterName: `bench-${i}`,
        agentNamespace: `ocm-agent-${i}`,
        bootstrapKubeconfigPath: path,
        leaseDurationSeconds: o.leaseSeconds,
      };
    });
    const names = new Set(specs.map((x) => x.clusterName));

    const logs = new LogTally();
    const hubChild = new Child(
      'registration-hub',
      'hub',
      { hubUrl, hubKubeconfigPath: env.hub.kubeconfigPath },
      logs,
    );
    hubChildProc = hubChild;
    await hubChild.ready;

    // Stage watchers (this process, admin): ManagedClusters and CSRs.
    const timelines = new Map<string, Timeline>();
    const tl = (name: string) => {
      const t = timelines.get(name) ?? {};
      timelines.set(name, t);
      return t;
    };
    let doneCount = 0;
    /** clusters seen without Available True after they were done (during the run or the hold) */
    const lostAvailable = new Set<string>();
    let allDone: () => void = () => {};
    const allDonePromise = new Promise<void>((r) => {
      allDone = r;
    });
    const accepting = new Set<string>();
    /** approveClusterCsrs failures (retried), by message */
    const acceptErrors = new Map<string, number>();
    const acceptQueue: string[] = [];
    let acceptWorkers = 0;
    const acceptOne = async (name: string): Promise<void> => {
      while (!stopAccepting) {
        try {
          if ((await approveClusterCsrs(hubKc, name)).accepted) return;
        } catch (err) {
          const what = err instanceof Error ? err.message.slice(0, 100) : String(err);
          acceptErrors.set(what, (acceptErrors.get(what) ?? 0) + 1);
        }
        await sleep(250);
      }
    };
    const pumpAccept = () => {
      while (acceptWorkers < 16 && acceptQueue.length > 0) {
        const name = acceptQueue.shift() as string;
        acceptWorkers++;
        void acceptOne(name).finally(() => {
          acceptWorkers--;
          pumpAccept();
        });
      }
    };
    const onCluster = (mc: ManagedCluster) => {
      const name = mc.metadata.name ?? '';
      if (!names.has(name)) return;
      const now = Date.now();
      const t = tl(name);
      t.created ??= now;
      if (mc.spec?.hubAcceptsClient === true) t.acceptSet ??= now;
      const conditions = mc.status?.conditions;
      if (isConditionTrue(conditions, ManagedClusterCondition.HubAccepted)) t.accepted ??= now;
      const joined = isConditionTrue(conditions, ManagedClusterCondition.Joined);
      const available = isConditionTrue(conditions, ManagedClusterCondition.Available);
      if (joined) t.joined ??= now;
      if (available) t.available ??= now;
      if (joined && available && t.done === undefined) {
        t.done = now;
        if (++doneCount === n) allDone();
      }
      if (t.done !== undefined && !available) lostAvailable.add(name);
      if (accept === 'loop' && mc.spec?.hubAcceptsClient !== true && !accepting.has(name)) {
        accepting.add(name);
        acceptQueue.push(name);
        pumpAccept();
      }
    };
    const clusterInformer = new Informer<ManagedCluster>(
      new ResourceClient<ManagedCluster>(hubKc, managedClusterResource),
      { name: 'bench-managedclusters' },
    );
    clusterInformer.addHandlers({ add: onCluster, update: (_o, mc) => onCluster(mc) });
    const onCsr = (csr: CertificateSigningRequest) => {
      const name = csr.metadata?.labels?.[clusterNameLabel] ?? '';
      if (!names.has(name)) return;
      const now = Date.now();
      const t = tl(name);
      t.csrCreated ??= now;
      const conditions = csr.status?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Approved' && c.status === 'True')) t.csrApproved ??= now;
      if (csr.status?.certificate) t.csrIssued ??= now;
    };
    const csrInformer = new Informer<CertificateSigningRequest>(
      new ResourceClient<CertificateSigningRequest>(hubKc, certificateSigningRequestResource),
      { name: 'bench-csrs', labelSelector: clusterNameLabel },
    );
    csrInformer.addHandlers({ add: onCsr, update: (_o, csr) => onCsr(csr) });
    informers.push(clusterInformer, csrInformer);
    clusterInformer.start();
    csrInformer.start();
    await clusterInformer.waitForSync(30_000);
    await csrInformer.waitForSync(30_000);

    // Agent processes: booted (modules loaded) before the clock starts.
    for (let p = 0; p < s.procs; p++) {
      const share = specs.filter((_, i) => i % s.procs === p);
      if (share.length === 0) continue;
      const child = new Child(
        `agents-${p}`,
        'agents',
        { hubUrl, managedKubeconfigPath: cluster1.kubeconfigPath, agents: share, timeoutMs },
        logs,
      );
      child.onEvent = (e) => {
        if (!e.cluster) return;
        const t = tl(e.cluster);
        if (e.event === 'creds') t.creds ??= e.at;
      };
      children.push(child);
    }
    await Promise.all(children.map((c) => c.ready));
    await sleep(1000); // let the hub's first lists and the informers settle

    const cpPids = controlPlanePids([env.hub, cluster1]);
    const cpCpu0 = cpPids.map(([, pid]) => processCpuSeconds(pid));
    const hubBefore = await scrapeRequests(env.hub);
    const managedBefore = await scrapeRequests(cluster1);
    const hubCtl0 = await hubChild.call<ProcStats>('stats');
    const agents0 = await Promise.all(children.map((c) => c.call<ProcStats>('stats', true)));
    const bench0 = { ...counts, hubByKind: { ...counts.hubByKind } };

    let prepSeconds: number | undefined;
    if (accept === 'precreate') {
      progress(`[${n}x${s.procs}] pre-creating ${n} accepted ManagedClusters`);
      const prepStart = Date.now();
      const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
      await inParallel(specs, 16, (spec) =>
        clusters.create({
          metadata: { name: spec.clusterName },
          spec: { hubAcceptsClient: true, leaseDurationSeconds: o.leaseSeconds },
        }),
      );
      const deadline = Date.now() + timeoutMs;
      while ([...names].some((name) => timelines.get(name)?.accepted === undefined)) {
        if (Date.now() > deadline) throw new Error('pre-created clusters were not accepted in time');
        await sleep(100);
      }
      prepSeconds = (Date.now() - prepStart) / 1000;
    }

    progress(`[${n}x${s.procs}] starting ${n} agents in ${children.length} process(es)`);
    const t0 = Date.now();
    const startedAt = await Promise.all(children.map((c) => c.call<number>('start')));
    const startSpreadMs = Math.max(...startedAt) - t0;
    const ticker = setInterval(() => {
      progress(
        `[${n}x${s.procs}] ${doneCount}/${n} Joined+Available after ${((Date.now() - t0) / 1000).toFixed(0)} s`,
      );
    }, 10_000);
    let timer: NodeJS.Timeout | undefined;
    const complete = await Promise.race([
      allDonePromise.then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    clearInterval(ticker);
    const tEnd = Date.now();
    const wallSeconds =
      ((complete ? Math.max(...[...timelines.values()].map((t) => t.done ?? 0)) : tEnd) - t0) / 1000;

    const agents1 = await Promise.all(children.map((c) => c.call<ProcStats>('stats', true)));
    const hubCtl1 = await hubChild.call<ProcStats>('stats', true);
    const bench1 = { ...counts };
    const hubAfter = await scrapeRequests(env.hub);
    const managedAfter = await scrapeRequests(cluster1);
    const cpCpu1 = cpPids.map(([, pid]) => processCpuSeconds(pid));
    progress(
      `[${n}x${s.procs}] ${complete ? 'all' : `only ${doneCount}/${n}`} done; holding ${o.holdSeconds} s`,
    );
    await sleep(o.holdSeconds * 1000);
    const agents2 = await Promise.all(children.map((c) => c.call<ProcStats>('stats')));
    const hubCtl2 = await hubChild.call<ProcStats>('stats');
    const bench2 = { ...counts, hubByKind: { ...counts.hubByKind } };
    const hubAfterHold = await scrapeRequests(env.hub);
    const stillAvailable = [...names].filter((name) =>
      isConditionTrue(clusterInformer.getByName(name)?.status?.conditions, ManagedClusterCondition.Available),
    ).length;
    progress(`[${n}x${s.procs}] stopping agents`);
    stopAccepting = true;
    const stopMs = await Promise.all(children.map((c) => c.stop()));

    const hubDiff = diffCounts(hubBefore, hubAfter);
    const managedDiff = diffCounts(managedBefore, managedAfter);
    const hubTotal = sumCounts(hubDiff);
    const managedTotal = sumCounts(managedDiff);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const agentsDelta = (k: 'hub' | 'hubWatches' | 'managed' | 'managedWatches') =>
      sum(agents1.map((a, i) => a.requests[k] - (agents0[i]?.requests[k] ?? 0)));
    const agentHub = agentsDelta('hub');
    const hubCtlRequests = hubCtl1.requests.hub - hubCtl0.requests.hub;
    const benchRequests = bench1.hub - bench0.hub;
    // Watches: the apiserver counts one when it ends, the clients when it starts; compare the rest.
    const watchesOf = (t: RequestTotals) =>
      sumCounts(new Map([...t].filter(([k]) => k.startsWith('WATCH '))));
    const hubWatches = watchesOf(hubDiff);
    const agentCpu = sum(agents1.map((a, i) => a.cpuMs - (agents0[i]?.cpuMs ?? 0))) / 1000;
    const rssAfter = sum(agents1.map((a) => a.rssMb));
    const rssBefore = sum(agents0.map((a) => a.rssMb));
    const cpCpu: Record<string, number> = {};
    cpPids.forEach(([label], i) => {
      cpCpu[label.replace(' ', '_')] = round((cpCpu1[i] ?? 0) - (cpCpu0[i] ?? 0), 2);
    });
    const seconds = (ms: number) => round(ms / 1000, 2);

    const phases: ScenarioResult['phases'] = {};
    for (const stage of stages) {
      const xs = [...timelines.values()]
        .map((t) => t[stage])
        .filter((x): x is number => x !== undefined)
        .map((x) => (x - t0) / 1000);
      if (xs.length === 0) continue;
      phases[stage] = { p50: round(percentile(xs, 50), 2), max: round(Math.max(...xs), 2), n: xs.length };
    }
    const per = (x: number) => round(x / n, 1);
    const top = byVerbResource(hubDiff).slice(0, 5);
    const holdDiff = diffCounts(hubBefore, hubAfterHold);
    const holdTotal = sumCounts(holdDiff);
    const holdWatches = watchesOf(holdDiff);
    const agentsHold = sum(agents2.map((a, i) => a.requests.hub - (agents0[i]?.requests.hub ?? 0)));
    const hubCtlHold = hubCtl2.requests.hub - hubCtl0.requests.hub;
    const benchHold = bench2.hub - bench0.hub;
    const perVerbResource = (t: RequestTotals) =>
      Object.fromEntries(byVerbResource(t).map(([k, v]) => [k, per(v)]));
    const kindDelta = (after: Record<string, number>, before: Record<string, number> | undefined) =>
      Object.fromEntries(
        Object.entries(after)
          .map(([k, v]) => [k, v - (before?.[k] ?? 0)] as const)
          .filter(([, v]) => v > 0),
      );
    const agentKinds: Record<string, number> = {};
    agents2.forEach((a, i) => {
      for (const [k, v] of Object.entries(kindDelta(a.requests.hubByKind, agents0[i]?.requests.hubByKind))) {
        agentKinds[k] = (agentKinds[k] ?? 0) + v;
      }
    });
    const perKinds = (t: Record<string, number>) =>
      Object.fromEntries(
        Object.entries(t)
          .sort(([, a], [, b]) => b - a)
          .map(([k, v]) => [k, per(v)]),
      );
    const byClientKind: ScenarioResult['byClientKind'] = {
      agents: perKinds(agentKinds),
      hub_controllers: perKinds(kindDelta(hubCtl2.requests.hubByKind, hubCtl0.requests.hubByKind)),
      bench: perKinds(kindDelta(bench2.hubByKind, bench0.hubByKind)),
    };
    const breakdown: Breakdown = {
      join: perVerbResource(hubDiff),
      withHold: perVerbResource(holdDiff),
      floor: Object.fromEntries(byVerbResource(floor.requests).map(([k, v]) => [k, round(v / n, 1)])),
    };
    const floorPerCluster = round(sumCounts(floor.requests) / n, 1);
    const warnings = logs.top(8);
    const json = {
      bench: 'join',
      agents: n,
      agent_processes: children.length,
      accept,
      complete,
      done: doneCount,
      all_available_s: round(wallSeconds, 2),
      cluster_done_p50_s: phases.done?.p50,
      agent_start_spread_s: seconds(startSpreadMs),
      ...(prepSeconds !== undefined ? { precreate_prep_s: round(prepSeconds, 2) } : {}),
      hub_requests: hubTotal,
      hub_requests_per_cluster: per(hubTotal),
      lease_duration_s: o.leaseSeconds,
      hold_s: o.holdSeconds,
      // the goal's figure: join, then stay Available for the hold (one lease period by default)
      hub_requests_per_cluster_with_hold: per(holdTotal),
      hub_requests_per_cluster_with_hold_by_client: {
        agents: per(agentsHold),
        hub_controllers: per(hubCtlHold),
        bench_watchers_and_accept: per(benchHold),
        watches_ended: per(holdWatches),
        other_kcm_etc: per(holdTotal - holdWatches - agentsHold - hubCtlHold - benchHold),
      },
      available_after_hold: stillAvailable,
      lost_available_after_done: lostAvailable.size,
      floor_requests_per_cluster: floorPerCluster,
      floor_s: round(floor.seconds, 2),
      ratio_requests_vs_floor: round(per(holdTotal) / floorPerCluster, 2),
      ratio_time_vs_floor: round(wallSeconds / floor.seconds, 2),
      hub_requests_per_cluster_by_verb_resource: breakdown,
      hub_requests_per_cluster_with_hold_by_client_and_kind: byClientKind,
      hub_watches_ended_per_cluster: per(hubWatches),
      hub_watches_started_per_cluster: {
        agents: per(agentsDelta('hubWatches')),
        hub_controllers: per(hubCtl1.requests.hubWatches - hubCtl0.requests.hubWatches),
        bench: per(bench1.hubWatches - bench0.hubWatches),
      },
      // requests other than watches, by client (KCM & co: what is left of the apiserver's count)
      hub_requests_per_cluster_by_client: {
        agents: per(agentHub),
        hub_controllers: per(hubCtlRequests),
        bench_watchers_and_accept: per(benchRequests),
        other_kcm_etc: per(hubTotal - hubWatches - agentHub - hubCtlRequests - benchRequests),
      },
      hub_top_verb_resource_per_cluster: Object.fromEntries(top.map(([k, v]) => [k, per(v)])),
      hub_error_codes: errorCodes(hubDiff),
      managed_requests_per_cluster: per(managedTotal),
      managed_requests_per_cluster_by_agents: per(agentsDelta('managed')),
      managed_watches_started_per_cluster_by_agents: per(agentsDelta('managedWatches')),
      agent_cpu_s: round(agentCpu, 2),
      agent_cpu_ms_per_cluster: round((agentCpu * 1000) / n, 1),
      agent_rss_mb: round(rssAfter, 1),
      agent_rss_mb_per_cluster: round((rssAfter - rssBefore) / n, 2),
      agent_heap_mb: round(sum(agents1.map((a) => a.heapMb)), 1),
      hub_controllers_cpu_s: round((hubCtl1.cpuMs - hubCtl0.cpuMs) / 1000, 2),
      hub_controllers_rss_mb: round(hubCtl1.rssMb, 1),
      control_plane_cpu_s: cpCpu,
      agent_stop_s: seconds(Math.max(0, ...stopMs.map((x) => (typeof x === 'number' ? x : 0)))),
      log_warnings: Object.fromEntries(warnings.map((w) => [w.what, w.count])),
      accept_loop_errors: Object.fromEntries(acceptErrors),
      target_s: 60,
      quick,
      loadavg: loadavg().map((x) => round(x, 2)),
    };
    return {
      json,
      phases,
      topRequests: top.map(([k, v]) => [k, per(v)]),
      warnings,
      breakdown,
      byClientKind,
    };
  } finally {
    stopAccepting = true;
    const step = async (what: string, f: () => Promise<unknown>) => {
      const t = Date.now();
      await f();
      if (process.env.TETHER_BENCH_JOIN_DEBUG) progress(`cleanup: ${what} ${Date.now() - t} ms`);
    };
    await step('agents', () => Promise.all(children.map((c) => c.stop())));
    await step('hub', async () => hubChildProc?.stop());
    await step('informers', () => Promise.all(informers.map((i) => i.stop())));
    await step('env', () => env.stop());
    rmSync(dir, { recursive: true, force: true });
  }
}

function parseScenarios(text: string): Scenario[] {
  return text.split(',').map((part) => {
    const m = /^(\d+)(?:x(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`--scenarios: "${part}" is not N or NxP`);
    const agents = Number(m[1]);
    const procs = Math.min(agents, Number(m[2] ?? 1));
    if (!(agents > 0 && procs > 0)) throw new Error(`--scenarios: "${part}" needs N ≥ 1 and P ≥ 1`);
    return { agents, procs };
  });
}

export async function run(opts: BenchOptions): Promise<void> {
  const scenarios = parseScenarios(
    flag(opts.args, 'scenarios') || (opts.quick ? '10x1' : '10x1,100x1,100x4'),
  );
  const acceptFlag = flag(opts.args, 'accept') || 'loop';
  if (acceptFlag !== 'loop' && acceptFlag !== 'precreate')
    throw new Error('--accept must be loop or precreate');
  const accept: Accept = acceptFlag;
  const timeoutMs = Number(flag(opts.args, 'timeout') || 300) * 1000;
  cpuProfDir = flag(opts.args, 'cpu-prof') || undefined;
  const leaseSeconds = Number(flag(opts.args, 'lease') || defaultLeaseDurationSeconds);
  const holdSeconds = Number(flag(opts.args, 'hold') ?? leaseSeconds);
  if (!(leaseSeconds >= 1 && holdSeconds >= 0)) throw new Error('--lease must be ≥ 1, --hold ≥ 0');
  const tStart = Date.now();
  const progress = (msg: string) =>
    process.stderr.write(`[join ${((Date.now() - tStart) / 1000).toFixed(1)}s] ${msg}\n`);
  progress(
    `load average before: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  const results: ScenarioResult[] = [];
  for (const s of scenarios) {
    const r = await runScenario(s, {
      accept,
      timeoutMs,
      quick: opts.quick,
      leaseSeconds,
      holdSeconds,
      progress,
    });
    console.log(JSON.stringify(r.json));
    results.push(r);
  }
  if (process.env.TETHER_BENCH_JOIN_DEBUG) {
    console.error('active:', process.getActiveResourcesInfo());
    await sleep(100);
    console.error('active:', process.getActiveResourcesInfo());
  }

  console.log('');
  console.log(
    `join benchmark (${opts.quick ? 'quick' : 'full'}, accept: ${accept}, lease ${leaseSeconds} s, hold ${holdSeconds} s); targets: 100 clusters Joined + Available ≤ 10 s, ≤ 15 hub requests per cluster to join and hold one lease period`,
  );
  const j = (r: ScenarioResult) =>
    r.json as Record<string, unknown> & { hub_requests_per_cluster_by_client: Record<string, number> };
  printTable(
    [
      'agents×procs',
      'all Available s',
      'p50 s',
      'floor s',
      'hub req/cluster',
      '+hold',
      'floor',
      'non-watch: agents/hub ctl/bench/rest',
      'managed req/cluster',
      'agent CPU s',
      'agent RSS MB',
      'hub ctl CPU s',
      'hub apiserver CPU s',
      'load 1m',
    ],
    results.map((r) => {
      const x = j(r);
      const c = x.hub_requests_per_cluster_by_client;
      const cp = x.control_plane_cpu_s as Record<string, number>;
      return [
        `${x.agents}×${x.agent_processes}${x.complete ? '' : ` (only ${x.done} done)`}`,
        String(x.all_available_s),
        String(x.cluster_done_p50_s),
        String(x.floor_s),
        String(x.hub_requests_per_cluster),
        String(x.hub_requests_per_cluster_with_hold),
        String(x.floor_requests_per_cluster),
        `${c.agents}/${c.hub_controllers}/${c.bench_watchers_and_accept}/${c.other_kcm_etc}`,
        String(x.managed_requests_per_cluster),
        String(x.agent_cpu_s),
        String(x.agent_rss_mb),
        String(x.hub_controllers_cpu_s),
        String(cp.hub_apiserver ?? '?'),
        String((x.loadavg as number[])[0]),
      ];
    }),
  );
  console.log('');
  console.log(
    'stages: seconds after the first agent start when each cluster reached it (p50 / max; negative: before, pre-created)',
  );
  printTable(
    ['agents×procs', ...stages],
    results.map((r) => [
      `${r.json.agents}×${r.json.agent_processes}`,
      ...stages.map((st) => {
        const p = r.phases[st];
        return p ? `${p.p50} / ${p.max}` : '-';
      }),
    ]),
  );
  for (const r of results) {
    const { join: joined, withHold, floor } = r.breakdown;
    const keys = [...new Set([...Object.keys(withHold), ...Object.keys(joined), ...Object.keys(floor)])];
    keys.sort((a, b) => (withHold[b] ?? 0) - (withHold[a] ?? 0) || (floor[b] ?? 0) - (floor[a] ?? 0));
    const cell = (x: number | undefined) => (x === undefined ? '-' : String(x));
    const total = (t: Record<string, number>) =>
      round(
        Object.values(t).reduce((a, b) => a + b, 0),
        1,
      );
    console.log('');
    console.log(
      `hub apiserver requests per cluster by verb and resource (apiserver_request_total, after − before), ${r.json.agents}×${r.json.agent_processes}:`,
    );
    printTable(
      ['verb resource', 'join', `join + hold ${holdSeconds} s`, 'floor'],
      [
        ...keys.map((k) => [k, cell(joined[k]), cell(withHold[k]), cell(floor[k])]),
        ['total', String(total(joined)), String(total(withHold)), String(total(floor))],
      ],
    );
    const clients = r.byClientKind;
    const kinds = [...new Set(Object.values(clients).flatMap((t) => Object.keys(t)))];
    const sumOf = (k: string) =>
      (clients.agents[k] ?? 0) + (clients.hub_controllers[k] ?? 0) + (clients.bench[k] ?? 0);
    kinds.sort((a, b) => sumOf(b) - sumOf(a));
    console.log('');
    console.log(
      `who sends them: client-side requests per cluster, join + hold (403s included; watches when they start), ${r.json.agents}×${r.json.agent_processes}:`,
    );
    printTable(
      ['verb resource', 'agents', 'hub controllers', 'bench (accept, watchers)'],
      [
        ...kinds.map((k) => [
          k,
          cell(clients.agents[k]),
          cell(clients.hub_controllers[k]),
          cell(clients.bench[k]),
        ]),
        [
          'total',
          String(total(clients.agents)),
          String(total(clients.hub_controllers)),
          String(total(clients.bench)),
        ],
      ],
    );
  }
  console.log('');
  console.log('hub apiserver: top 5 verb/resource, requests per cluster; CPU s of control-plane processes');
  for (const r of results) {
    const cp = r.json.control_plane_cpu_s as Record<string, number>;
    console.log(
      `  ${r.json.agents}×${r.json.agent_processes}: ${r.topRequests.map(([k, v]) => `${k} ${v}`).join(', ')}`,
    );
    console.log(
      `    CPU: ${Object.entries(cp)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    for (const w of r.warnings) {
      console.log(`    ${w.count}× ${w.what}${w.sample ? ` (${w.sample})` : ''}`);
    }
  }
}

const role = process.env[ROLE_ENV];
if (role && process.argv[1] === thisFile) {
  const config = JSON.parse(process.env[CONFIG_ENV] ?? '{}') as HubChildConfig & AgentsChildConfig;
  (role === 'hub' ? hubChild(config) : agentsChild(config)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
