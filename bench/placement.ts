// Placement benchmark (issue 15): N ManagedClusters (objects only, no agents) in four bound
// cluster sets and P Placements — time until every Placement has its decisions, CPU seconds of the
// placement hub for that, and the hub's CPU and hub-apiserver writes while idle afterwards.
//
//   npm run bench -- placement [--quick] [--clusters=N] [--placements=P] [--idle=SECONDS] [--cpu-prof=DIR]
//
// Full: 1000 clusters, 100 Placements, 30 s idle window; --quick: 200 clusters, 20 Placements, 10 s.
// Clusters: set bench-s<i%4> (ExclusiveClusterSetLabel), label zone=z<i%5>. Placements, 10 per
// namespace bench-<n> (each namespace binds all four sets), in turn: numberOfClusters 5; a label
// predicate (zone=z<p%5>: N/5 clusters); clusterSets [one set] + numberOfClusters 20 + an Additive
// prioritizer (ResourceAllocatableCPU 1, Balance 2); clusterSets [two sets] + a matchExpressions
// predicate (zone In z0,z1).
//
// The placement hub runs in a child process (bench/lib/placement-hub-child.ts: startPlacementHub —
// cluster-set controllers, scheduler, ManifestWorkReplicaSet controller; no leader election, no
// admission install; Node's compile cache on, as bin/tether.js) — the same code `tether hub` runs,
// without the registration hub next to it, so its CPU (read from /proc) is the placement hub's alone. Timed from the fork (module load included) until
// every Placement's status.numberOfSelectedClusters is what the bench computes and the
// PlacementDecisions hold that many clusters; this process polls the Placements every 250 ms (its
// LISTs of placements and placementdecisions are in the request counts). `hub_started_ms` is when
// startPlacementHub returned in the child (module load + start); `decided_after_start_ms` the rest.
//
// Baseline ("floor"), in the same environment before the hub starts: the same PlacementDecisions
// (same names, count and sizes, in namespaces floor-<n>) created and status-written by this
// process alone, two placements at a time (the scheduler's two workers), a placement's decisions
// side by side as the binder writes them. Its wall time is this apiserver's speed for those writes
// under this run's load; the JSON line gives tether's figures as ratios to it.
//
// Idle: 3 s after the last decision, for the idle window: the hub child's CPU seconds and the hub
// apiserver's write requests (apiserver_request_total, POST/PUT/PATCH/DELETE/APPLY, leases apart:
// the KCM's leader election renews its own). Open watches (apiserver_longrunning_requests WATCH)
// of the hub child are the count after it decided minus the count before it started.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterSetLabel, type ManagedCluster, managedClusterResource } from '../src/api/index.ts';
import {
  decisionGroupIndexLabel,
  decisionGroupNameLabel,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  maxDecisionsPerPlacementDecision,
  placementDecisionName,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../src/api/placement.ts';
import { type KubeObject, loadKubeconfig, ResourceClient } from '../src/kube/index.ts';
import { startEnvironment } from '../src/localenv/environment.ts';
import {
  diffCounts,
  formatCounts,
  isWrite,
  processCpuSeconds,
  scrapeApiserver,
  sumCounts,
} from './lib/placement-metrics.ts';
import { type BenchOptions, flag, nowMs, printTable, round, sleep } from './lib/stats.ts';

const childFile = fileURLToPath(new URL('./lib/placement-hub-child.ts', import.meta.url));
const sets = ['bench-s0', 'bench-s1', 'bench-s2', 'bench-s3'];
const namespacesOf = (placements: number): number => Math.ceil(placements / 10);

interface ClusterDesc {
  name: string;
  set: string;
  zone: string;
}

interface PlacementDesc {
  namespace: string;
  name: string;
  spec: Record<string, unknown>;
  /** names of the clusters it can select (before numberOfClusters) */
  eligible: (c: ClusterDesc) => boolean;
  count?: number;
}

function clustersFor(n: number): ClusterDesc[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `mc${String(i).padStart(4, '0')}`,
    set: sets[i % 4] as string,
    zone: `z${i % 5}`,
  }));
}

