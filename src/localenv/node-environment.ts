// The real-node half of a local environment (`startEnvironment({ nodes: true })`): per control
// plane a node network, the control plane with that network, the managed clusters' firewall, one
// real node, and the tether image imported into the node's containerd; plus the squid that is the
// managed nodes' only way to the hub (listening on 127.0.0.1 and on each managed host end, allowing
// CONNECT to the hub apiserver and the hub node's NodePorts only). Control planes start in
// parallel; each node starts as soon as its control plane (and, for a managed one, squid and the
// firewall) is there. Owns everything it starts: on failure or abort all of it is removed before the
// promise rejects, and stop() removes it in the order nodes (and squid), control planes, networks.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { TetherError } from '../errors.ts';
import { ensureImage } from '../image/index.ts';
import { pollUntil } from '../wait.ts';
import { type BuildProgress, type ControlPlaneBinaries, ensureNodeBinaries } from './binaries.ts';
import { type ControlPlane, startControlPlane } from './controlplane.ts';
import { type RealNode, startNode } from './node.ts';
import { checkNodePrerequisites } from './node-command.ts';
import { installManagedNodeFirewall } from './node-firewall.ts';
import { ensureNodeImages } from './node-images.ts';
import { createNodeNetwork, type NodeNetwork } from './node-network.ts';
import type { SupervisedProcess } from './process.ts';
import { type Squid, startSquid } from './squid.ts';

/** NodePorts (kube-apiserver's default --service-node-port-range): the hub's in-cluster endpoints. */
export const NODE_PORT_RANGE = [30000, 32767] as const;
/** How long importing one image into a node's containerd may take. */
const IMAGE_IMPORT_TIMEOUT_MS = 300_000;
/**
 * inotify instances one control plane with a real node holds (measured: kube-apiserver 6,
 * kube-controller-manager 6, kubelet 6 running and up to 10 while it starts, containerd 1,
 * kube-scheduler 1). They count against the user's fs.inotify.max_user_instances (128 by default);
 * past it the kubelet and containerd's CRI plugin fail with "too many open files" / "unknown service
 * runtime.v1.RuntimeService".
 */
export const INOTIFY_INSTANCES_PER_NODE = 24;

/** The squid of a real-node environment, as managed pods and host-side callers reach it. */
export interface NodeEnvironmentSquid {
  /** `http://127.0.0.1:<port>` (from the host) */
  url: string;
  /** `http://<cluster's host end>:<port>`: the proxy URL for pods on `clusterName`'s node */
  urlFor(clusterName: string): string;
  accessLogPath: string;
  process: SupervisedProcess;
}

export interface NodeClusters {
  /** hub first, then cluster1 … clusterN */
  controlPlanes: ControlPlane[];
  /** by control plane name */
  nodes: Record<string, RealNode>;
  squid: NodeEnvironmentSquid;
  /** the tether image, imported into every node's containerd (pods use imagePullPolicy: Never) */
  image: { ref: string };
  /** `https://<hub host end>:<hub apiserver port>`: the hub apiserver as managed pods reach it through squid */
  hubApiserverUrlForNodes: string;
  /** the same for every hub, by name */
  hubApiserverUrlsForNodes: Record<string, string>;
  /** node processes (containerd, scheduler, kubelet, kube-proxy per node) and squid */
  processes(): SupervisedProcess[];
  onFailure(handler: (description: string) => void): void;
  stop(): Promise<void>;
}

export interface StartNodeClustersOptions {
  /** the hubs first (`hubs` of them, default 1), then the managed clusters */
  names: string[];
  /** how many of `names`, from the first, are hubs (several hubs: one managed cluster joined to each) */
  hubs?: number;
  /** parent directory of the control planes' directories */
  baseDir: string;
  binaries: ControlPlaneBinaries;
  crdsFor(name: string): V1CustomResourceDefinition[];
  /**
   * hosted mode: hosted cluster → the cluster whose node runs its agent; that node's firewall lets
   * it reach the hosted apiserver, whose certificate names that node's host end
   */
  hostedOn?: Record<string, string>;
  progress?: BuildProgress;
  signal?: AbortSignal;
}

