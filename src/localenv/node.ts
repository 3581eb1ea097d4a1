// One real node for a local control plane: containerd (+ runc, overlayfs), the kubelet and
// kube-proxy (iptables mode), all inside the node's own network namespace (node-network.ts), with
// the pause, CoreDNS and test images imported (node-images.ts), plus kube-scheduler on the host for
// the control plane and cluster DNS (node-dns.ts) as a pod on the node. The control plane must have been started with `nodeNetwork: { hostAddress }` from
// the same NodeNetwork so the kubelet can reach the apiserver and the apiserver the kubelet.
// Owns the node directory, the network namespace, the node's cgroup root (/tether-<name> in every
// hierarchy) and what node-host-state.ts finds it left on the host; stop() removes all of it.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ProcessFailedError, TetherError } from '../errors.ts';
import { issueCertificate, loadCertificateAuthority } from '../pki/index.ts';
import { pollUntil } from '../wait.ts';
import { type BuildProgress, ensureNodeBinaries, type NodeBinaries } from './binaries.ts';
import { writeKubeconfigFile } from './kubeconfig-file.ts';
import { checkNodePrerequisites, run } from './node-command.ts';
import { cniConflist, containerdConfig, kubeletConfig, type NodePaths } from './node-configs.ts';
import { deployClusterDns } from './node-dns.ts';
import {
  createCgroupRoot,
  type HostSnapshot,
  newPodNetns,
  pidsInCgroupTree,
  removeCgroupTree,
  removeHostLeftovers,
  restoreKubeletSysctls,
  saveSnapshot,
  shimSocketsOf,
  snapshotHost,
  unmountAll,
} from './node-host-state.ts';
import { ensureNodeImages, type NodeImages } from './node-images.ts';
import { type NodeNetwork, processesInNetns } from './node-network.ts';
import { SupervisedProcess } from './process.ts';
import { startScheduler } from './scheduler.ts';
import type { ControlPlaneInfo } from './types.ts';

export interface StartNodeOptions {
  /** parent directory for the node's directory (default: the OS temp dir) */
  baseDir?: string;
  binaries?: NodeBinaries;
  images?: NodeImages;
  /** deadline for containerd, the kubelet's Node Ready, the `default` ServiceAccount and cluster DNS (ms); default 90 s */
  readyTimeoutMs?: number;
  /** pods the kubelet accepts (default 30) */
  maxPods?: number;
  progress?: BuildProgress;
  keepDir?: boolean;
  signal?: AbortSignal;
}

