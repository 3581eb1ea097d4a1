// Fault injection on a real `tether up` (hub + cluster1, squid, proxy-server, `tether hub`, gateway,
// `tether agent`): each scenario kills (SIGKILL) or freezes (SIGSTOP) one real process while
// ManifestWorks are created and updated on the hub, then measures how long the system takes to heal
// and checks that nothing was lost or duplicated: every ManifestWork applied exactly once with its
// latest content and its status True, the cluster Available without an unreachable taint, the
// gateway's token Secret and the agent's hub credentials still there, kubectl through the gateway
// working. Killed processes are brought back by `tether up`'s supervisor, not by the test. The
// scenarios share one environment and run in order; the table of heal times is printed at the end.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AppliedManifestWork,
  appliedManifestWorkResource,
  type ManagedCluster,
  type ManifestWork,
  managedClusterResource,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { loadKubeconfig, ResourceClient } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { kubectl } from './fixtures/helpers.ts';
import { descendants, isLive, tetherCommand } from './fixtures/up-process-tree.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-fault-'));
const CLUSTER = 'cluster1';
/** Every scenario must heal within this (generous for a loaded 2-core machine). */
const HEAL_BOUND_MS = 90_000;
/** How long a frozen process stays frozen. */
const FREEZE_MS = 8_000;

interface Row {
  scenario: string;
  healMs: number;
  lost: string;
}
const table: Row[] = [];

type Target =
  | 'proxy-server'
  | 'tether hub'
  | 'gateway'
  | 'agent'
  | 'squid'
  | 'hub kube-apiserver'
  | 'cluster1 kube-apiserver';

/** The name `tether up`'s supervisor reports each target by. */
const reportedAs: Record<Target, string> = {
  'proxy-server': 'hub/proxy-server',
  'tether hub': 'hub/controllers',
  gateway: 'hub/gateway',
  agent: `${CLUSTER}/agent`,
  squid: 'squid',
  'hub kube-apiserver': 'hub/kube-apiserver',
  'cluster1 kube-apiserver': `${CLUSTER}/kube-apiserver`,
};

function matches(target: Target, args: string[]): boolean {
  const command = tetherCommand(args);
  switch (target) {
    case 'proxy-server':
      return command === 'proxy-server';
    case 'tether hub':
      return command === 'hub';
    case 'gateway':
      return command === 'gateway';
    case 'agent':
      return command === 'agent' && args.includes(`--cluster-name=${CLUSTER}`);
    case 'squid':
      return /(^|\/)squid$/.test(args[0] ?? '');
    case 'hub kube-apiserver':
      return /kube-apiserver$/.test(args[0] ?? '') && args.some((a) => a.includes('/state/hub-'));
    case 'cluster1 kube-apiserver':
      return /kube-apiserver$/.test(args[0] ?? '') && args.some((a) => a.includes(`/state/${CLUSTER}-`));
  }
}

/** The pid of `target` under tether up; the oldest one when a process forked (squid's workers). */
function pidOf(root: number, target: Target): number {
  const pids = descendants(root)
    .filter((p) => isLive(p.pid) && matches(target, p.args))
    .map((p) => p.pid);
  if (pids.length === 0) throw new Error(`no ${target} process under tether up (pid ${root})`);
  return Math.min(...pids);
}

