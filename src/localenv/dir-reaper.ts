// Removes a directory when this process ends, however it ends (a SIGKILL included, where no exit
// handler runs): a tiny `sh` in its own session holds the read end of a pipe from us and removes
// the directory once the pipe reaches end-of-file, i.e. when our end closes because we released it
// or because the kernel closed it with our process. For directories that must live outside our own
// state directory (squid's: its unprivileged user must be able to enter it), so nothing leaks into
// the OS temp dir. Touches only the one directory it was given.
import { spawn } from 'node:child_process';
import { isAbsolute } from 'node:path';

export interface DirReaper {
  /** Our end of the pipe closes now: the directory is removed within moments (if still there). */
  release(): void;
}

/** Arranges for `dir` (an absolute path) to be removed when this process is gone. */
export function removeWhenProcessEnds(dir: string): DirReaper {
  if (!isAbsolute(dir)) throw new Error(`internal: removeWhenProcessEnds needs an absolute path, got ${dir}`);
  const reaper = spawn('/bin/sh', ['-c', 'cat >/dev/null; exec rm -rf -- "$0"', dir], {
    stdio: ['pipe', 'ignore', 'ignore'],
    // own session: a Ctrl-C meant for us must not take the reaper down before it has done its job
    detached: true,
  });
  reaper.on('error', () => {});
  reaper.stdin?.on('error', () => {});
  // neither the process nor the pipe keeps our event loop alive
  reaper.unref();
  (reaper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return {
    release: () => {
      reaper.stdin?.destroy();
    },
  };
}
