// What a real node leaves on the host outside its own directory, found and removed: mounts (the
// kubelet's self bind-mount of its root dir, pod volumes, containerd rootfs/shm, the pods' network
// namespaces under /run/netns/cni-*), cgroups under the node's cgroup root in every hierarchy, the
// kubelet's hard-coded /var/lib/kubelet/device-plugins and /var/log/containers links, containerd's
// shim sockets in /run/containerd, CNI result caches in /var/lib/cni, and the global sysctls the
// kubelet sets. A snapshot taken before the node starts tells apart what the node created from what
// was already there (another node or another user): only the former is removed.
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
const CONTAINERD_RUN = ['/run/containerd/s', '/run/containerd/fifo'];
const KUBELET_VAR_LIB = '/var/lib/kubelet';
const POD_LOG_LINKS = '/var/log/containers';
const CNI_RESULTS = '/var/lib/cni/results';

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
  containerdRun: Set<string>;
  createdDirs: string[];
  sysctls: Map<string, string>;
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Taken before the node starts. */
export function snapshotHost(): HostSnapshot {
  const containerdRun = new Set<string>();
  for (const d of CONTAINERD_RUN) for (const e of listDir(d)) containerdRun.add(join(d, e));
  const createdDirs = [
    '/run/containerd/s',
    '/run/containerd/fifo',
    '/run/containerd',
    join(KUBELET_VAR_LIB, 'device-plugins'),
    KUBELET_VAR_LIB,
    POD_LOG_LINKS,
    CNI_RESULTS,
    '/var/lib/cni',
  ].filter((d) => !existsSync(d));
  const sysctls = new Map<string, string>();
  for (const s of KUBELET_SYSCTLS) {
    try {
      sysctls.set(s, readFileSync(`/proc/sys/${s}`, 'utf8').trim());
    } catch {}
  }
  return {
    netns: new Set(listDir('/run/netns').filter((n) => n.startsWith('cni-'))),
    containerdRun,
    createdDirs,
    sysctls,
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

/** Removes what the node left outside its directory (see the module header). */
export function removeHostLeftovers(
  snap: HostSnapshot,
  nodeDir: string,
  cniNetwork: string,
  sandboxIds: string[],
): void {
  for (const d of CONTAINERD_RUN) {
    for (const e of listDir(d)) {
      const p = join(d, e);
      if (!snap.containerdRun.has(p)) rmSync(p, { recursive: true, force: true });
    }
  }
  for (const e of listDir(POD_LOG_LINKS)) {
    const p = join(POD_LOG_LINKS, e);
    try {
      if (readlinkSync(p).startsWith(`${nodeDir}/`)) rmSync(p, { force: true });
    } catch {}
  }
  for (const e of listDir(CNI_RESULTS)) {
    // <network>-<sandbox id>-<interface>: ours, and containerd's loopback network of our sandboxes
    const ours = e.startsWith(`${cniNetwork}-`) || sandboxIds.some((id) => e === `cni-loopback-${id}-lo`);
    if (ours) rmSync(join(CNI_RESULTS, e), { force: true });
  }
  // directories that did not exist before, deepest first, only when empty; the kubelet's socket in
  // device-plugins is ours only if we created the directory (another kubelet's otherwise)
  for (const d of snap.createdDirs) {
    if (d === join(KUBELET_VAR_LIB, 'device-plugins')) {
      for (const e of ['kubelet.sock', 'DEPRECATION']) rmSync(join(d, e), { force: true });
    }
    try {
      rmdirSync(d);
    } catch {}
  }
}

/** Puts back the sysctls the kubelet changed, unless another kubelet still runs. */
export function restoreKubeletSysctls(snap: HostSnapshot): void {
  if (kubeletRunning()) return;
  for (const [s, v] of snap.sysctls) {
    try {
      if (readFileSync(`/proc/sys/${s}`, 'utf8').trim() !== v) writeFileSync(`/proc/sys/${s}`, v);
    } catch {}
  }
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
