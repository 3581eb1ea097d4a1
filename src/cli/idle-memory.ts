// Gives an idle long-running verb's young-generation memory back to the system. V8 grows its new
// space (two semi-spaces, up to 16 MB each) while a start-up loads modules — the Kubernetes
// client's ~900 alone — and keeps every page of it resident afterwards: an idle process allocates
// too little to ever run the GC that would shrink it (V8's memory reducer starts only after a GC).
// That is 30+ MB of an idle agent's or proxy-server's RSS holding nothing. So a daemon verb checks
// every 2 s; when the new space is large and the process was idle since the last check, it
// asks V8 for the GC it runs under memory pressure (what `isolate->LowMemoryNotification()` does):
// garbage collected, new space shrunk to its minimum. It grows again as soon as traffic needs it,
// so a busy process keeps its young generation (no `--max-semi-space-size` tax on the data path)
// and one that went idle after a burst gives it back. One such GC costs about 70 ms of CPU with the
// Kubernetes client loaded, at most once per idle period. Must not run for short-lived commands.
// The same GC also runs when an idle process's old generation has grown by heapGrowthBytes since the
// last one: an idle agent's periodic work (leases, status syncs, token checks) leaves garbage that
// a quiet process collects late, so its RSS crept up 1.7 MB a minute, between 112 and 130 MB on
// real nodes; with this it stays near its floor (one GC every few minutes, ≈ 0.05 % of a CPU).
import v8 from 'node:v8';
import { v8Gc } from '../v8-gc.ts';

export interface IdleMemoryTrimOptions {
  /** how often the process is checked (ms) */
  intervalMs?: number;
  /** a check period counts as idle below this share of one CPU (0..1) */
  idleCpuShare?: number;
  /** new space above this many bytes is worth giving back */
  newSpaceBytes?: number;
  /** heap used grown by this many bytes since the last trim (or the first check) is worth collecting */
  heapGrowthBytes?: number;
  /** called after each trim with the new space size before and after (bytes) and why it ran */
  onTrim?: (before: number, after: number, reason: 'new-space' | 'heap-growth') => void;
}

/** Default check period: an idle process gives its memory back within two of these. */
export const IDLE_CHECK_INTERVAL_MS = 2_000;
/** Idle: under 2 % of one CPU (an idle agent renewing leases and holding watches uses far less). */
export const IDLE_CPU_SHARE = 0.02;
/** V8's minimum new space is 1 MB (two 512 KiB semi-spaces); a grown one is 2–32 MB. */
export const TRIM_NEW_SPACE_ABOVE_BYTES = 4 * 1024 * 1024;
/** Heap growth since the last trim that an idle process collects (an idle agent grows ≈ 2 MB a minute). */
export const TRIM_HEAP_GROWTH_ABOVE_BYTES = 6 * 1024 * 1024;

const heapUsed = (): number => v8.getHeapStatistics().used_heap_size;

/** Current size (bytes) of V8's new space, both semi-spaces. */
export function newSpaceSize(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

/** Runs V8's memory-pressure GC now: full collection, new space back to its minimum. */
export function trimMemoryNow(): void {
  v8Gc()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * Starts the periodic idle check (see the module header). Returns a stop function; the timer is
 * unref'd, so it never keeps the process alive.
 */
export function trimMemoryWhenIdle(opts: IdleMemoryTrimOptions = {}): () => void {
  const intervalMs = opts.intervalMs ?? IDLE_CHECK_INTERVAL_MS;
  const idleCpuShare = opts.idleCpuShare ?? IDLE_CPU_SHARE;
  const threshold = opts.newSpaceBytes ?? TRIM_NEW_SPACE_ABOVE_BYTES;
  const growth = opts.heapGrowthBytes ?? TRIM_HEAP_GROWTH_ABOVE_BYTES;
  let heapFloor: number | undefined;
  let cpu = process.cpuUsage();
  let at = performance.now();
  const timer = setInterval(() => {
    const used = process.cpuUsage(cpu);
    const elapsedMs = performance.now() - at;
    const idle = (used.user + used.system) / 1000 < elapsedMs * idleCpuShare;
    const before = newSpaceSize();
    const heap = heapUsed();
    heapFloor ??= heap;
    const reason = before > threshold ? 'new-space' : heap - heapFloor > growth ? 'heap-growth' : undefined;
    if (idle && reason) {
      trimMemoryNow();
      heapFloor = heapUsed();
      opts.onTrim?.(before, newSpaceSize(), reason);
    }
    // Measured from after the trim: its own CPU does not make the next period look busy.
    cpu = process.cpuUsage();
    at = performance.now();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
