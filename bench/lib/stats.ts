// Small helpers shared by benchmarks: options, medians and percentiles, GC, timing, a text table.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface BenchOptions {
  /** a smaller version that finishes well under a minute */
  quick: boolean;
  /** every flag after the benchmark name (including --quick) */
  args: string[];
}

/** `--name=value` → value; `--name` alone → ''; absent → undefined. */
export function flag(args: string[], name: string): string | undefined {
  for (const a of args) {
    if (a === `--${name}`) return '';
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Nearest-rank percentile (p in 0..100) of an unsorted sample. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1] as number;
}

let gcFn: (() => void) | undefined;
/** A full GC (exposed at run time, so `node bench/run.ts` needs no --expose-gc). */
export function gc(): void {
  if (!gcFn) {
    const g = (globalThis as { gc?: () => void }).gc;
    if (g) gcFn = g;
    else {
      setFlagsFromString('--expose-gc');
      gcFn = runInNewContext('gc') as () => void;
    }
  }
  gcFn();
  gcFn();
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Rejects after `ms` with a message naming `what`; the timer never keeps the process alive. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export function round(x: number, digits = 2): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Prints rows as an aligned text table. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}
