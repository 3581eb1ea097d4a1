// Signals for tether running as PID 1 (the container image's entrypoint). The kernel never applies
// a signal's default action to a PID namespace's init: a SIGTERM from the kubelet or `ctr task kill`
// to a node that has no handler for it is dropped, and the pod waits out its whole grace period
// before SIGKILL. Long-running verbs handle SIGTERM/SIGINT once they are serving (and drain), but not
// while loading modules or starting up (e.g. waiting for the hub). So, as PID 1 only, this installs
// the default action by hand: a SIGTERM/SIGINT that no one else listens for ends the process with
// 128 + the signal number (143 / 130), as a killed process would. A verb's own handler, while
// installed, takes over (and usually exits 0 after draining); a second signal, after the verb
// removed its handler, ends the process at once. Imported first by main.ts so that the window
// without a handler is only Node's own start-up. tether starts no child processes inside the image,
// so no orphans are reparented to it and there is nothing to reap.
import { constants } from 'node:os';

const HANDLED = ['SIGTERM', 'SIGINT'] as const;

/** Installs the default-action stand-ins when this process is its PID namespace's init. */
export function installPid1SignalDefaults(pid = process.pid): boolean {
  if (pid !== 1) return false;
  for (const sig of HANDLED) {
    const fallback = (): void => {
      if (process.listenerCount(sig) > 1) return; // a verb handles it
      process.exit(128 + constants.signals[sig]);
    };
    process.on(sig, fallback);
  }
  return true;
}

installPid1SignalDefaults();