function placementsFor(total: number, prefix: string): PlacementDesc[] {
  const out: PlacementDesc[] = [];
  for (let p = 0; p < total; p++) {
    const namespace = `${prefix}-${Math.floor(p / 10)}`;
    const name = `p${p % 10}`;
    switch (p % 4) {
      case 0:
        out.push({ namespace, name, spec: { numberOfClusters: 5 }, eligible: () => true, count: 5 });
        break;
      case 1: {
        const zone = `z${p % 5}`;
        out.push({
          namespace,
          name,
          spec: { predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: { zone } } } }] },
          eligible: (c) => c.zone === zone,
        });
        break;
      }
      case 2: {
        const set = sets[p % 4] as string;
        out.push({
          namespace,
          name,
          spec: {
            clusterSets: [set],
            numberOfClusters: 20,
            prioritizerPolicy: {
              mode: 'Additive',
              configurations: [
                { scoreCoordinate: { type: 'BuiltIn', builtIn: 'ResourceAllocatableCPU' }, weight: 1 },
                { scoreCoordinate: { type: 'BuiltIn', builtIn: 'Balance' }, weight: 2 },
              ],
            },
          },
          eligible: (c) => c.set === set,
          count: 20,
        });
        break;
      }
      default:
        out.push({
          namespace,
          name,
          spec: {
            clusterSets: ['bench-s0', 'bench-s1'],
            predicates: [
              {
                requiredClusterSelector: {
                  labelSelector: {
                    matchExpressions: [{ key: 'zone', operator: 'In', values: ['z0', 'z1'] }],
                  },
                },
              },
            ],
          },
          eligible: (c) =>
            (c.set === 'bench-s0' || c.set === 'bench-s1') && (c.zone === 'z0' || c.zone === 'z1'),
        });
    }
  }
  return out;
}

function expectedSelected(p: PlacementDesc, clusters: ClusterDesc[]): string[] {
  const eligible = clusters.filter(p.eligible).map((c) => c.name);
  return p.count === undefined ? eligible : eligible.slice(0, p.count);
}

/** The floor: the decisions of `placements`, created + status-written by this process. */
async function writeFloor(
  decisions: ResourceClient<KubeObject>,
  placements: PlacementDesc[],
  clusters: ClusterDesc[],
): Promise<{ ms: number; objects: number }> {
  let next = 0;
  let objects = 0;
  const t0 = nowMs();
  const worker = async (): Promise<void> => {
    while (next < placements.length) {
      const p = placements[next++] as PlacementDesc;
      const selected = expectedSelected(p, clusters);
      const chunks: string[][] = [];
      for (let i = 0; i < selected.length; i += maxDecisionsPerPlacementDecision) {
        chunks.push(selected.slice(i, i + maxDecisionsPerPlacementDecision));
      }
      if (chunks.length === 0) chunks.push([]);
      objects += chunks.length;
      await Promise.all(
        chunks.map(async (chunk, i) => {
          const name = placementDecisionName(p.name, i + 1);
          await decisions.create({
            metadata: {
              name,
              namespace: p.namespace,
              labels: {
                [placementLabel]: p.name,
                [decisionGroupIndexLabel]: '0',
                [decisionGroupNameLabel]: '',
              },
            },
          });
          await decisions.patchStatus(
            name,
            { status: { decisions: chunk.map((clusterName) => ({ clusterName, reason: '' })) } },
            p.namespace,
          );
        }),
      );
    }
  };
  await Promise.all([worker(), worker()]);
  return { ms: nowMs() - t0, objects };
}

function startHubChild(kubeconfigPath: string, cpuProfDir: string | undefined): ChildProcess {
  return fork(childFile, [kubeconfigPath], {
    execArgv: cpuProfDir
      ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, '--cpu-prof-name=placement-hub.cpuprofile']
      : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: {
      ...process.env,
      TETHER_LOG_LEVEL: process.env.TETHER_LOG_LEVEL ?? 'warn',
    },
  });
}

async function stopHubChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.send('stop');
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(killer);
}

