// Footprint on real nodes (`npm run bench -- footprint --real-nodes [--idle=SECONDS] [--addon-pods]`):
// the path users take. `tether up --clusters 1` (a hub and cluster1 on real nodes, tether installed
// by init/join, the three built-in add-ons enabled through squid), then, once every add-on is
// Available and everything has idled `--idle` seconds (default 60), the RSS of every tether process
// in the environment's pods from /proc, summed per side: the managed cluster (agent verbs) and the
// hub. Processes are found by their node: their container shim's command line names the node's
// containerd socket (this run's node names are prefixed, so another `tether up` does not count). Baseline in the same run: a bare `node` idling (the same Node 24).
// --addon-pods joins cluster1 with --no-in-process-addons: the add-on agents as pods, for before/after.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startInClusterEnvironment } from '../src/localenv/in-cluster-stack.ts';
import { rssParts } from './lib/process-footprint.ts';
import { type BenchOptions, flag } from './lib/stats.ts';

const MB = 1e6;

/** The goals of issue 25, RSS summed per side. */
const goals = { managedMb: 120, hubMb: 200 };

interface TetherProcess {
  pid: number;
  verb: string;
  rss: number;
}

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/**
 * The node `pid` runs on: the name (among `nodes`) in its container shim's containerd socket path
 * (`…/tether-node-<name>-XXXXXX/containerd/containerd.sock`; the shim is an ancestor), or undefined.
 */
function nodeOf(pid: number, nodes: readonly string[]): string | undefined {
  for (let p = parentOf(pid), hops = 0; p > 1 && hops < 12; p = parentOf(p), hops++) {
    const args = cmdline(p).join(' ');
    const node = nodes.find((n) => args.includes(`/tether-node-${n}-`));
    if (node) return node;
  }
  return undefined;
}

interface NodeProcess extends TetherProcess {
  node: string;
}

/** Every tether process on one of `nodes`, with its node, verb and RSS. */
function tetherProcesses(nodes: readonly string[]): NodeProcess[] {
  const out: NodeProcess[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const args = cmdline(pid);
    const at = args.findIndex((a) => a.endsWith('/bin/tether.js'));
    const verb = at >= 0 ? args[at + 1] : undefined;
    const node = verb ? nodeOf(pid, nodes) : undefined;
    if (!verb || !node) continue;
    const { anon, file } = rssParts(pid);
    out.push({ pid, verb, node, rss: anon + file });
  }
  return out;
}

async function bareNodeRss(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
  try {
    await sleep(2000);
    const { anon, file } = rssParts(child.pid ?? 0);
    return anon + file;
  } finally {
    child.kill('SIGKILL');
  }
}

export async function runOnRealNodes(opts: BenchOptions): Promise<void> {
  const idleS = Number(flag(opts.args, 'idle') ?? 60);
  const addonPods = flag(opts.args, 'addon-pods') !== undefined;
  const progress = (msg: string): void => console.error(`[footprint-nodes] ${msg}`);
  const bare = await bareNodeRss();
  const parent = mkdtempSync(join(tmpdir(), 'tether-bench-nodes-'));
  const dir = join(parent, 'env');
  const started = Date.now();
  const env = await startInClusterEnvironment({
    clusters: 1,
    dir,
    namePrefix: 'fpn-',
    ...(addonPods ? { addonAgentPodsOn: [0] } : {}),
    progress,
  });
  try {
    progress(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s; idling ${idleS} s`);
    await sleep(idleS * 1000);
    const hubNode = env.hub.name;
    const procs = tetherProcesses([hubNode, ...env.clusters.map((c) => c.name)]);
    if (procs.length === 0)
      progress('no tether process found on the nodes: is the shim command line as expected?');
    const sum = (onHub: boolean) =>
      procs.filter((p) => (p.node === hubNode) === onHub).reduce((total, p) => total + p.rss, 0);
    const managed = sum(false);
    const hub = sum(true);
    const mb = (n: number) => (n / MB).toFixed(1);
    console.log('\nside     process               RSS MB   × bare node');
    for (const p of procs.sort((a, b) => a.verb.localeCompare(b.verb)))
      console.log(
        `${(p.node === hubNode ? 'hub' : 'managed').padEnd(9)}${p.verb.padEnd(22)}${mb(p.rss).padStart(6)}   ${(p.rss / bare).toFixed(2)}`,
      );
    console.log(`managed  (sum)                 ${mb(managed).padStart(6)}   goal ≤ ${goals.managedMb} MB`);
    console.log(`hub      (sum)                 ${mb(hub).padStart(6)}   goal ≤ ${goals.hubMb} MB`);
    console.log(`baseline bare node             ${mb(bare).padStart(6)}\n`);
    console.log(
      JSON.stringify({
        scenario: 'footprint-real-nodes',
        addon_agents: addonPods ? 'pods' : 'in-process',
        managed_rss_mb: Number(mb(managed)),
        hub_rss_mb: Number(mb(hub)),
        processes: procs.map((p) => ({ node: p.node, verb: p.verb, rss_mb: Number(mb(p.rss)) })),
        bare_node_rss_mb: Number(mb(bare)),
        ratio_managed_vs_bare_node: Number((managed / bare).toFixed(2)),
        goal_managed_mb: goals.managedMb,
        goal_hub_mb: goals.hubMb,
        idle_s: idleS,
        loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      }),
    );
  } finally {
    await env.stop();
    rmSync(parent, { recursive: true, force: true });
  }
}