/**
 * Throws TETHER_NODE_UNSUPPORTED, saying why and naming `tether up --processes`, when this machine
 * cannot run real nodes (not root, no cgroups, no br_netfilter, containerd/runc/CNI plugins missing).
 */
export function checkNodesSupported(host?: Parameters<typeof checkNodePrerequisites>[0]): void {
  try {
    checkNodePrerequisites(host);
  } catch (err) {
    if (!(err instanceof TetherError)) throw err;
    throw new TetherError(
      'TETHER_NODE_UNSUPPORTED',
      `cannot start real nodes: ${err.message}. Without real nodes, 'tether up --processes' runs the clusters and tether as host processes`,
      { cause: err },
    );
  }
}

/** inotify instances process `pid` holds (its inotify file descriptors); 0 when it is gone. */
export function inotifyInstancesOf(pid: number | string): number {
  let count = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === 'anon_inode:inotify') count++;
      } catch {}
    }
  } catch {}
  return count;
}

/** inotify instances held by the processes of user `uid`. */
export function inotifyInstancesInUse(uid = process.getuid?.() ?? 0): number {
  let count = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid) count += inotifyInstancesOf(pid);
    } catch {}
  }
  return count;
}

/**
 * Throws TETHER_LIMIT_EXCEEDED, saying what to raise, when `nodes` more real nodes would not fit
 * in the user's inotify instances next to what already runs on this host.
 */
