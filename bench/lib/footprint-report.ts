// The footprint benchmark's output (bench/footprint.ts): one table row and one JSON line per kind
// of process (ranges over the runs, ratios against the bare-Node baseline of the same run), the
// last run's memory breakdown as each process reports it, and the largest heap kinds (--heap-top).
import type { HeapKind } from './heap-snapshot.ts';
import type { Footprint, Started } from './process-footprint.ts';
import { printTable, round } from './stats.ts';

export type Kind =
  | 'node-http'
  | 'node-client-node'
  | 'node-client-node-trim'
  | 'hub'
  | 'proxy-server'
  | 'proxy-server-nohub'
  | 'agent'
  | 'proxy-agent';

/** The verb a kind runs: proxy-server-nohub is `proxy-server --insecure-skip-hub-checks` (no Kubernetes client). */
export const verbOf = (kind: Kind): string => (kind === 'proxy-server-nohub' ? 'proxy-server' : kind);

export interface Sample {
  kind: Kind;
  started: Started;
  footprint: Footprint;
  load: number[];
}

export const MB = 1e6;

/** "min–max" of a sample, or the one value when they are equal; "-" when not measured (--no-inspector). */
function range(xs: number[], digits = 1): string {
  if (xs.length === 0 || xs.some((x) => !Number.isFinite(x))) return '-';
  const [lo, hi] = [round(Math.min(...xs), digits), round(Math.max(...xs), digits)];
  return lo === hi ? `${lo}` : `${lo}–${hi}`;
}
const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? Number.NaN;

export function report(
  samples: Sample[],
  cfg: {
    runs: number;
    settleMs: number;
    nodeFlags: string[];
    compileCache: boolean;
    inspect: boolean;
    idleTrim: boolean;
    bin: string;
  },
): void {
  const of = (k: Kind): Sample[] => samples.filter((s) => s.kind === k);
  const bare = of('node-http');
  const bareRss = mid(bare.map((s) => s.footprint.rss));
  const bareStart = mid(bare.map((s) => s.started.startupMs));
  const kinds: Kind[] = [
    'node-http',
    'node-client-node',
    'node-client-node-trim',
    'hub',
    'proxy-server',
    'proxy-server-nohub',
    'agent',
    'proxy-agent',
  ];
  const rows: string[][] = [];
  const where: string[][] = [];
  const json: string[] = [];
  for (const kind of kinds) {
    const ss = of(kind);
    if (ss.length === 0) continue;
    const f = ss.map((s) => s.footprint);
    const rss = f.map((x) => x.rss / MB);
    const startup = ss.map((s) => s.started.startupMs);
    const last = f[f.length - 1] as Footprint;
    rows.push([
      kind,
      range(rss),
      range(f.map((x) => x.rssAnon / MB)),
      range(f.map((x) => x.rssAfterGc / MB)),
      range(f.map((x) => x.heapUsed / MB)),
      Number.isNaN(last.scripts.own)
        ? '-'
        : `${last.scripts.own}/${last.scripts.nodeModules}(${last.scripts.clientNode})/${last.scripts.node}`,
      range(startup, 0),
      range(
        ss.map((s) => s.started.startupCpuS),
        2,
      ),
      `${round(mid(rss) / (bareRss / MB), 2)}×`,
      `${round(mid(startup) / bareStart, 1)}×`,
      ss.map((s) => s.load[0]).join('/'),
    ]);
    const b = last.breakdown;
    const mb = (x: number): number => round(x / MB, 1);
    const memory = b && {
      rss: mb(b.rss),
      heap_used: mb(b.heapUsed),
      new_space: mb(b.newSpace),
      old_space_used: mb(b.oldSpaceUsed),
      code_used: mb(b.codeUsed),
      large_objects_used: mb(b.largeObjectUsed),
      heap_reserved_unused: mb(b.heapTotal - b.heapUsed),
      external: mb(b.external),
      outside_v8: mb(b.rss - b.heapTotal - b.external),
    };
    if (memory) {
      where.push([
        kind,
        `${memory.rss}`,
        `${memory.heap_used}`,
        `${memory.new_space}`,
        `${memory.old_space_used}`,
        `${memory.code_used}`,
        `${memory.heap_reserved_unused}`,
        `${memory.external}`,
        `${memory.outside_v8}`,
      ]);
    }
    json.push(
      JSON.stringify({
        scenario: `footprint-${kind}`,
        memory_mb: memory,
        rss_mb: round(mid(rss), 1),
        rss_mb_range: [round(Math.min(...rss), 1), round(Math.max(...rss), 1)],
        rss_anon_mb: round(mid(f.map((x) => x.rssAnon / MB)), 1),
        rss_file_mb: round(mid(f.map((x) => x.rssFile / MB)), 1),
        rss_after_gc_mb: round(mid(f.map((x) => x.rssAfterGc / MB)), 1),
        heap_used_mb: round(mid(f.map((x) => x.heapUsed / MB)), 1),
        idle_cpu_s: round(mid(f.map((x) => x.idleCpuS)), 3),
        scripts: last.scripts,
        source_mb: round(last.sourceBytes / MB, 1),
        startup_ms: Math.round(mid(startup)),
        startup_ms_range: [Math.round(Math.min(...startup)), Math.round(Math.max(...startup))],
        startup_cpu_s: round(mid(ss.map((s) => s.started.startupCpuS)), 2),
        ratio_vs_bare_node_rss: round(mid(rss) / (bareRss / MB), 2),
        ratio_vs_bare_node_startup: round(mid(startup) / bareStart, 2),
        goal_rss_mb: kind === 'agent' || kind === 'proxy-server' ? 60 : undefined,
        loadavg: ss.map((s) => s.load),
        runs: cfg.runs,
        settle_s: cfg.settleMs / 1000,
        node_flags: cfg.nodeFlags,
        compile_cache: cfg.compileCache,
        inspector: cfg.inspect,
        idle_trim: cfg.idleTrim,
        tether_bin: cfg.bin,
      }),
    );
  }
  console.log();
  printTable(
    [
      'process',
      'RSS MB',
      'anon MB',
      'RSS after GC',
      'heap MB',
      'scripts own/nm(client-node)/node',
      'startup ms',
      'startup CPU s',
      'RSS/bare',
      'startup/bare',
      'load 1m',
    ],
    rows,
  );
  if (where.length > 0) {
    // The last run's processes, as they report themselves before the forced GC.
    console.log();
    printTable(
      [
        'process (last run)',
        'RSS MB',
        'heap used',
        'new space',
        'old used',
        'code used',
        'heap reserved unused',
        'external',
        'outside V8',
      ],
      where,
    );
  }
  console.log();
  for (const line of json) console.log(line);
}

/** The largest kinds of objects in each process's heap (the last run's snapshots). */
export function printHeapKinds(heapKinds: Map<Kind, HeapKind[]>): void {
  for (const [kind, kinds] of heapKinds) {
    console.log(`\nheap ${kind} (last run, after GC): largest kinds by shallow size`);
    for (const k of kinds) {
      console.log(`  ${(k.size / MB).toFixed(2).padStart(7)} MB ${String(k.count).padStart(7)}  ${k.kind}`);
    }
  }
}
