// One build at a time per cache entry, across processes: a lock directory holding the builder's
// pid (mkdir is atomic), taken over when that process is gone, waited for otherwise. The Kubernetes
// binaries, the node images (pause, CoreDNS, echoserver) and helm are each built this way, so two
// `tether up`s or test runs on a fresh machine do not build the same thing side by side.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TimeoutError } from '../errors.ts';

export interface BuildLockOptions {
  /** what is built, for the progress line: "building <what>" */
  what: string;
  /** how long to wait for another holder before giving up */
  waitMs: number;
  progress: (line: string) => void;
  signal?: AbortSignal;
  /** how often the "waiting for" line repeats (default: once) */
  noteEveryMs?: number;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, we just may not signal it
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `fn` holding the lock directory `lock`; a dead holder's lock is taken over. */
export async function withBuildLock<T>(
  lock: string,
  opts: BuildLockOptions,
  fn: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + opts.waitMs;
  let lastNote = Number.NEGATIVE_INFINITY;
  for (;;) {
    opts.signal?.throwIfAborted();
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      let holder = Number.NaN;
      try {
        holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {}
      if (Number.isFinite(holder) && !pidAlive(holder)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new TimeoutError(`gave up waiting for the build lock ${lock}`);
      const first = lastNote === Number.NEGATIVE_INFINITY;
      if (first || Date.now() - lastNote > (opts.noteEveryMs ?? Number.POSITIVE_INFINITY)) {
        opts.progress(`waiting for another tether process (pid ${holder}) that is building ${opts.what}…`);
        lastNote = Date.now();
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