export function checkInotifyHeadroom(
  nodes: number,
  host: { max: number; inUse: number } = {
    max: Number(readFileSync('/proc/sys/fs/inotify/max_user_instances', 'utf8')),
    inUse: inotifyInstancesInUse(),
  },
): void {
  const needed = nodes * INOTIFY_INSTANCES_PER_NODE;
  if (host.inUse + needed <= host.max) return;
  throw new TetherError(
    'TETHER_LIMIT_EXCEEDED',
    `${nodes} control planes with real nodes need about ${needed} inotify instances, but ${host.inUse} of ` +
      `fs.inotify.max_user_instances=${host.max} are in use already: raise it ` +
      `(sysctl -w fs.inotify.max_user_instances=${Math.max(512, host.inUse + needed)}), start fewer clusters, or use 'tether up --processes'`,
  );
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A node's containerd socket (startNode keeps it at <node dir>/containerd/containerd.sock). */
function containerdSocket(nodeDir: string): string {
  return join(nodeDir, 'containerd', 'containerd.sock');
}

function ctr(socket: string, args: string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const argv = ['--address', socket, '--namespace', 'k8s.io', ...args];
  // abortable (an import takes seconds): execFile kills ctr when the signal fires
  return new Promise<void>((resolve, reject) => {
    execFile('ctr', argv, { timeout: timeoutMs, signal }, (err, _stdout, stderr) => {
      if (!err) resolve();
      else if (signal?.aborted) reject(signal.reason);
      else reject(new Error(`ctr ${argv.join(' ')} failed: ${stderr.trim() || err.message}`));
    });
  });
}

/**
 * Imports an OCI archive into a started node's containerd (namespace k8s.io, where the kubelet
 * looks), as startNode imports the pause image.
 */
export function importImageIntoNode(node: RealNode, archive: string, signal?: AbortSignal): Promise<void> {
  return ctr(containerdSocket(node.dir), ['images', 'import', archive], IMAGE_IMPORT_TIMEOUT_MS, signal);
}

/**
 * The containerd socket of node `name` being started under `baseDir` (its only node directory
 * there), once containerd answers: the import can run while the kubelet starts.
 */
async function nodeContainerdUp(baseDir: string, name: string, signal: AbortSignal): Promise<string> {
  return pollUntil(
    async () => {
      const dir = readdirSync(baseDir).find((d) => d.startsWith(`tether-node-${name}-`));
      if (!dir) return undefined;
      const socket = containerdSocket(join(baseDir, dir));
      await ctr(socket, ['version'], 5000, signal);
      return socket;
    },
    { timeoutMs: 120_000, intervalMs: 200, description: `containerd of node ${name}`, signal },
  );
}

/** Starts the control planes `names` with one real node each (see the module header). */
export async function startNodeClusters(opts: StartNodeClustersOptions): Promise<NodeClusters> {
  checkNodesSupported();
  checkInotifyHeadroom(opts.names.length);
  const progress = opts.progress ?? (() => {});
  const hubNames = opts.names.slice(0, opts.hubs ?? 1);
  const managedNames = opts.names.slice(opts.hubs ?? 1);
  const [hubName] = hubNames;
  if (!hubName) throw new Error('internal: startNodeClusters needs the hub name first');
  const isHub = (name: string): boolean => hubNames.includes(name);
  for (const [hosted, on] of Object.entries(opts.hostedOn ?? {}))
    if (hosted === on || !managedNames.includes(hosted) || !managedNames.includes(on))
      throw new TetherError(
        'TETHER_INVALID_ARGUMENT',
        `cannot host ${hosted} on ${on}: both must be managed clusters here`,
      );
  const nodeBinaries = await ensureNodeBinaries(progress, opts.signal);
  const nodeImages = await ensureNodeImages(progress);
  opts.signal?.throwIfAborted();

  // the first failure stops every other wait at once; it is the error the caller sees
  const failFast = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, failFast.signal]) : failFast.signal;
  let firstFailure: unknown;
  const track = <T>(p: Promise<T>): Promise<T> =>
    p.catch((err: unknown) => {
      if (firstFailure === undefined && !opts.signal?.aborted) {
        firstFailure = err;
        failFast.abort(err);
      }
      throw err;
    });

  // a directory of this environment's own for the node directories, so each node's is found (and
  // its containerd used) while startNode still runs
  const nodesBase = mkdtempSync(join(tmpdir(), 'tether-nodes-'));
  const networks: Record<string, NodeNetwork> = {};
  const controlPlanes: Record<string, ControlPlane> = {};
  const nodes: Record<string, RealNode> = {};
  let squid: Squid | undefined;
  const failureHandlers: Array<(d: string) => void> = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // squid's shutdown takes its ~2 s next to the nodes'; control planes go once no kubelet is left
    await Promise.all([...Object.values(nodes).map((n) => n.stop()), squid?.stop()]);
    await Promise.all(Object.values(controlPlanes).map((cp) => cp.stop()));
    // a node removes its own network; these never got (or outlived) one
    for (const n of Object.values(networks)) await n.remove();
    // empty once every node removed its directory; never recursive (a directory a node failed to
    // unmount is not ours to delete through)
    try {
      rmdirSync(nodesBase);
    } catch {}
  };

  const started = Date.now();
  const image = track(
    ensureImage({ onProgress: progress, signal }).then((img) => {
      progress(
        `tether image ${img.reference} ${img.built ? 'built' : 'cached'} (${seconds(Date.now() - started)})`,
      );
      return img;
    }),
  );
  const networkResults = await Promise.allSettled(
    opts.names.map((name) =>
      track(
        createNodeNetwork(name).then((n) => {
          networks[name] = n;
          return n;
        }),
      ),
    ),
  );
  const work: Array<Promise<unknown>> = [image];
  if (networkResults.every((r) => r.status === 'fulfilled')) {
    const cps = opts.names.map((name) =>
      track(
        startControlPlane(name, {
          baseDir: opts.baseDir,
          binaries: opts.binaries,
          crds: opts.crdsFor(name),
          hubAdmission: isHub(name),
          nodeNetwork: { hostAddress: networks[name]?.hostAddress as string },
          ...(opts.hostedOn?.[name]
            ? { extraIpSans: [networks[opts.hostedOn[name]]?.hostAddress as string] }
            : {}),
          signal,
        }).then((cp) => {
          controlPlanes[name] = cp;
          progress(`control plane ${name} ready (${seconds(Date.now() - started)})`);
          return cp;
        }),
      ),
    );
    /** the clusters whose agents `hosting`'s node runs */
    const hostedBy = (hosting: string): string[] =>
      Object.entries(opts.hostedOn ?? {})
        .filter(([, on]) => on === hosting)
        .map(([hosted]) => hosted);
    const squidStarted = track(
      Promise.all(hubNames.map((_, i) => cps[i] as Promise<ControlPlane>)).then(async (hubs) => {
        squid = await startSquid({
          listenAddresses: managedNames.map((n) => (networks[n] as NodeNetwork).hostAddress),
          // every hub's apiserver and NodePorts, nothing else
          allowConnect: hubs.flatMap((hub) => {
            const network = networks[hub.name] as NodeNetwork;
            return [
              { address: network.hostAddress, ports: portOf(hub.apiserverUrl) },
              { address: network.nodeAddress, ports: NODE_PORT_RANGE },
            ];
          }),
          signal,
        });
        return squid;
      }),
    );
    work.push(squidStarted);
    opts.names.forEach((name, i) => {
      const network = networks[name] as NodeNetwork;
      const node = track(
        Promise.all([
          cps[i] as Promise<ControlPlane>,
          isHub(name) ? undefined : squidStarted,
          Promise.all(hostedBy(name).map((h) => cps[opts.names.indexOf(h)] as Promise<ControlPlane>)),
        ]).then(async ([cp, sq, hosted]) => {
          if (sq) {
            await installManagedNodeFirewall(network, {
              apiserverPort: portOf(cp.apiserverUrl),
              squidPort: sq.port,
              hostedApiserverPorts: hosted.map((h) => portOf(h.apiserverUrl)),
            });
          }
          const t = Date.now();
          const n = await startNode(cp, network, {
            baseDir: nodesBase,
            binaries: nodeBinaries,
            images: nodeImages,
            progress,
            signal,
          });
          nodes[name] = n;
          progress(`node ${name} Ready in ${seconds(Date.now() - t)} (${seconds(Date.now() - started)})`);
          return n;
        }),
      );
      // as soon as the node's containerd answers (the kubelet is still starting then)
      const imported = Promise.all([image, nodeContainerdUp(nodesBase, name, signal)]).then(
        async ([img, socket]) => {
          const t = Date.now();
          await ctr(socket, ['images', 'import', img.archive], IMAGE_IMPORT_TIMEOUT_MS, signal);
          progress(
            `tether image imported into node ${name} in ${seconds(Date.now() - t)} (${seconds(Date.now() - started)})`,
          );
        },
      );
      // a node that failed removed its containerd under the import: its own error is the one to see
      work.push(
        track(Promise.all([node, imported.catch((err: unknown) => node.then(() => Promise.reject(err)))])),
      );
    });
  }
  await Promise.allSettled(work);
  if (firstFailure !== undefined || opts.signal?.aborted) {
    await stop();
    opts.signal?.throwIfAborted();
    throw firstFailure;
  }
  const sq = squid as Squid;
  const img = await image;
  const apiserverUrlForNodes = (name: string): string =>
    `https://${(networks[name] as NodeNetwork).hostAddress}:${portOf((controlPlanes[name] as ControlPlane).apiserverUrl)}`;
  const nodeList = opts.names.map((n) => nodes[n] as RealNode);
  for (const n of nodeList) {
    n.onFailure((d) => {
      for (const h of failureHandlers) h(d);
    });
  }
  sq.process.onUnexpectedExit((desc) => {
    if (stopped) return;
    for (const h of failureHandlers) h(`squid: ${desc}; last log lines:\n${sq.process.tail(10)}`);
  });
  return {
    controlPlanes: opts.names.map((n) => controlPlanes[n] as ControlPlane),
    nodes,
    squid: {
      url: sq.url,
      urlFor: (clusterName) => {
        const network = managedNames.includes(clusterName) ? networks[clusterName] : undefined;
        if (!network) {
          throw new TetherError(
            'TETHER_INVALID_ARGUMENT',
            `no managed cluster ${clusterName} (squid listens for ${managedNames.join(', ') || 'none'})`,
          );
        }
        return sq.urlOn(network.hostAddress);
      },
      accessLogPath: sq.accessLogPath,
      process: sq.process,
    },
    image: { ref: img.reference },
    hubApiserverUrlForNodes: apiserverUrlForNodes(hubName),
    hubApiserverUrlsForNodes: Object.fromEntries(hubNames.map((n) => [n, apiserverUrlForNodes(n)])),
    processes: () => [...nodeList.flatMap((n) => n.processes), sq.process],
    onFailure: (h) => failureHandlers.push(h),
    stop,
  };
}
