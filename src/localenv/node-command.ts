// Running the host tools a real node needs (ip, iptables, ctr, runc, umount, umoci) and checking that
// they are there before anything is created, so a missing package is named up front instead of
// surfacing as a half-built node.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { TetherError } from '../errors.ts';

/** How long one host tool may run before it counts as hung. */
const COMMAND_TIMEOUT_MS = 60_000;

export interface CommandResult {
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  timeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/** Runs `cmd args…`; rejects with the command line and its stderr when it fails. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<CommandResult> {
  const { timeoutMs = COMMAND_TIMEOUT_MS, cwd, env } = opts;
  return new Promise((resolve, reject) => {
    const o = { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, cwd, env };
    execFile(cmd, args, o, (err, stdout, stderr) => {
      if (err) {
        const e = new Error(`${cmd} ${args.join(' ')} failed: ${stderr.trim() || err.message}`);
        (e as Error & { stderr?: string }).stderr = stderr;
        reject(e);
        return;
      }
      resolve({ stdout, stderr });
    });
  });
}

/** Runs a command inside the network namespace `netns` (and only that namespace: same mounts). */
export function runInNetns(netns: string, cmd: string, args: string[]): Promise<CommandResult> {
  return run('nsenter', [`--net=/run/netns/${netns}`, '--', cmd, ...args]);
}

/** Where Debian's containernetworking-plugins puts the CNI plugins. */
export const CNI_BIN_DIR = '/usr/lib/cni';

const REQUIRED: Array<{ what: string; paths: string[]; pkg: string }> = [
  { what: 'containerd', paths: ['/usr/bin/containerd'], pkg: 'containerd' },
  { what: 'ctr', paths: ['/usr/bin/ctr'], pkg: 'containerd' },
  { what: 'containerd-shim-runc-v2', paths: ['/usr/bin/containerd-shim-runc-v2'], pkg: 'containerd' },
  { what: 'runc', paths: ['/usr/sbin/runc', '/usr/bin/runc'], pkg: 'runc' },
  { what: 'CNI bridge plugin', paths: [`${CNI_BIN_DIR}/bridge`], pkg: 'containernetworking-plugins' },
  { what: 'iptables', paths: ['/usr/sbin/iptables'], pkg: 'iptables' },
  { what: 'conntrack', paths: ['/usr/sbin/conntrack'], pkg: 'conntrack' },
  { what: 'ip', paths: ['/usr/sbin/ip', '/sbin/ip', '/bin/ip'], pkg: 'iproute2' },
  { what: 'nsenter', paths: ['/usr/bin/nsenter'], pkg: 'util-linux' },
  { what: 'umoci', paths: ['/usr/bin/umoci'], pkg: 'umoci' },
];

/**
 * Throws, naming what to do, when this machine cannot run a real node: not root or no cgroups
 * (TETHER_INVALID_ARGUMENT: ask for the process mode instead), or missing packages
 * (TETHER_BINARY_NOT_FOUND: install them).
 */
export function checkNodePrerequisites(
  host: { uid?: number; exists: (path: string) => boolean } = { uid: process.getuid?.(), exists: existsSync },
): void {
  const exists = host.exists;
  if (host.uid !== 0) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      'real nodes need root (network namespaces, containerd, cgroups); run as root or use the process mode',
    );
  }
  if (!exists('/sys/fs/cgroup/memory') && !exists('/sys/fs/cgroup/cgroup.controllers')) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      'real nodes need cgroups mounted at /sys/fs/cgroup (none found); use the process mode',
    );
  }
  // pods reaching a ClusterIP served on their own bridge need bridged traffic to pass iptables
  if (!exists('/proc/sys/net/bridge/bridge-nf-call-iptables')) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      'real nodes need the br_netfilter kernel module: run modprobe br_netfilter (as root), or use the process mode',
    );
  }
  const missing = REQUIRED.filter((r) => !r.paths.some((p) => exists(p)));
  if (missing.length > 0) {
    const pkgs = [...new Set(missing.map((m) => m.pkg))];
    throw new TetherError(
      'TETHER_BINARY_NOT_FOUND',
      `real nodes need ${missing.map((m) => m.what).join(', ')}: run 'bash hack/deps.sh' ` +
        `(or apt-get install --no-install-recommends ${pkgs.join(' ')})`,
    );
  }
}
