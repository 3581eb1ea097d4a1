// What a real node leaves on the host outside its own directory, found and removed: mounts (the
// kubelet's self bind-mount of its root dir, pod volumes, containerd rootfs/shm, and pod network
// namespaces, kept under containerd's state dir; /run/netns/cni-* ones are still swept in case a
// containerd config without netns_mounts_under_state_dir made them), cgroups under the node's
// cgroup root in every hierarchy, the kubelet's hard-coded /var/lib/kubelet/device-plugins and
// /var/log/containers links, containerd's shim sockets in /run/containerd, CNI result caches in
// /var/lib/cni, and the global sysctls the kubelet sets. Only what is provably this node's is
// removed (its shim sockets by containerd's naming, CNI results by network and sandbox id, pod log
// links into its directory); shared directories only when empty, and created after the snapshot
// taken before the node started or left by the last kubelet. The sysctls' original values are kept
// in /run/tether/kubelet-sysctls.json from the first node on, and put back when no kubelet runs any
// more (also after a SIGKILLed tether, by node-reclaim.ts).
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { run } from './node-command.ts';

const CGROUP_BASE = '/sys/fs/cgroup';
const KUBELET_VAR_LIB = '/var/lib/kubelet';
const POD_LOG_LINKS = '/var/log/containers';
const CNI_RESULTS = '/var/lib/cni/results';
const SYSCTL_SAVE_DIR = '/run/tether';
const SYSCTL_SAVE = join(SYSCTL_SAVE_DIR, 'kubelet-sysctls.json');
/** Shared directories a node may create; removed only when empty. */
const SHARED_DIRS = [
  '/run/containerd/s',
  '/run/containerd/fifo',
  '/run/containerd',
  join(KUBELET_VAR_LIB, 'device-plugins'),
  KUBELET_VAR_LIB,
  POD_LOG_LINKS,
  CNI_RESULTS,
  '/var/lib/cni',
];

/** The sysctls kubelet forces (pkg/kubelet/cm setupKernelTunables); restored after the last node. */
const KUBELET_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