describe('fault injection on tether up', () => {
  let up: ChildProcess | undefined;
  let output = '';
  const hubKubeconfig = join(dir, 'hub.kubeconfig');
  const gatewayKubeconfig = join(dir, `${CLUSTER}-gateway.kubeconfig`);
  let works: ResourceClient<ManifestWork>;
  let clusters: ResourceClient<ManagedCluster>;
  let applied: ResourceClient<AppliedManifestWork>;
  let hubCore: CoreV1Api;
  let managedCore: CoreV1Api;
  /** ManifestWork name → the value its ConfigMap must hold */
  const expected = new Map<string, string>();
  let gatewaySecretUid = '';

  const workFor = (name: string, value: string): ManifestWork =>
    ({
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: { name, namespace: CLUSTER },
      spec: {
        workload: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name, namespace: 'default' },
              data: { value },
            },
          ],
        },
      },
    }) as ManifestWork;

  /** Creates or updates a work, retrying while the hub is unreachable (the hub may be the fault). */
  async function putWork(name: string, value: string): Promise<void> {
    expected.set(name, value);
    await pollUntil(
      async () => {
        const current = await works.get(name, CLUSTER, { timeoutMs: 5_000 });
        if (!current) await works.create(workFor(name, value), { timeoutMs: 5_000 });
        else
          await works.replace(
            { ...workFor(name, value), metadata: { ...current.metadata, name, namespace: CLUSTER } },
            { timeoutMs: 5_000 },
          );
        return true;
      },
      { timeoutMs: HEAL_BOUND_MS, intervalMs: 500, description: `ManifestWork ${name} written on the hub` },
    );
  }

  /** Undefined when healed, otherwise what is still wrong. */
  async function problems(): Promise<string | undefined> {
    const cluster = await clusters.get(CLUSTER, undefined, { timeoutMs: 5_000 });
    const available = cluster?.status?.conditions?.find((c) => c.type === 'ManagedClusterConditionAvailable');
    if (available?.status !== 'True') return `Available is ${available?.status ?? 'missing'}`;
    const taints = (cluster?.spec?.taints ?? []).map((t) => t.key);
    if (taints.length > 0) return `taints ${taints.join(', ')}`;
    for (const [name, value] of expected) {
      const cm = await managedCore
        .readNamespacedConfigMap({ name, namespace: 'default' })
        .catch(() => undefined);
      if (cm?.data?.value !== value)
        return `ConfigMap ${name} holds ${cm?.data?.value ?? 'nothing'}, not ${value}`;
      const w = await works.get(name, CLUSTER, { timeoutMs: 5_000 });
      for (const type of ['Applied', 'Available']) {
        const c = w?.status?.conditions?.find((x) => x.type === type);
        if (c?.status !== 'True' || c.observedGeneration !== w?.metadata?.generation)
          return `ManifestWork ${name} ${type} ${c?.status ?? 'missing'} (generation ${w?.metadata?.generation})`;
      }
    }
    const ns = await kubectl(gatewayKubeconfig, ['get', 'ns', 'default', '-o', 'name'], {
      timeoutMs: 15_000,
    }).catch((err: Error) => err.message);
    if (ns.trim() !== 'namespace/default') return `kubectl through the gateway: ${ns.trim()}`;
    return undefined;
  }

  /** What was lost or duplicated, 'nothing' when all holds. */
  async function lostOrDuplicated(): Promise<string> {
    const found: string[] = [];
    const appliedWorks = (await applied.list()).items;
    for (const name of expected.keys()) {
      const w = await works.get(name, CLUSTER);
      if (!w) {
        found.push(`ManifestWork ${name} gone`);
        continue;
      }
      const copies = appliedWorks.filter((a) => a.spec?.manifestWorkName === name);
      if (copies.length !== 1) found.push(`${copies.length} AppliedManifestWorks for ${name}`);
    }
    const secret = await hubCore
      .readNamespacedSecret({ name: 'tether-gateway', namespace: CLUSTER })
      .catch(() => undefined);
    if (!secret?.data?.token) found.push('hub Secret cluster1/tether-gateway has no token');
    else if (secret.metadata?.uid !== gatewaySecretUid)
      found.push('hub Secret cluster1/tether-gateway was recreated');
    const hubCredentials = await managedCore
      .readNamespacedSecret({ name: 'hub-kubeconfig-secret', namespace: 'open-cluster-management-agent' })
      .catch(() => undefined);
    if (!hubCredentials?.data?.['tls.key']) found.push('agent hub-kubeconfig-secret lost its key');
    const clusterCount = (await clusters.list()).items.filter((c) => c.metadata?.name === CLUSTER).length;
    if (clusterCount !== 1) found.push(`${clusterCount} ManagedClusters named ${CLUSTER}`);
    return found.length === 0 ? 'nothing' : found.join('; ');
  }

  /**
   * One scenario: a work exists before the fault, a new one is created and the old one updated
   * while it lasts, and the system must heal within HEAL_BOUND_MS of the fault's end: the SIGKILL
   * (the restart is part of the heal) or the SIGCONT.
   */
  async function scenario(name: string, fault: () => Promise<number>): Promise<void> {
    const slug = name.replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
    const before = `fault-${slug}-before`;
    await putWork(before, 'v1');
    await pollUntil(async () => (await problems()) === undefined, {
      timeoutMs: HEAL_BOUND_MS,
      description: `a healthy system before "${name}"`,
    }).catch(async () => {
      throw new Error(`not healthy before "${name}": ${await problems()}`);
    });
    const faultDone = fault();
    await putWork(`fault-${slug}-during`, 'v1');
    await putWork(before, 'v2');
    const end = await faultDone;
    let last: string | undefined;
    await pollUntil(
      async () => {
        last = await problems().catch((err: Error) => err.message);
        return last === undefined;
      },
      { timeoutMs: HEAL_BOUND_MS, intervalMs: 500, description: `heal after "${name}"` },
    ).catch(() => {
      throw new Error(`"${name}" did not heal within ${HEAL_BOUND_MS} ms: ${last}\n${output.slice(-3000)}`);
    });
    const healMs = Date.now() - end;
    const lost = await lostOrDuplicated();
    table.push({ scenario: name, healMs, lost });
    expect(lost).toBe('nothing');
    expect(healMs).toBeLessThan(HEAL_BOUND_MS);
  }

  /**
   * SIGKILL; resolves with the kill's time once the supervisor has reported the crash and has a
   * new process ready (the heal time then counts from the kill).
   */
  const kill = (target: Target) => async (): Promise<number> => {
    const pid = pidOf(up?.pid ?? 0, target);
    const reportsBefore = output.split(`${reportedAs[target]} is running again`).length;
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();
    await pollUntil(() => output.split(`${reportedAs[target]} is running again`).length > reportsBefore, {
      timeoutMs: HEAL_BOUND_MS,
      description: `tether up to report "${reportedAs[target]} is running again" after SIGKILL of ${pid}`,
    });
    expect(output).toContain(`tether: ${reportedAs[target]} exited (SIGKILL); restarting in`);
    // the supervisor brings a new one
    await pollUntil(
      () => {
        try {
          return pidOf(up?.pid ?? 0, target) !== pid;
        } catch {
          return false;
        }
      },
      { timeoutMs: HEAL_BOUND_MS, description: `a new ${target} after SIGKILL of ${pid}` },
    );
    return killedAt;
  };

  /** SIGSTOP for FREEZE_MS; resolves with the time of the SIGCONT. */
  const freeze = (target: Target) => async (): Promise<number> => {
    const pid = pidOf(up?.pid ?? 0, target);
    process.kill(pid, 'SIGSTOP');
    try {
      await new Promise((r) => setTimeout(r, FREEZE_MS)); // the fault is a freeze of this length
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    return Date.now();
  };

  beforeAll(async () => {
    const child = spawn(
      process.execPath,
      ['bin/tether.js', 'up', '--processes', '--clusters', '1', '--dir', dir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    up = child;
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    await pollUntil(() => /ready/.test(output) || undefined, {
      timeoutMs: 240_000,
      description: `"ready" from tether up; output so far:\n${output}`,
    });
    const hub = loadKubeconfig(hubKubeconfig);
    const managed = loadKubeconfig(join(dir, `${CLUSTER}.kubeconfig`));
    works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
    clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
    applied = new ResourceClient<AppliedManifestWork>(managed, appliedManifestWorkResource);
    hubCore = hub.makeApiClient(CoreV1Api);
    managedCore = managed.makeApiClient(CoreV1Api);
    const secret = await pollUntil(
      () => hubCore.readNamespacedSecret({ name: 'tether-gateway', namespace: CLUSTER }),
      { timeoutMs: 60_000, description: 'the gateway token Secret on the hub' },
    );
    gatewaySecretUid = secret.metadata?.uid ?? '';
  }, 300_000);

  afterAll(async () => {
    if (up && up.exitCode === null) {
      const exited = new Promise((r) => up?.once('exit', r));
      up.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
      if (up.exitCode === null) up.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
    const rows = table.map((r) => `| ${r.scenario} | ${(r.healMs / 1000).toFixed(1)} s | ${r.lost} |`);
    process.stdout.write(
      `\n| scenario | heal time | lost anything |\n| --- | --- | --- |\n${rows.join('\n')}\n`,
    );
  }, 60_000);

  it('SIGKILL of the proxy-server: agents reconnect, nothing lost', () =>
    scenario('kill proxy-server', kill('proxy-server')));
  it('SIGKILL of tether hub: controllers resume, nothing lost', () =>
    scenario('kill tether hub', kill('tether hub')));
  it('SIGKILL of the gateway: kubectl through the hub comes back', () =>
    scenario('kill gateway', kill('gateway')));
  it('SIGKILL of the cluster agent: works created meanwhile are applied once', () =>
    scenario('kill agent', kill('agent')));
  it('SIGKILL of squid: agents dial out again through the new squid', () =>
    scenario('kill squid', kill('squid')));
  it('SIGKILL of the hub kube-apiserver: everyone reconnects, etcd keeps state', () =>
    scenario('kill hub kube-apiserver', kill('hub kube-apiserver')));
  it('SIGKILL of the managed kube-apiserver: status and works catch up', () =>
    scenario('kill managed kube-apiserver', kill('cluster1 kube-apiserver')));
  it('SIGSTOP of the agent for 8 s: it catches up after SIGCONT', () =>
    scenario('freeze agent', freeze('agent')));
  it('SIGSTOP of the managed kube-apiserver for 8 s: it catches up after SIGCONT', () =>
    scenario('freeze managed kube-apiserver', freeze('cluster1 kube-apiserver')));
});
