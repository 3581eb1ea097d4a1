// A local multi-cluster environment: one hub and N managed control planes started in parallel, the
// OCM CRDs installed, and kubeconfigs written to a directory the user chose. Used by `tether up` and
// by the e2e tests. Owns `<dir>/state/` (control-plane data) and the kubeconfigs it writes. With
// `nodes: true` every control plane gets a real node, managed nodes reach the hub only through the
// environment's squid, and the tether image is on every node (node-environment.ts).
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { type LoopbackConversionWebhook, startLoopbackConversionWebhook } from '../addon/index.ts';
import { hubCrds, managedCrds } from '../api/index.ts';
import { TetherError } from '../errors.ts';
import { type BuildProgress, type ControlPlaneBinaries, ensureBinaries } from './binaries.ts';
import { type ControlPlane, startControlPlane } from './controlplane.ts';
import { startGatewayStack } from './gateway-stack.ts';
import type { HubServicesInfo } from './hub-services.ts';
import type { RealNode } from './node.ts';
import {
  checkNodesSupported,
  type NodeClusters,
  type NodeEnvironmentSquid,
  startNodeClusters,
} from './node-environment.ts';
import type { SupervisedProcess } from './process.ts';
import { Supervisor, type SupervisorOptions } from './supervisor.ts';
import { startTunnelStack, type TunnelStack } from './tunnel-stack.ts';
import type { ControlPlaneInfo } from './types.ts';

export interface EnvironmentOptions {
  /** number of managed clusters (cluster1 … clusterN) */
  clusters: number;
  /** where kubeconfigs (hub.kubeconfig, cluster1.kubeconfig, …) and state go */
  dir: string;
  progress?: BuildProgress;
  /** also start squid, the proxy-server and one proxy-agent per cluster (default: true without nodes) */
  tunnel?: boolean;
  /**
   * one real node per control plane (root, containerd, runc; TETHER_NODE_UNSUPPORTED otherwise), a
   * squid for the managed nodes and the tether image on every node; no tunnel stack (tether runs in
   * the clusters). Default false: control planes without nodes.
   */
  nodes?: boolean;
  /**
   * with nodes: hosted cluster → hosting cluster (names without the prefix, e.g. cluster2 → cluster1):
   * the hosting node may reach the hosted apiserver (node-environment.ts)
   */
  hostedOn?: Record<string, string>;
  /** with nodes: 2 starts a second hub, `<prefix>hub2`, with its own node (default 1) */
  hubs?: 1 | 2;
  /**
   * prepended to every control plane's (and node's) name: `<prefix>hub`, `<prefix>cluster1` … Node
   * names (network namespace, cgroups) are per host, so a test next to a running `tether up` needs
   * one. Default '' (hub, cluster1, …).
   */
  namePrefix?: string;
  /** 'full' (tether up): hub controllers + registered agents; 'tunnel' (tests): proxy-agents only */
  mode?: 'tunnel' | 'full';
  /**
   * abandons the start (the build, control planes, squid, tether processes): everything started
   * so far is stopped and removed before the promise rejects with the abort reason
   */
  signal?: AbortSignal;
}

export interface Environment {
  dir: string;
  hub: ControlPlaneInfo;
  /** the second hub (`hubs: 2`) */
  hub2?: ControlPlaneInfo;
  /** the second hub's apiserver as managed pods reach it through squid (`hubs: 2`) */
  hub2ApiserverUrlForNodes?: string;
  clusters: ControlPlaneInfo[];
  tunnel?: TunnelStack;
  /** real nodes by control plane name (`nodes: true`) */
  nodes?: Record<string, RealNode>;
  /** the managed nodes' way to the hub (`nodes: true`) */
  squid?: NodeEnvironmentSquid;
  /** the tether image, on every node (`nodes: true`) */
  image?: { ref: string };
  /** the hub apiserver as managed pods reach it through squid (`nodes: true`) */
  hubApiserverUrlForNodes?: string;
  /** cluster name → kubeconfig that reaches it through the hub gateway ('full' mode) */
  gatewayKubeconfigs?: Record<string, string>;
  /** the CONNECT / gRPC frontend and the user-server as this machine reaches them (real nodes) */
  hubServices?: HubServicesInfo;
  stop(): Promise<void>;
  /** called each time a process dies unexpectedly (without supervise(): nothing restarts it) */
  onFailure(handler: (description: string) => void): void;
  /**
   * From now on restart every process that dies unexpectedly (control planes, squid, tether
   * processes) with backoff, reporting each crash; stop() ends the supervision first.
   */
  supervise(opts: SupervisorOptions): void;
  /** every child process, control planes first */
  processes(): SupervisedProcess[];
  pids(): number[];
}