async function runScenario(opts: {
  clusters: number;
  placements: number;
  idleSeconds: number;
  cpuProfDir?: string;
}): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-placement-'));
  const env = await startEnvironment({ clusters: 0, dir, tunnel: false, namePrefix: 'pb' });
  let child: ChildProcess | undefined;
  try {
    const kc = loadKubeconfig(env.hub.kubeconfigPath);
    const client = <T extends KubeObject>(d: ConstructorParameters<typeof ResourceClient>[1]) =>
      new ResourceClient<T>(kc, d);
    const clusterClient = client<ManagedCluster>(managedClusterResource);
    type Specced = KubeObject & { spec?: unknown };
    const setClient = client<Specced>(managedClusterSetResource);
    const bindingClient = client<Specced>(managedClusterSetBindingResource);
    const placementClient = client<Specced>(placementResource);
    const decisionClient = client(placementDecisionResource);
    const nsClient = client({
      group: '',
      version: 'v1',
      plural: 'namespaces',
      kind: 'Namespace',
      namespaced: false,
    });

    const clusters = clustersFor(opts.clusters);
    const placements = placementsFor(opts.placements, 'bench');
    const floorPlacements = placementsFor(opts.placements, 'floor');
    for (const set of sets) {
      await setClient.create({
        metadata: { name: set },
        spec: { clusterSelector: { selectorType: 'ExclusiveClusterSetLabel' } },
      });
    }
    for (let i = 0; i < clusters.length; i += 50) {
      await Promise.all(
        clusters.slice(i, i + 50).map((c) =>
          clusterClient.create({
            metadata: { name: c.name, labels: { [clusterSetLabel]: c.set, zone: c.zone } },
            spec: { hubAcceptsClient: true },
          }),
        ),
      );
    }
    for (let n = 0; n < namespacesOf(opts.placements); n++) {
      await nsClient.create({ metadata: { name: `bench-${n}` } });
      await nsClient.create({ metadata: { name: `floor-${n}` } });
      for (const set of sets) {
        await bindingClient.create({
          metadata: { name: set, namespace: `bench-${n}` },
          spec: { clusterSet: set },
        });
      }
    }
    for (const p of placements) {
      await placementClient.create({ metadata: { name: p.name, namespace: p.namespace }, spec: p.spec });
    }
    const expected = new Map(
      placements.map((p) => [`${p.namespace}/${p.name}`, expectedSelected(p, clusters).length]),
    );
    const expectedTotal = sumCounts(expected);

    // floor
    const floorLoad = loadavg()[0] as number;
    const floorCpu0 = process.cpuUsage();
    const floor = await writeFloor(decisionClient, floorPlacements, clusters);
    const floorCpu = process.cpuUsage(floorCpu0);

    // tether
    await sleep(2000);
    const before = await scrapeApiserver(env.hub);
    const t0 = nowMs();
    child = startHubChild(env.hub.kubeconfigPath, opts.cpuProfDir);
    const pid = child.pid as number;
    let startedMs = Number.NaN;
    child.once('message', () => {
      startedMs = nowMs() - t0;
    });
    let decidedMs = Number.NaN;
    let decisionObjects = 0;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the placement hub child exited (${child.exitCode})`);
      const list = await placementClient.list();
      const done = list.items.filter((p) => {
        const status = (p as { status?: { numberOfSelectedClusters?: number } }).status;
        return (
          status?.numberOfSelectedClusters === expected.get(`${p.metadata?.namespace}/${p.metadata?.name}`)
        );
      }).length;
      if (done === placements.length) {
        const ds = (await decisionClient.list()).items.filter((d) =>
          d.metadata?.namespace?.startsWith('bench-'),
        );
        const decided = ds.reduce(
          (s, d) => s + ((d as { status?: { decisions?: unknown[] } }).status?.decisions?.length ?? 0),
          0,
        );
        if (decided === expectedTotal) {
          decidedMs = nowMs() - t0;
          decisionObjects = ds.length;
          break;
        }
      }
      if (nowMs() - t0 > 600_000)
        throw new Error(`only ${done}/${placements.length} placements decided in 600 s`);
      await sleep(250);
    }
    const decideCpu = processCpuSeconds(pid);
    const decideLoad = loadavg()[0] as number;
    const atDecided = await scrapeApiserver(env.hub);
    const hubWatches = diffCounts(before.watches, atDecided.watches, true);
    const decideRequests = diffCounts(before.requests, atDecided.requests);

    await sleep(3000);
    const idle0 = await scrapeApiserver(env.hub);
    const idleCpu0 = processCpuSeconds(pid);
    await sleep(opts.idleSeconds * 1000);
    const idleCpu = processCpuSeconds(pid) - idleCpu0;
    const idle1 = await scrapeApiserver(env.hub);
    const idleWrites = new Map([...diffCounts(idle0.requests, idle1.requests)].filter(([k]) => isWrite(k)));
    const isLease = (k: string): boolean => k.endsWith(' leases');

    return {
      bench: 'placement',
      clusters: opts.clusters,
      placements: opts.placements,
      decision_objects: decisionObjects,
      selected_total: expectedTotal,
      floor_ms: round(floor.ms, 0),
      floor_objects: floor.objects,
      floor_client_cpu_s: round((floorCpu.user + floorCpu.system) / 1e6, 2),
      floor_loadavg1: round(floorLoad, 2),
      hub_started_ms: round(startedMs, 0),
      decided_ms: round(decidedMs, 0),
      decided_over_floor: round(decidedMs / floor.ms, 2),
      decided_after_start_ms: round(decidedMs - startedMs, 0),
      decided_after_start_over_floor: round((decidedMs - startedMs) / floor.ms, 2),
      hub_cpu_s_to_decide: round(decideCpu, 2),
      hub_requests_to_decide: sumCounts(decideRequests),
      hub_writes_to_decide: sumCounts(decideRequests, (k) => isWrite(k) && !isLease(k)),
      hub_watches: sumCounts(hubWatches),
      hub_watches_by_resource: Object.fromEntries(hubWatches),
      decide_loadavg1: round(decideLoad, 2),
      idle_window_s: opts.idleSeconds,
      idle_hub_cpu_s: round(idleCpu, 2),
      idle_writes: sumCounts(idleWrites, (k) => !isLease(k)),
      idle_lease_writes: sumCounts(idleWrites, isLease),
      idle_writes_detail: formatCounts(idleWrites),
      decide_requests_detail: formatCounts(decideRequests),
      loadavg: loadavg().map((x) => round(x, 2)),
    };
  } finally {
    if (child) await stopHubChild(child);
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(opts: BenchOptions): Promise<void> {
  const clusters = Number(flag(opts.args, 'clusters') || (opts.quick ? 200 : 1000));
  const placements = Number(flag(opts.args, 'placements') || (opts.quick ? 20 : 100));
  const idleSeconds = Number(flag(opts.args, 'idle') || (opts.quick ? 10 : 30));
  const cpuProfDir = flag(opts.args, 'cpu-prof') || undefined;
  if (cpuProfDir) mkdirSync(cpuProfDir, { recursive: true });
  console.log(
    `load average before: ${loadavg()
      .map((x) => round(x, 2))
      .join(' ')}`,
  );
  const r = await runScenario({ clusters, placements, idleSeconds, cpuProfDir });
  printTable(
    [
      'scenario',
      'decisions',
      'floor ms',
      'tether ms',
      'ratio',
      'hub CPU s',
      'watches',
      'idle CPU s',
      'idle writes',
      'load',
    ],
    [
      [
        `${clusters} clusters × ${placements} placements`,
        String(r.decision_objects),
        String(r.floor_ms),
        `${r.decided_ms} (${r.decided_after_start_ms})`,
        `${r.decided_over_floor} (${r.decided_after_start_over_floor})`,
        String(r.hub_cpu_s_to_decide),
        String(r.hub_watches),
        `${r.idle_hub_cpu_s} / ${idleSeconds} s`,
        `${r.idle_writes} (+${r.idle_lease_writes} lease)`,
        String(r.decide_loadavg1),
      ],
    ],
  );
  console.log(`hub requests to decide: ${r.decide_requests_detail}`);
  console.log(`writes while idle: ${r.idle_writes_detail}`);
  console.log(JSON.stringify(r));
}