export interface HostSnapshot {
  netns: Set<string>;
  createdDirs: string[];
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Taken before the node starts (and records the sysctls' values if no node did yet). */
export function snapshotHost(): HostSnapshot {
  // with a kubelet already running (from a tether that does not keep this file) the current values
  // may be its own, not the host's: record nothing rather than the wrong originals
  if (!existsSync(SYSCTL_SAVE) && !kubeletRunning()) {
    const sysctls: Record<string, string> = {};
    for (const s of KUBELET_SYSCTLS) {
      try {
        sysctls[s] = readFileSync(`/proc/sys/${s}`, 'utf8').trim();
      } catch {}
    }
    mkdirSync(SYSCTL_SAVE_DIR, { recursive: true, mode: 0o700 });
    writeFileSync(SYSCTL_SAVE, JSON.stringify(sysctls), { mode: 0o600 });
  }
  return {
    netns: new Set(listDir('/run/netns').filter((n) => n.startsWith('cni-'))),
    createdDirs: SHARED_DIRS.filter((d) => !existsSync(d)),
  };
}

/** Mount points at or below any of `prefixes`, deepest first. */
export function mountsUnder(prefixes: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m): m is string => !!m)
    .map((m) => m.replace(/\\040/g, ' '))
    .filter((m) => prefixes.some((p) => m === p || m.startsWith(`${p}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything at or below `prefixes` (lazily if busy). */
export async function unmountAll(prefixes: string[]): Promise<void> {
  // a mount can be stacked several times (the kubelet's root-dir self bind): repeat until clean
  for (let round = 0; round < 5; round++) {
    const points = mountsUnder(prefixes);
    if (points.length === 0) return;
    for (const m of points) {
      await run('umount', [m]).catch(() => run('umount', ['-l', m]).catch(() => {}));
    }
  }
}

/** Pod network namespaces (/run/netns/cni-*) that appeared since the snapshot and hold no process. */
export function newPodNetns(snap: HostSnapshot): string[] {
  return listDir('/run/netns')
    .filter((n) => n.startsWith('cni-') && !snap.netns.has(n))
    .map((n) => join('/run/netns', n));
}

/** cgroup v1 hierarchies (and the v2 tree) under /sys/fs/cgroup. */
export function cgroupHierarchies(): string[] {
  return listDir(CGROUP_BASE)
    .map((h) => join(CGROUP_BASE, h))
    .filter((h) => {
      try {
        return statSync(h).isDirectory() && existsSync(join(h, 'cgroup.procs'));
      } catch {
        return false;
      }
    });
}

/** Creates the node's cgroup root in every hierarchy (the kubelet refuses a cgroupRoot that is missing). */
export function createCgroupRoot(cgroupRoot: string): void {
  for (const h of cgroupHierarchies()) mkdirSync(join(h, cgroupRoot), { recursive: true });
}

/** Every pid in the node's cgroup tree (any hierarchy): the pods' processes, whatever runc says. */
export function pidsInCgroupTree(cgroupRoot: string): number[] {
  const pids = new Set<number>();
  const walk = (dir: string): void => {
    try {
      for (const l of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (l) pids.add(Number(l));
    } catch {}
    for (const e of listDir(dir)) {
      const child = join(dir, e);
      try {
        if (statSync(child).isDirectory()) walk(child);
      } catch {}
    }
  };
  for (const h of cgroupHierarchies()) walk(join(h, cgroupRoot));
  return [...pids];
}

/** Cgroup directories below `cgroupRoot` that still exist, in any hierarchy. */
export function cgroupsLeft(cgroupRoot: string): string[] {
  return cgroupHierarchies()
    .map((h) => join(h, cgroupRoot))
    .filter((p) => existsSync(p));
}

/** Removes the node's cgroup tree in every hierarchy, children first; empty cgroups only. */
export function removeCgroupTree(cgroupRoot: string): void {
  const remove = (dir: string): void => {
    for (const e of listDir(dir)) {
      const child = join(dir, e);
      try {
        if (statSync(child).isDirectory()) remove(child);
      } catch {}
    }
    try {
      rmdirSync(dir);
    } catch {}
  };
  for (const h of cgroupHierarchies()) {
    const root = join(h, cgroupRoot);
    if (existsSync(root)) remove(root);
  }
}

/**
 * The socket containerd 1.6's runc shim listens on for a sandbox (runtime/v2/shim SocketAddress:
 * sha256 of <containerd address>/<namespace>/<sandbox id> under /run/containerd/s).
 */
export function shimSocketPath(containerdSocket: string, id: string): string {
  const digest = createHash('sha256')
    .update(join(containerdSocket, 'k8s.io', id))
    .digest('hex');
  return join('/run/containerd/s', digest);
}

/**
 * The shim sockets of running containerd shims among `pids`, from their command lines
 * (`containerd-shim-runc-v2 -namespace <ns> -id <id> -address <containerd socket>`): read before
 * the shims are killed, so no socket is missed even when runc's state lacks the sandbox.
 */
export function shimSocketsOf(pids: number[]): string[] {
  const sockets: string[] = [];
  for (const pid of pids) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!argv[0]?.endsWith('containerd-shim-runc-v2')) continue;
    const flag = (f: string): string | undefined => {
      const i = argv.indexOf(f);
      return i >= 0 ? argv[i + 1] : undefined;
    };
    const [ns, id, address] = [flag('-namespace'), flag('-id'), flag('-address')];
    if (!ns || !id || !address) continue;
    sockets.push(
      join(
        '/run/containerd/s',
        createHash('sha256')
          .update(join(address, ns, id))
          .digest('hex'),
      ),
    );
  }
  return sockets;
}

export interface NodeLeftovers {
  nodeDir: string;
  containerdSocket: string;
  cniNetwork: string;
  /** every container id runc knew for the node (sandboxes among them) */
  containerIds: string[];
  /** shim sockets seen on the node's shims (shimSocketsOf) */
  shimSockets: string[];
}

/** Removes what the node left outside its directory (see the module header). */
export function removeHostLeftovers(node: NodeLeftovers, createdDirs: string[]): void {
  for (const id of node.containerIds) rmSync(shimSocketPath(node.containerdSocket, id), { force: true });
  for (const socket of node.shimSockets) rmSync(socket, { force: true });
  for (const e of listDir(POD_LOG_LINKS)) {
    const p = join(POD_LOG_LINKS, e);
    try {
      if (readlinkSync(p).startsWith(`${node.nodeDir}/`)) rmSync(p, { force: true });
    } catch {}
  }
  for (const e of listDir(CNI_RESULTS)) {
    // <network>-<sandbox id>-<interface>: ours, and containerd's loopback network of our sandboxes
    const ours =
      e.startsWith(`${node.cniNetwork}-`) || node.containerIds.some((id) => e === `cni-loopback-${id}-lo`);
    if (ours) rmSync(join(CNI_RESULTS, e), { force: true });
  }
  // the kubelet's socket in device-plugins is hard-coded: ours only if no other kubelet runs. The
  // last node out also removes empty shared directories another node created (nodes that overlap
  // in time cannot each remove what the other still used)
  const last = !kubeletRunning();
  if (last) {
    for (const e of ['kubelet.sock', 'DEPRECATION'])
      rmSync(join(KUBELET_VAR_LIB, 'device-plugins', e), { force: true });
  }
  for (const d of SHARED_DIRS) {
    if (!last && !createdDirs.includes(d)) continue;
    try {
      rmdirSync(d); // only when empty
    } catch {}
  }
}

const SNAPSHOT_FILE = 'host-snapshot.json';

/** Keeps the snapshot in the node directory, for node-reclaim.ts after a SIGKILLed tether. */
export function saveSnapshot(nodeDir: string, snap: HostSnapshot): void {
  writeFileSync(
    join(nodeDir, SNAPSHOT_FILE),
    JSON.stringify({ netns: [...snap.netns], createdDirs: snap.createdDirs }),
  );
}

/** The snapshot a node saved in its directory (empty when missing or unreadable). */
export function loadSnapshot(nodeDir: string): HostSnapshot {
  try {
    const raw = JSON.parse(readFileSync(join(nodeDir, SNAPSHOT_FILE), 'utf8')) as {
      netns?: string[];
      createdDirs?: string[];
    };
    return {
      netns: new Set(raw.netns ?? []),
      createdDirs: (raw.createdDirs ?? []).filter((d) => SHARED_DIRS.includes(d)),
    };
  } catch {
    return { netns: new Set(), createdDirs: [] };
  }
}

/** Puts back the sysctls the kubelet changed once no kubelet runs any more. */
export function restoreKubeletSysctls(): void {
  if (kubeletRunning() || !existsSync(SYSCTL_SAVE)) return;
  let saved: Record<string, string> = {};
  try {
    saved = JSON.parse(readFileSync(SYSCTL_SAVE, 'utf8')) as Record<string, string>;
  } catch {}
  for (const [s, v] of Object.entries(saved)) {
    if (!KUBELET_SYSCTLS.includes(s) || !/^-?\d+$/.test(v)) continue;
    try {
      if (readFileSync(`/proc/sys/${s}`, 'utf8').trim() !== v) writeFileSync(`/proc/sys/${s}`, v);
    } catch {}
  }
  rmSync(SYSCTL_SAVE, { force: true });
  try {
    rmdirSync(SYSCTL_SAVE_DIR);
  } catch {}
}

function kubeletRunning(): boolean {
  for (const p of listDir('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'kubelet') return true;
    } catch {}
  }
  return false;
}
