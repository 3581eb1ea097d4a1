// `npx tether …` and `npm run tether -- …` run us as npm → `sh -c tether …` → node. A SIGTERM to
// npm reaches the shell (npm forwards it), the shell dies of it and we are left running, reparented,
// with no signal at all: the shell does not exec its last command and nothing forwards further.
// So when our parent is npm, or a shell whose parent is npm, we watch those wrappers and end
// ourselves with SIGTERM (our own orderly shutdown) once one of them is gone. Started any other way
// (directly, by `tether up`, by a service manager, under nohup) nothing is watched. Linux /proc only.
import { readFileSync } from 'node:fs';

/** How often the wrappers are checked (ms): the delay between npm dying and our SIGTERM. */
const WATCH_INTERVAL_MS = 500;

interface ProcessIdentity {
  pid: number;
  /** start time in clock ticks since boot: tells a reused pid apart */
  startTime: string;
}

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid … starttime(22nd field); comm may hold spaces or parentheses
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

function identity(pid: number): (ProcessIdentity & { ppid: number }) | undefined {
  const f = statFields(pid);
  if (!f || f[0] === 'Z' || f[0] === 'X') return undefined;
  return { pid, ppid: Number(f[1]), startTime: f[19] ?? '' };
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** npm sets its process title to `npm exec …` / `npm run …`; older ones show npm-cli.js / npx-cli.js. */
export function isNpmCommandLine(cmdline: string): boolean {
  return (
    /^npm(\s|$)/.test(cmdline) || /\/np[mx]-cli\.js(\s|$)/.test(cmdline) || /(^|\/)np[mx](\s|$)/.test(cmdline)
  );
}

export function isShellCommandLine(cmdline: string): boolean {
  return /^(\S*\/)?(sh|dash|bash|zsh|ash)(\s|$)/.test(cmdline);
}

/** The wrapper processes (shell and npm, nearest first) we were started through, or [] if none. */
export function npmWrappers(ppid = process.ppid): ProcessIdentity[] {
  const parent = identity(ppid);
  if (!parent) return [];
  const parentCmd = commandLine(ppid);
  if (isNpmCommandLine(parentCmd)) return [parent];
  if (!isShellCommandLine(parentCmd)) return [];
  const grandparent = identity(parent.ppid);
  if (!grandparent || !isNpmCommandLine(commandLine(parent.ppid))) return [];
  return [parent, grandparent];
}

/** When started through npm, SIGTERMs this process once npm or its shell is gone. */
export function endWithNpmWrapper(): void {
  if (process.platform !== 'linux') return;
  const wrappers = npmWrappers();
  if (wrappers.length === 0) return;
  const timer = setInterval(() => {
    const gone = wrappers.some((w) => identity(w.pid)?.startTime !== w.startTime);
    if (!gone) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }, WATCH_INTERVAL_MS);
  timer.unref();
}
