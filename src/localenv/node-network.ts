// The network of one real node: a network namespace `tether-<name>` that tether creates, joined to
// the host by a veth pair on a /30 of 10.244.<n>.0 (host end .1, node end .2), with the node's pod
// network 10.245.<n>.0/24 on a bridge inside it. Nothing leaves the machine: the namespace has no
// default route, and a mangle POSTROUTING rule in it drops every packet that would leave through the
// veth to anything but the host end (so even a ClusterIP that kube-proxy did not translate, routed
// towards the host for the service range, is dropped there). kubelet, containerd, kube-proxy and the
// CNI plugins run inside; their iptables chains, bridge, routes and sysctls die with the namespace.
// On the host, the pod network is routed via the node address (the apiserver reaches pods by IP:
// aggregated APIs, service proxy); that route goes with the host link.
// Owns: the namespace and the host end of the veth (the link name tth<n> is the allocation lock).
import { existsSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { TetherError } from '../errors.ts';
import { run, runInNetns } from './node-command.ts';
import { reclaimStaleNode } from './node-reclaim.ts';

/** Highest /30 index; 10.244.<n>.0/30 for n in 1..MAX_NODE_INDEX. */
const MAX_NODE_INDEX = 250;
/** The service range the control plane uses (controlplane.ts SERVICE_CLUSTER_IP_RANGE). */
const SERVICE_RANGE = '10.0.0.0/24';
/** The interface name of the node end inside the namespace. */
export const NODE_IFACE = 'eth0';

export interface NodeNetwork {
  /** network namespace name, `tether-<name>` (/run/netns/<netns>) */
  readonly netns: string;
  /** host end of the veth (in the host namespace) */
  readonly hostIface: string;
  /** 10.244.<n>.1: where the node reaches the host (the apiserver listens here too) */
  readonly hostAddress: string;
  /** 10.244.<n>.2: the node IP (kubelet --node-ip and its serving address) */
  readonly nodeAddress: string;
  /** 10.245.<n>.0/24: the pod network on the node's bridge */
  readonly podCidr: string;
  /** removes the namespace and the veth; later calls do nothing (the link name may be reused by then) */
  remove(): Promise<void>;
}

const NETNS_DIR = '/run/netns';

function netnsPath(netns: string): string {
  return `${NETNS_DIR}/${netns}`;
}

function isMountPoint(path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[4] === path);
}

async function netnsPids(netns: string): Promise<number[]> {
  const { stdout } = await run('ip', ['netns', 'pids', netns]);
  return stdout
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** Deletes a namespace left by a tether that was killed, refusing if anything still runs in it. */
async function reclaimStaleNetns(netns: string): Promise<void> {
  if (!existsSync(netnsPath(netns))) return;
  const pids = await netnsPids(netns).catch(() => []);
  if (pids.length > 0) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `network namespace ${netns} is in use by pids ${pids.join(', ')}; another tether node with this name is running (stop it first)`,
    );
  }
  await run('ip', ['netns', 'del', netns]);
}

async function deleteLink(iface: string): Promise<void> {
  await run('ip', ['link', 'del', iface]).catch(() => {});
}

/**
 * Creates the namespace `tether-<name>` and its veth on the first free 10.244.<n>.0/30, with the
 * egress rule in place before anything runs inside. Rolls back on failure.
 */
export async function createNodeNetwork(name: string): Promise<NodeNetwork> {
  const netns = `tether-${name}`;
  if (netns.length > 64) throw new TetherError('TETHER_INVALID_ARGUMENT', `node name ${name} is too long`);
  // what a SIGKILLed tether's node left (shims, pods, mounts) goes first; a live node is refused
  await reclaimStaleNode(name);
  await reclaimStaleNetns(netns);
  // `ip netns add` makes /run/netns a shared mount of itself; put it back the way it was if we did
  const netnsDirWasMount = isMountPoint(NETNS_DIR);
  await run('ip', ['netns', 'add', netns]);
  let hostIface: string | undefined;
  let removed = false;
  const remove = async (): Promise<void> => {
    // once only: after this the link name tth<n> is free and may already be another node's
    if (removed) return;
    removed = true;
    if (hostIface) await deleteLink(hostIface);
    if (existsSync(netnsPath(netns))) await run('ip', ['netns', 'del', netns]).catch(() => {});
    if (!netnsDirWasMount && isMountPoint(NETNS_DIR) && readdirSync(NETNS_DIR).length === 0) {
      await run('umount', [NETNS_DIR]).catch(() => {});
      try {
        rmdirSync(NETNS_DIR);
      } catch {}
    }
  };
  try {
    let index = 0;
    for (let n = 1; n <= MAX_NODE_INDEX && !hostIface; n++) {
      try {
        // creating the host link is the allocation: a second node gets "File exists" and moves on
        await run('ip', [
          'link',
          'add',
          `tth${n}`,
          'type',
          'veth',
          'peer',
          'name',
          NODE_IFACE,
          'netns',
          netns,
        ]);
        hostIface = `tth${n}`;
        index = n;
      } catch (err) {
        if (!/exists/i.test((err as Error).message)) throw err;
      }
    }
    if (!hostIface) {
      throw new TetherError(
        'TETHER_LIMIT_EXCEEDED',
        `all ${MAX_NODE_INDEX} node networks (host links tth1..tth${MAX_NODE_INDEX}) are in use`,
      );
    }
    const hostAddress = `10.244.${index}.1`;
    const nodeAddress = `10.244.${index}.2`;
    await run('ip', ['addr', 'add', `${hostAddress}/30`, 'dev', hostIface]);
    await run('ip', ['link', 'set', hostIface, 'up']);
    await runInNetns(netns, 'iptables', [
      '-w',
      '-t',
      'mangle',
      '-A',
      'POSTROUTING',
      '-o',
      NODE_IFACE,
      '!',
      '-d',
      `${hostAddress}/32`,
      '-m',
      'comment',
      '--comment',
      'tether: a node reaches nothing but its host end',
      '-j',
      'DROP',
    ]);
    await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
    await run('ip', ['-n', netns, 'addr', 'add', `${nodeAddress}/30`, 'dev', NODE_IFACE]);
    await run('ip', ['-n', netns, 'link', 'set', NODE_IFACE, 'up']);
    // kube-proxy translates ClusterIPs in nat OUTPUT, after the first route lookup: without a
    // route for the service range a connect() fails before it sees a rule
    await run('ip', ['-n', netns, 'route', 'add', SERVICE_RANGE, 'via', hostAddress, 'dev', NODE_IFACE]);
    const podCidr = `10.245.${index}.0/24`;
    // the host (the apiserver) reaches pods by IP; the route is deleted with the host link
    await run('ip', ['route', 'add', podCidr, 'via', nodeAddress, 'dev', hostIface]);
    return {
      netns,
      hostIface,
      hostAddress,
      nodeAddress,
      podCidr,
      remove,
    };
  } catch (err) {
    await remove();
    throw err;
  }
}

/** Pids of every process inside the namespace (containerd, kubelet, kube-proxy, shims, host-network pods). */
export function processesInNetns(netns: string): Promise<number[]> {
  return existsSync(netnsPath(netns)) ? netnsPids(netns) : Promise.resolve([]);
}
