// Finding the processes of a running `tether up` through /proc, for tests that kill them: the
// process tree under a pid, with each process's command line.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessEntry {
  pid: number;
  args: string[];
}

/** Every process below `root` (children, grandchildren, …) with its argv. */
export function descendants(root: number): ProcessEntry[] {
  const parent = new Map<number, number>();
  const argv = new Map<number, string[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces or parentheses
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(entry), ppid);
      argv.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean));
    } catch {}
  }
  const out: ProcessEntry[] = [];
  for (const [pid, args] of argv) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push({ pid, args });
        break;
      }
    }
  }
  return out;
}

/** Whether `pid` is a live process (not gone, not a zombie waiting to be reaped). */
export function isLive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/** PIDs of live processes (zombies excluded) whose command line contains `needle`. */
export function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

/** The tether subcommand of a `node …/bin/tether.js <command> …` command line. */
export function tetherCommand(args: string[]): string | undefined {
  const i = args.findIndex((a) => a.endsWith('bin/tether.js'));
  return i >= 0 ? args[i + 1] : undefined;
}