export const MAX_LOCAL_CLUSTERS = 20;

function claimDirectory(dir: string): string {
  const pidFile = join(dir, 'tether-up.pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8'));
    let alive = false;
    try {
      if (Number.isInteger(pid) && pid > 0) {
        process.kill(pid, 0);
        alive = true;
      }
    } catch {}
    if (alive && pid !== process.pid) {
      throw new TetherError(
        'TETHER_INVALID_ARGUMENT',
        `another tether environment (pid ${pid}) is running in ${dir}; stop it or choose another --dir`,
      );
    }
  }
  // Whatever is left in state/ belongs to a run that is gone (its processes died with it).
  rmSync(join(dir, 'state'), { recursive: true, force: true });
  mkdirSync(join(dir, 'state'), { recursive: true });
  writeFileSync(pidFile, String(process.pid));
  return pidFile;
}

/** Removes the state directory and our pid file (if it is still ours). */
function releaseDirectory(stateDir: string, pidFile: string): void {
  rmSync(stateDir, { recursive: true, force: true });
  try {
    if (readFileSync(pidFile, 'utf8') === String(process.pid)) unlinkSync(pidFile);
  } catch {}
}

export async function startEnvironment(opts: EnvironmentOptions): Promise<Environment> {
  if (!Number.isInteger(opts.clusters) || opts.clusters < 0 || opts.clusters > MAX_LOCAL_CLUSTERS) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `--clusters must be between 0 and ${MAX_LOCAL_CLUSTERS}`,
    );
  }
  if (opts.hubs !== undefined && (![1, 2].includes(opts.hubs) || (opts.hubs === 2 && !opts.nodes)))
    throw new TetherError('TETHER_INVALID_ARGUMENT', '--hubs is 1 or 2, and a second hub needs real nodes');
  if (opts.namePrefix !== undefined && !/^[a-z0-9][-a-z0-9]{0,20}$/.test(opts.namePrefix)) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `name prefix "${opts.namePrefix}" must be up to 21 lowercase letters, digits or '-', starting with a letter or digit`,
    );
  }
  if (opts.nodes && opts.tunnel) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      'real nodes run tether inside the clusters: the process tunnel stack (tunnel: true) does not go with nodes: true',
    );
  }
  // before anything is created: a machine that cannot run nodes says so and names --processes
  if (opts.nodes) checkNodesSupported();
  const progress = opts.progress ?? (() => {});
  const dir = resolve(opts.dir);
  mkdirSync(dir, { recursive: true });
  const pidFile = claimDirectory(dir);
  const stateDir = join(dir, 'state');
  const signal = opts.signal;
  let binaries: ControlPlaneBinaries;
  try {
    binaries = await ensureBinaries(progress, signal);
  } catch (err) {
    releaseDirectory(stateDir, pidFile);
    throw err;
  }
  const prefix = opts.namePrefix ?? '';
  const hubName = `${prefix}hub`;
  const hubNames = opts.hubs === 2 && opts.nodes ? [hubName, `${prefix}hub2`] : [hubName];
  const names = [...hubNames, ...Array.from({ length: opts.clusters }, (_, i) => `${prefix}cluster${i + 1}`)];
  // Control planes on this host convert the addon kinds v1alpha1 ⇄ v1beta1 through a webhook this
  // process serves on loopback (it lives exactly as long as the environment). With real nodes the
  // CRDs keep conversion None for now.
  let conversionWebhook: LoopbackConversionWebhook | undefined;
  if (!opts.nodes) {
    try {
      conversionWebhook = await startLoopbackConversionWebhook();
    } catch (err) {
      releaseDirectory(stateDir, pidFile);
      throw err;
    }
  }
  const hubCrdSet = hubCrds({ addonConversionWebhook: conversionWebhook?.webhook });
  const crdsFor = (name: string) => (hubNames.includes(name) ? hubCrdSet : managedCrds());
  let nodeClusters: NodeClusters | undefined;
  let results: Array<PromiseSettledResult<ControlPlane>>;
  if (opts.nodes) {
    progress(
      `starting ${names.length} control planes (${names.join(', ')}) with the OCM CRDs, a real node each, squid, and the tether image on every node…`,
    );
    try {
      nodeClusters = await startNodeClusters({
        names,
        hubs: hubNames.length,
        baseDir: stateDir,
        binaries,
        crdsFor,
        ...(opts.hostedOn
          ? {
              hostedOn: Object.fromEntries(
                Object.entries(opts.hostedOn).map(([hosted, on]) => [`${prefix}${hosted}`, `${prefix}${on}`]),
              ),
            }
          : {}),
        progress,
        signal,
      });
      results = nodeClusters.controlPlanes.map((value) => ({ status: 'fulfilled', value }));
    } catch (err) {
      // startNodeClusters removed everything it had started
      await conversionWebhook?.server.close();
      releaseDirectory(stateDir, pidFile);
      throw err;
    }
  } else {
    progress(`starting ${names.length} control planes (${names.join(', ')}) with the OCM CRDs…`);
    results = await Promise.allSettled(
      names.map((name) =>
        startControlPlane(name, {
          baseDir: stateDir,
          binaries,
          crds: crdsFor(name),
          hubAdmission: name === hubName,
          signal,
        }),
      ),
    );
  }
  const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const written: string[] = [];
  let tunnel: TunnelStack | undefined;
  let gatewayKubeconfigs: Record<string, string> | undefined;
  const failureHandlers: Array<(d: string) => void> = [];
  let supervisor: Supervisor | undefined;
  const stop = async (): Promise<void> => {
    supervisor?.stop();
    await tunnel?.stop();
    // nodes before their control planes, then the networks (node-environment.ts)
    if (nodeClusters) await nodeClusters.stop();
    else await Promise.all(started.map((cp) => cp.stop()));
    await conversionWebhook?.server.close();
    for (const f of written) rmSync(f, { force: true });
    releaseDirectory(stateDir, pidFile);
  };
  const failure = results.find((r) => r.status === 'rejected');
  if (failure || signal?.aborted) {
    await stop();
    signal?.throwIfAborted();
    throw (failure as PromiseRejectedResult).reason;
  }
  try {
    const [hub, ...rest] = started as [ControlPlane, ...ControlPlane[]];
    const hub2 = hubNames.length > 1 ? rest[0] : undefined;
    const clusters = rest.slice(hubNames.length - 1);
    for (const cp of started) {
      const target = join(dir, `${cp.name}.kubeconfig`);
      copyFileSync(cp.kubeconfigPath, target);
      written.push(target);
    }
    if (!opts.nodes && opts.tunnel !== false) {
      progress(
        opts.mode === 'full'
          ? 'starting squid, the proxy-server, `tether hub`, and a `tether agent` per cluster that joins through squid…'
          : 'starting squid, the proxy-server and a proxy-agent per cluster (agents dial out through squid)…',
      );
      tunnel = await startTunnelStack({ dir: stateDir, hub, clusters, mode: opts.mode ?? 'tunnel', signal });
      if (opts.mode === 'full') {
        progress('starting the gateway and a tether-gateway ManagedServiceAccount per cluster…');
        const gw = await startGatewayStack({
          dir: join(stateDir, 'tunnel'),
          kubeconfigDir: dir,
          hub,
          clusters,
          tunnel,
          processes: tunnel.processes,
          timeoutMs: 90_000,
          signal,
        });
        gatewayKubeconfigs = gw.kubeconfigs;
        written.push(...Object.values(gw.kubeconfigs));
      }
      for (const p of tunnel.processes) {
        p.onUnexpectedExit((desc) => {
          for (const h of failureHandlers) h(`${desc}; last log lines:\n${p.tail(10)}`);
        });
      }
    }
    const processes = (): SupervisedProcess[] => [
      ...started.flatMap((cp) => cp.processes),
      ...(nodeClusters ? nodeClusters.processes() : []),
      ...(tunnel ? [tunnel.squidProcess, ...tunnel.processes] : []),
    ];
    return {
      dir,
      hub,
      clusters,
      tunnel,
      nodes: nodeClusters?.nodes,
      squid: nodeClusters?.squid,
      image: nodeClusters?.image,
      hubApiserverUrlForNodes: nodeClusters?.hubApiserverUrlForNodes,
      ...(hub2 ? { hub2, hub2ApiserverUrlForNodes: nodeClusters?.hubApiserverUrlsForNodes[hub2.name] } : {}),
      gatewayKubeconfigs,
      stop,
      onFailure: (h) => {
        failureHandlers.push(h);
        for (const cp of started) cp.onFailure(h);
        nodeClusters?.onFailure(h);
      },
      supervise: (supervisorOpts) => {
        if (supervisor) throw new Error('internal: supervise() called twice');
        supervisor = new Supervisor(supervisorOpts);
        for (const p of processes()) supervisor.watch(p);
      },
      processes,
      pids: () => processes().flatMap((p) => (p.pid && p.running ? [p.pid] : [])),
    };
  } catch (err) {
    await stop();
    // an abort surfaces as itself, not as whichever wait it happened to interrupt
    signal?.throwIfAborted();
    throw err;
  }
}
