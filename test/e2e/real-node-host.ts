// Host-side checks shared by the real-node e2e files. Other real nodes may run at the same time (a
// CI run of the same suite from another checkout): what a node leaves is checked by what is provably
// its own, and the shared state (hard-coded directories, the kubelet's sysctls) is compared with the
// state before only when no other kubelet ran before or after.
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { shimSocketsOf } from '../../src/localenv/node-host-state.ts';
import { processesInNetns } from '../../src/localenv/node-network.ts';

/** Host paths the kubelet, containerd and CNI use whatever they are told. */
const SHARED_PATHS = [
  '/var/lib/kubelet',
  '/var/log/containers',
  '/var/lib/cni',
  '/run/containerd',
  '/opt/containerd',
];
/** Global sysctls the kubelet forces. */
const KUBELET_SYSCTLS = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops'];

/** Whether a kubelet process runs on this host (ours or anyone's). */
export function kubeletRunning(): boolean {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .some((p) => {
      try {
        return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'kubelet';
      } catch {
        return false;
      }
    });
}

export interface SharedHostState {
  /** entries of each shared path (null: the path does not exist) */
  paths: Record<string, string[] | null>;
  sysctls: Record<string, string>;
}

/** Shared host state (directories and sysctls), or undefined when a kubelet runs and owns part of it. */
export function sharedHostState(): SharedHostState | undefined {
  if (kubeletRunning()) return undefined;
  const paths: SharedHostState['paths'] = {};
  for (const p of SHARED_PATHS) paths[p] = existsSync(p) ? readdirSync(p).sort() : null;
  const sysctls: SharedHostState['sysctls'] = {};
  for (const s of KUBELET_SYSCTLS) sysctls[s] = readFileSync(`/proc/sys/${s}`, 'utf8').trim();
  return { paths, sysctls };
}

/**
 * What is in `after` but was not in `before`: new shared paths or entries, changed sysctls. Empty
 * when either is undefined (a kubelet ran: the state was partly someone else's). Leftovers of other
 * runs that a node cleaned up meanwhile are fine.
 */
export function newSharedState(
  before: SharedHostState | undefined,
  after: SharedHostState | undefined,
): string[] {
  if (!before || !after) return [];
  const added: string[] = [];
  for (const [p, entries] of Object.entries(after.paths)) {
    if (entries === null) continue;
    const was = before.paths[p];
    if (was === null || was === undefined) added.push(p);
    else for (const e of entries) if (!was.includes(e)) added.push(join(p, e));
  }
  for (const [s, v] of Object.entries(after.sysctls)) if (before.sysctls[s] !== v) added.push(`${s}=${v}`);
  return added;
}

/** The shim sockets of the shims running in a node's namespace (read before it stops). */
export async function nodeShimSockets(netns: string): Promise<string[]> {
  return shimSocketsOf(await processesInNetns(netns));
}

/** What a stopped node left that is provably its own: shim sockets, CNI results, pod log links. */
export function ownLeftovers(node: { name: string; dir: string; shimSockets: string[] }): string[] {
  const left = node.shimSockets.filter((s) => existsSync(s));
  const results = '/var/lib/cni/results';
  if (existsSync(results)) {
    left.push(
      ...readdirSync(results)
        .filter((e) => e.startsWith(`tether-${node.name}-`))
        .map((e) => join(results, e)),
    );
  }
  const links = '/var/log/containers';
  if (existsSync(links)) {
    for (const e of readdirSync(links)) {
      try {
        if (readlinkSync(join(links, e)).startsWith(`${node.dir}/`)) left.push(join(links, e));
      } catch {}
    }
  }
  return left;
}
