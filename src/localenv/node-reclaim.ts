// Reclaiming what a real node left when the tether that ran it was SIGKILLed: the parent-death
// signal takes containerd, the kubelet and kube-proxy with it, but containerd's shims and the pods
// they hold live on (by design: shims outlive containerd), with their mounts, cgroups, the pods'
// network namespaces and the node namespace itself. Called before a node of the same name starts.
// Refuses when the node is still alive (its containerd or kubelet runs): that is another tether's.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TetherError } from '../errors.ts';
import { pollUntil } from '../wait.ts';
import { run } from './node-command.ts';
import {
  loadSnapshot,
  pidsInCgroupTree,
  removeCgroupTree,
  removeHostLeftovers,
  restoreKubeletSysctls,
  shimSocketsOf,
  unmountAll,
} from './node-host-state.ts';

/** How long reclaiming waits for the leftover processes to be gone after SIGKILL. */
const RECLAIM_DEADLINE_MS = 15_000;
/** Processes that mean "this node is alive", not left over. */
const LIVE_NODE_COMMANDS = new Set(['containerd', 'kubelet', 'kube-proxy']);

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

async function netnsPids(netns: string): Promise<number[]> {
  if (!existsSync(`/run/netns/${netns}`)) return [];
  const { stdout } = await run('ip', ['netns', 'pids', netns]).catch(() => ({ stdout: '' }));
  return stdout
    .split('\n')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** Node directories (…/tether-node-<name>-XXXXXX) that still have mounts. */
function staleNodeDirs(name: string): string[] {
  const marker = `/tether-node-${name}-`;
  const dirs = new Set<string>();
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const point = line.split(' ')[4];
    const at = point?.indexOf(marker) ?? -1;
    if (!point || at < 0) continue;
    const end = point.indexOf('/', at + marker.length);
    dirs.add(end < 0 ? point : point.slice(0, end));
  }
  return [...dirs];
}

/**
 * Removes the leftovers of a killed node named `name` (netns tether-<name> and its veth, cgroups /tether-<name>,
 * mounts under its old directory, pod network namespaces nothing runs in). Returns how many leftover
 * processes it killed; 0 and no change when there was nothing to reclaim.
 */
export async function reclaimStaleNode(name: string): Promise<number> {
  const netns = `tether-${name}`;
  const cgroupRoot = `/tether-${name}`;
  const inNetns = await netnsPids(netns);
  const live = inNetns.filter((p) => LIVE_NODE_COMMANDS.has(comm(p)));
  if (live.length > 0) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `a node named ${name} is running (${live.map((p) => `${comm(p)} pid ${p}`).join(', ')}); stop it first or pick another name`,
    );
  }
  const killed = new Set<number>();
  const shimSockets = new Set<string>();
  await pollUntil(
    async () => {
      const pids = [...(await netnsPids(netns)), ...pidsInCgroupTree(cgroupRoot)];
      for (const socket of shimSocketsOf(pids)) shimSockets.add(socket);
      for (const pid of pids) {
        killed.add(pid);
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      return pids.length === 0 && [...killed].every((pid) => !existsSync(`/proc/${pid}`));
    },
    {
      timeoutMs: RECLAIM_DEADLINE_MS,
      intervalMs: 100,
      description: `leftover processes of node ${name} to exit`,
    },
  );
  const dirs = staleNodeDirs(name);
  // pod namespaces whose pause is gone (a live pod always has its pause inside)
  const orphanPodNetns: string[] = [];
  for (const n of existsSync('/run/netns') ? readdirSync('/run/netns') : []) {
    if (n.startsWith('cni-') && (await netnsPids(n)).length === 0) orphanPodNetns.push(`/run/netns/${n}`);
  }
  if (killed.size > 0 || dirs.length > 0) {
    await unmountAll([...dirs, ...orphanPodNetns]);
    for (const p of orphanPodNetns) rmSync(p, { force: true });
    for (const d of dirs) {
      // containerd keeps runc's state per containerd namespace: <dir>/containerd/runc/k8s.io/<id>
      const runcState = join(d, 'containerd', 'runc', 'k8s.io');
      const containerIds = existsSync(runcState) ? readdirSync(runcState) : [];
      removeHostLeftovers(
        {
          nodeDir: d,
          containerdSocket: join(d, 'containerd', 'containerd.sock'),
          cniNetwork: `tether-${name}`,
          containerIds,
          shimSockets: [...shimSockets],
        },
        loadSnapshot(d).createdDirs,
      );
      rmSync(d, { recursive: true, force: true });
    }
  }
  for (const socket of shimSockets) rmSync(socket, { force: true });
  removeCgroupTree(cgroupRoot);
  // the namespace (and with it the veth) once nothing runs in it any more
  if (existsSync(`/run/netns/${netns}`) && (await netnsPids(netns)).length === 0) {
    await run('ip', ['netns', 'del', netns]).catch(() => {});
  }
  restoreKubeletSysctls();
  return killed.size;
}
