// What an idle Node process costs, measured from outside: time from spawn to its first 200 on
// /readyz (and the CPU it spent getting there), RSS after it settled, RSS and V8 heap after a forced
// GC, and the scripts it compiled (its own modules, node_modules, Node's internals). Used by
// bench/footprint.ts for tether's long-running verbs and for the bare-Node baselines beside them.
// Children run with `--inspect=127.0.0.1:0` (loopback) so the GC and the script count need no code
// in the child; the baselines run the same way so the ratio is like for like. Without the inspector
// (`inspect: false`, the inspector itself holds a few MB) only RSS and CPU are measured.
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { SupervisedProcess } from '../../src/localenv/process.ts';
import {
  heapAfterGc,
  inspectorUrl,
  type MemoryBreakdown,
  memoryBreakdown,
  withInspector,
} from './inspector-gc.ts';
import { procSample } from './proc-stats.ts';
import { sleep } from './stats.ts';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** CPU seconds (user + system) process `pid` has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
}

/** Status code of GET http://127.0.0.1:<port><path>, or undefined when nothing answers. */
function status(port: number, path: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
  });
}

export interface Started {
  proc: SupervisedProcess;
  pid: number;
  /** spawn → first 200 on /readyz, ms */
  startupMs: number;
  /** CPU seconds used by then */
  startupCpuS: number;
}

/**
 * Spawns `node --inspect=127.0.0.1:0 <args>` and polls /readyz on `opsPort` every 10 ms until it
 * answers 200 (a 10 ms poll: the startup figure is at most that late). `whileWaiting` runs on every
 * poll (e.g. accepting a cluster).
 */
export async function spawnUntilReady(opts: {
  name: string;
  args: string[];
  opsPort: number;
  logFile: string;
  env?: NodeJS.ProcessEnv;
  nodeFlags?: string[];
  /** default true; false: no forced GC, heap or script count (measureIdle gives NaN for those) */
  inspect?: boolean;
  timeoutMs: number;
  whileWaiting?: () => Promise<void>;
}): Promise<Started> {
  const t0 = performance.now();
  const proc = new SupervisedProcess({
    name: opts.name,
    command: process.execPath,
    args: [
      ...(opts.inspect === false ? [] : ['--inspect=127.0.0.1:0']),
      ...(opts.nodeFlags ?? []),
      ...opts.args,
    ],
    logFile: opts.logFile,
    env: opts.env,
  });
  const deadline = t0 + opts.timeoutMs;
  let lastWait = 0;
  for (;;) {
    if (!proc.running) throw new Error(`${opts.name} exited:\n${proc.tail()}`);
    if ((await status(opts.opsPort, '/readyz')) === 200) break;
    if (performance.now() > deadline) {
      await proc.stop(5000);
      throw new Error(`${opts.name}: /readyz not 200 within ${opts.timeoutMs} ms\n${proc.tail()}`);
    }
    if (opts.whileWaiting && performance.now() - lastWait > 250) {
      lastWait = performance.now();
      await opts.whileWaiting().catch(() => {});
    }
    await sleep(10);
  }
  const startupMs = performance.now() - t0;
  const pid = proc.pid;
  if (pid === undefined) throw new Error(`${opts.name} has no pid`);
  return { proc, pid, startupMs, startupCpuS: cpuSeconds(pid) };
}

/** Anonymous (private: heap, malloc, stacks) and file-backed (the node binary's pages, shared
 * through the page cache with every node process on the host) parts of `pid`'s RSS, bytes. */
export function rssParts(pid: number): { anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1]) * 1024;
  return { anon: kb('RssAnon'), file: kb('RssFile') };
}

export interface Footprint {
  /** RSS after settling, before any forced GC (bytes) */
  rss: number;
  /** of `rss`: anonymous memory (the process's own) and file-backed pages (mostly the node binary) */
  rssAnon: number;
  rssFile: number;
  /** RSS right after two full GCs (bytes) */
  rssAfterGc: number;
  /** V8 heap used after the GCs (bytes) */
  heapUsed: number;
  /** CPU seconds the process used while idle for the settle period */
  idleCpuS: number;
  /** compiled scripts: ours (file: outside node_modules), from node_modules, Node's own */
  scripts: { own: number; nodeModules: number; node: number; clientNode: number };
  /** source bytes of the file: scripts (V8 keeps module source in the heap) */
  sourceBytes: number;
  /** what the process reports of its memory after settling, before the forced GC (inspector only) */
  breakdown?: MemoryBreakdown;
}

/** Waits `settleMs`, then measures `started` (see Footprint). */
export async function measureIdle(started: Started, settleMs: number): Promise<Footprint> {
  const url = inspectorUrl(started.proc.tail(40));
  const cpu0 = cpuSeconds(started.pid);
  await sleep(settleMs);
  const idleCpuS = cpuSeconds(started.pid) - cpu0;
  const rss = procSample(started.pid).rss;
  const parts = rssParts(started.pid);
  if (!url) {
    const none = Number.NaN;
    return {
      rss,
      rssAnon: parts.anon,
      rssFile: parts.file,
      rssAfterGc: none,
      heapUsed: none,
      idleCpuS,
      scripts: { own: none, nodeModules: none, node: none, clientNode: none },
      sourceBytes: none,
    };
  }
  const breakdown = await memoryBreakdown(url);
  const heapUsed = await heapAfterGc(url);
  const rssAfterGc = procSample(started.pid).rss;
  const scripts = { own: 0, nodeModules: 0, node: 0, clientNode: 0 };
  let sourceBytes = 0;
  // Last: enabling the debugger makes V8 keep more per script.
  await withInspector(
    url,
    30_000,
    async ({ call }) => {
      await call('Debugger.enable');
      await call('Debugger.disable');
    },
    {
      onEvent: (method, params) => {
        if (method !== 'Debugger.scriptParsed') return;
        const p = params as { url?: string; length?: number };
        const u = p.url ?? '';
        if (u.startsWith('file:')) {
          sourceBytes += p.length ?? 0;
          if (u.includes('/node_modules/')) {
            scripts.nodeModules++;
            if (u.includes('/@kubernetes/client-node/')) scripts.clientNode++;
          } else scripts.own++;
        } else if (u.startsWith('node:')) scripts.node++;
      },
    },
  );
  return {
    rss,
    rssAnon: parts.anon,
    rssFile: parts.file,
    rssAfterGc,
    heapUsed,
    idleCpuS,
    scripts,
    sourceBytes,
    breakdown,
  };
}