export interface RealNode {
  /** Node object name (the control plane's name) */
  readonly name: string;
  readonly network: NodeNetwork;
  readonly dir: string;
  readonly images: NodeImages;
  /** containerd, kubelet, kube-proxy (inside the namespace) and kube-scheduler (host) */
  readonly processes: readonly SupervisedProcess[];
  /** resident memory (bytes) of each running process, by short name */
  rss(): Record<string, number>;
  /** runs a command inside the node's network namespace (curl a ClusterIP, …) */
  exec(cmd: string, args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** everything the node created is gone (processes, mounts, cgroups, namespace, veth, files) when this resolves */
  stop(): Promise<void>;
  onFailure(handler: (description: string) => void): void;
}

/** How long stop() waits for processes in the namespace to go after SIGKILL. */
const KILL_DEADLINE_MS = 15_000;

function nodePaths(dir: string): NodePaths {
  return {
    dir,
    containerdRoot: join(dir, 'containerd', 'root'),
    containerdState: join(dir, 'containerd', 'state'),
    containerdSocket: join(dir, 'containerd', 'containerd.sock'),
    runcRoot: join(dir, 'containerd', 'runc'),
    cniConfDir: join(dir, 'cni', 'net.d'),
    cniIpamDir: join(dir, 'cni', 'ipam'),
    kubeletRoot: join(dir, 'kubelet'),
    kubeletCertDir: join(dir, 'kubelet-pki'),
    podLogsDir: join(dir, 'pod-logs'),
  };
}

function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

async function runcContainers(runcRoot: string): Promise<string[]> {
  if (!existsSync(runcRoot)) return [];
  const { stdout } = await run('runc', ['--root', runcRoot, 'list', '-q']).catch(() => ({ stdout: '' }));
  return stdout.split('\n').filter(Boolean);
}

/**
 * Starts containerd, the kubelet and kube-proxy in `network`'s namespace and kube-scheduler on the
 * host, imports the node images, and resolves once the Node is Ready, the `default`
 * ServiceAccount exists (pods can be created) and cluster DNS answers through `kube-dns`. On failure everything started is removed again.
 */
export async function startNode(
  cp: ControlPlaneInfo,
  network: NodeNetwork,
  opts: StartNodeOptions = {},
): Promise<RealNode> {
  checkNodePrerequisites();
  const signal = opts.signal;
  const progress = opts.progress ?? (() => {});
  const timeoutMs = opts.readyTimeoutMs ?? 90_000;
  const binaries = opts.binaries ?? (await ensureNodeBinaries(progress, signal));
  const images = opts.images ?? (await ensureNodeImages(progress));
  signal?.throwIfAborted();

  const name = cp.name;
  const base = opts.baseDir ?? tmpdir();
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, `tether-node-${name}-`));
  const paths = nodePaths(dir);
  const cgroupRoot = `/tether-${name}`;
  const cniNetwork = `tether-${name}`;
  const snap: HostSnapshot = snapshotHost();
  const processes: SupervisedProcess[] = [];
  const failureHandlers: Array<(d: string) => void> = [];
  let stopped = false;
  let started = false;
  // a process that dies during start-up ends every wait at once, with its own log lines
  const startFailed = new AbortController();
  const startSignal = signal ? AbortSignal.any([signal, startFailed.signal]) : startFailed.signal;

  const supervise = (p: SupervisedProcess): SupervisedProcess => {
    processes.push(p);
    p.onUnexpectedExit((desc) => {
      if (stopped) return;
      if (!started) {
        startFailed.abort(new ProcessFailedError(`${desc} (log: ${p.logFile})`, p.tail()));
        return;
      }
      for (const h of failureHandlers) h(`${name} node: ${desc}; last log lines:\n${p.tail(10)}`);
    });
    return p;
  };
  const inNetns = (procName: string, command: string, args: string[]): SupervisedProcess =>
    supervise(
      new SupervisedProcess({
        name: `${name}/${procName}`,
        command: 'nsenter',
        args: [`--net=/run/netns/${network.netns}`, '--', command, ...args],
        logFile: join(dir, `${procName}.log`),
      }),
    );
  const byName = (n: string): SupervisedProcess | undefined =>
    processes.find((p) => p.name === `${name}/${n}`);

  const stop = async (): Promise<void> => {
    stopped = true;
    for (const n of ['kube-proxy', 'kubelet', 'kube-scheduler']) await byName(n)?.stop(5000);
    // every container (pods and their sandboxes) through runc's state: containerd keeps it in
    // <Root>/<containerd namespace>
    const runcRoot = join(paths.runcRoot, 'k8s.io');
    // Every process of the node before the kills: a killed process leaves the cgroup and the
    // namespace listing at once but stays in /proc until it is reaped, so each is waited for below.
    const killed = new Set<number>([
      ...(await processesInNetns(network.netns)),
      ...pidsInCgroupTree(cgroupRoot),
    ]);
    const containerIds = await runcContainers(runcRoot);
    for (const id of containerIds) {
      await run('runc', ['--root', runcRoot, 'kill', '--all', id, 'KILL']).catch(() => {});
    }
    await byName('containerd')?.stop(5000);
    // then whatever is still in the namespace (the shims) or in the node's cgroups (pods runc
    // missed), until each is gone from /proc (reaped, not only dead)
    const shimSockets = new Set<string>();
    await pollUntil(
      async () => {
        const pids = [...(await processesInNetns(network.netns)), ...pidsInCgroupTree(cgroupRoot)];
        for (const socket of shimSocketsOf(pids)) shimSockets.add(socket);
        for (const pid of pids) {
          killed.add(pid);
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
        }
        return pids.length === 0 && [...killed].every((pid) => !existsSync(`/proc/${pid}`));
      },
      { timeoutMs: KILL_DEADLINE_MS, intervalMs: 100, description: `processes of node ${name} to exit` },
    ).catch(() => {});
    for (const id of await runcContainers(runcRoot)) {
      await run('runc', ['--root', runcRoot, 'delete', '--force', id]).catch(() => {});
    }
    const podNetns = newPodNetns(snap);
    await unmountAll([dir, ...podNetns]);
    for (const p of podNetns) rmSync(p, { force: true });
    removeCgroupTree(cgroupRoot);
    await network.remove();
    removeHostLeftovers(
      {
        nodeDir: dir,
        containerdSocket: paths.containerdSocket,
        cniNetwork,
        containerIds,
        shimSockets: [...shimSockets],
      },
      snap.createdDirs,
    );
    restoreKubeletSysctls();
    if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
  };

  try {
    saveSnapshot(dir, snap);
    for (const d of [paths.containerdRoot, paths.containerdState, paths.cniConfDir, paths.cniIpamDir]) {
      mkdirSync(d, { recursive: true });
    }
    for (const d of [paths.kubeletRoot, paths.kubeletCertDir, paths.podLogsDir])
      mkdirSync(d, { recursive: true });
    const caPem = readFileSync(cp.caCertPath, 'utf8');
    const ca = await loadCertificateAuthority(caPem, readFileSync(cp.caKeyPath, 'utf8'));
    const [kubeletClient, proxyClient] = await Promise.all([
      issueCertificate(ca, {
        commonName: `system:node:${name}`,
        organizations: ['system:nodes'],
        usage: 'client',
      }),
      issueCertificate(ca, { commonName: 'system:kube-proxy', usage: 'client' }),
    ]);
    // the node reaches the apiserver on the host end of its veth (the apiserver's SAN has it)
    const server = cp.apiserverUrl.replace('127.0.0.1', network.hostAddress);
    const kubeletKubeconfig = join(dir, 'kubelet.kubeconfig');
    writeKubeconfigFor(kubeletKubeconfig, name, server, caPem, kubeletClient);
    const proxyKubeconfig = join(dir, 'kube-proxy.kubeconfig');
    writeKubeconfigFor(proxyKubeconfig, name, server, caPem, proxyClient);
    const containerdToml = join(dir, 'containerd.toml');
    writeFileSync(containerdToml, containerdConfig(paths));
    writeFileSync(
      join(paths.cniConfDir, '10-tether.conflist'),
      cniConflist(cniNetwork, network.podCidr, paths.cniIpamDir),
    );
    const kubeletYaml = join(dir, 'kubelet.yaml');
    writeFileSync(
      kubeletYaml,
      kubeletConfig({
        paths,
        nodeAddress: network.nodeAddress,
        clientCaFile: cp.caCertPath,
        cgroupRoot,
        maxPods: opts.maxPods ?? 30,
      }),
    );
    createCgroupRoot(cgroupRoot);

    const containerd = inNetns('containerd', '/usr/bin/containerd', ['--config', containerdToml]);
    const ctr = (args: string[]): Promise<{ stdout: string }> =>
      run('ctr', ['--address', paths.containerdSocket, '--namespace', 'k8s.io', ...args], {
        timeoutMs: 120_000,
      });
    await pollUntil(
      async () => {
        if (!containerd.running) throw new ProcessFailedError(`${containerd.name} exited`, containerd.tail());
        await ctr(['version']);
        return true;
      },
      {
        timeoutMs,
        intervalMs: 100,
        description: `${containerd.name} to answer on ${paths.containerdSocket}`,
        signal: startSignal,
      },
    );
    // a respawned containerd (same config, root and state) serves again when ctr gets an answer
    containerd.readiness = () =>
      pollUntil(() => ctr(['version']).then(() => true), {
        timeoutMs,
        intervalMs: 100,
        description: `${containerd.name} to answer again`,
      }).then(() => {});
    for (const image of [images.pause, images.coredns, images.echoserver]) {
      await ctr(['images', 'import', image.archive]);
    }
    startSignal.throwIfAborted();

    await startScheduler(cp, binaries.kubeScheduler, dir, timeoutMs, startSignal).then(supervise);
    const kubelet = inNetns('kubelet', binaries.kubelet, [
      `--config=${kubeletYaml}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--hostname-override=${name}`,
      `--node-ip=${network.nodeAddress}`,
      `--root-dir=${paths.kubeletRoot}`,
      `--cert-dir=${paths.kubeletCertDir}`,
      '--v=1',
    ]);
    inNetns('kube-proxy', binaries.kubeProxy, [
      `--kubeconfig=${proxyKubeconfig}`,
      `--hostname-override=${name}`,
      '--proxy-mode=iptables',
      `--cluster-cidr=${network.podCidr}`,
      // conntrack limits and timeouts are host-wide: leave them as they are
      '--conntrack-max-per-core=0',
      '--conntrack-tcp-timeout-established=0',
      '--conntrack-tcp-timeout-close-wait=0',
      '--nodeport-addresses=primary',
      '--metrics-bind-address=127.0.0.1:10249',
      '--healthz-bind-address=127.0.0.1:10256',
      '--v=1',
    ]);

    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const nodeReady = async (): Promise<boolean> => {
      const node = await core.readNode({ name });
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    };
    // a respawned kubelet (same flags, root dir and certificates) has rejoined once it posted a
    // fresh Ready status after its start
    kubelet.readiness = () => {
      const since = kubelet.startedAt;
      return pollUntil(
        async () => {
          const node = await core.readNode({ name });
          const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
          const heartbeat = ready?.lastHeartbeatTime ? new Date(ready.lastHeartbeatTime).getTime() : 0;
          return ready?.status === 'True' && heartbeat >= since - 1000;
        },
        { timeoutMs, intervalMs: 200, description: `${kubelet.name} to post Ready again` },
      ).then(() => {});
    };
    const alive = (): void => {
      for (const p of processes) {
        if (!p.running) throw new ProcessFailedError(`${p.name} exited (log: ${p.logFile})`, p.tail());
      }
    };
    await pollUntil(
      async () => {
        alive();
        return nodeReady();
      },
      { timeoutMs, intervalMs: 200, description: `Node ${name} to be Ready`, signal: startSignal },
    ).catch((err: Error) => {
      if (err instanceof ProcessFailedError || startSignal.aborted) throw err;
      throw new ProcessFailedError(
        `Node ${name} did not become Ready: ${err.message}`,
        byName('kubelet')?.tail() ?? '',
      );
    });
    // pods are refused until the service-account controller created `default`
    await pollUntil(
      async () => {
        alive();
        await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' });
        return true;
      },
      {
        timeoutMs,
        intervalMs: 200,
        description: `ServiceAccount default/default on ${name}`,
        signal: startSignal,
      },
    );

    // pods find Services by name from their first start on
    const dnsStarted = Date.now();
    await deployClusterDns({
      kc,
      image: images.coredns.ref,
      netns: network.netns,
      timeoutMs,
      signal: startSignal,
      alive,
    });
    progress(`cluster DNS on ${name} answering in ${((Date.now() - dnsStarted) / 1000).toFixed(1)}s`);

    started = true;
    return {
      name,
      network,
      dir,
      images,
      processes,
      rss: () =>
        Object.fromEntries(
          processes.map((p) => [p.name.slice(name.length + 1), rssOf(p.running ? p.pid : undefined)]),
        ),
      exec: (cmd, args) => run('nsenter', [`--net=/run/netns/${network.netns}`, '--', cmd, ...args]),
      stop,
      onFailure: (h) => failureHandlers.push(h),
    };
  } catch (err) {
    await stop();
    if (startFailed.signal.aborted && !signal?.aborted) throw startFailed.signal.reason;
    if (err instanceof TetherError || signal?.aborted) throw err;
    throw new ProcessFailedError(`starting node ${name} failed: ${(err as Error).message}`, '');
  }
}

function writeKubeconfigFor(
  path: string,
  name: string,
  server: string,
  caPem: string,
  client: { certPem: string; keyPem: string },
): void {
  writeKubeconfigFile(path, { name, server, caPem, certPem: client.certPem, keyPem: client.keyPem });
}
