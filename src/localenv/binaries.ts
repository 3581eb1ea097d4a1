// Finds or builds the Kubernetes binaries: the control plane's (etcd, kube-apiserver,
// kube-controller-manager) and, only when real nodes are asked for, the node's (kubelet,
// kube-scheduler, kube-proxy; hack/node, a module of its own so the control-plane build is not
// invalidated by it). Order for each binary: envtest's TEST_ASSET_<NAME>, then
// $KUBEBUILDER_ASSETS/<name>, then our cache (~/.cache/tether/kube/<version>/), and only then a build
// from the Go wrapper modules in hack/ (pinned versions; see hack/gen-modules.sh). Builds print
// progress, write into a temp dir and move finished binaries into place, and take a lock so that two
// processes (tests and `tether up`) never build the same thing twice at once.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tetherCacheBase } from '../cache-dir.ts';
import { TetherError } from '../errors.ts';
import { withBuildLock } from './build-lock.ts';

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
}

/** What a real node (and the scheduler of its control plane) runs besides containerd. */
export interface NodeBinaries {
  kubelet: string;
  kubeScheduler: string;
  kubeProxy: string;
}

type NodeBinaryName = 'kubelet' | 'kube-scheduler' | 'kube-proxy';
type BinaryName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | NodeBinaryName;

const NODE_BINARIES: readonly NodeBinaryName[] = ['kubelet', 'kube-scheduler', 'kube-proxy'];

const envOverride: Record<BinaryName, string> = {
  etcd: 'TEST_ASSET_ETCD',
  'kube-apiserver': 'TEST_ASSET_KUBE_APISERVER',
  'kube-controller-manager': 'TEST_ASSET_KUBE_CONTROLLER_MANAGER',
  kubelet: 'TEST_ASSET_KUBELET',
  'kube-scheduler': 'TEST_ASSET_KUBE_SCHEDULER',
  'kube-proxy': 'TEST_ASSET_KUBE_PROXY',
};

const hackDir = fileURLToPath(new URL('../../hack/', import.meta.url));

/** The Kubernetes release the wrapper module pins (hack/kube/VERSION), e.g. v1.36.3. */
export function kubeVersion(): string {
  return readFileSync(join(hackDir, 'kube', 'VERSION'), 'utf8').trim();
}

/** The etcd release Kubernetes pins (hack/etcd/VERSION). */
export function etcdVersion(): string {
  return readFileSync(join(hackDir, 'etcd', 'VERSION'), 'utf8').trim();
}

export { tetherCacheBase };

export function cacheDir(): string {
  return join(tetherCacheBase(), 'kube', kubeVersion());
}

function isExecutableFile(path: string): boolean {
  try {
    const st = statSync(path);
    return st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

function locate(name: BinaryName): string | undefined {
  const explicit = process.env[envOverride[name]];
  if (explicit) {
    if (!isExecutableFile(explicit)) {
      throw new TetherError(
        'TETHER_BINARY_NOT_FOUND',
        `${envOverride[name]}=${explicit} is not an executable file`,
      );
    }
    return explicit;
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutableFile(join(assets, name))) return join(assets, name);
  const cached = join(cacheDir(), name);
  return isExecutableFile(cached) ? cached : undefined;
}

export type BuildProgress = (line: string) => void;

/**
 * Returns paths to all three binaries, building the missing ones (minutes on a cold machine).
 * `progress` receives human-readable status lines.
 */
export async function ensureBinaries(
  progress: BuildProgress = () => {},
  signal?: AbortSignal,
): Promise<ControlPlaneBinaries> {
  signal?.throwIfAborted();
  const missing = (['etcd', 'kube-apiserver', 'kube-controller-manager'] as const).filter((n) => !locate(n));
  if (missing.length > 0) await buildWithLock(missing, progress, signal);
  const path = (n: BinaryName): string => {
    const p = locate(n);
    if (!p) throw new TetherError('TETHER_BINARY_NOT_FOUND', `${n} is still missing after the build`);
    return p;
  };
  return {
    etcd: path('etcd'),
    kubeApiserver: path('kube-apiserver'),
    kubeControllerManager: path('kube-controller-manager'),
  };
}

/**
 * Returns paths to kubelet, kube-scheduler and kube-proxy, building the missing ones from hack/node
 * (≈ 40 s with the Go build cache warm from the control-plane build, minutes cold). Only callers that
 * start real nodes call this, so nobody else pays for the build.
 */
export async function ensureNodeBinaries(
  progress: BuildProgress = () => {},
  signal?: AbortSignal,
): Promise<NodeBinaries> {
  signal?.throwIfAborted();
  const missing = NODE_BINARIES.filter((n) => !locate(n));
  if (missing.length > 0) await buildWithLock(missing, progress, signal);
  const path = (n: NodeBinaryName): string => {
    const p = locate(n);
    if (!p) throw new TetherError('TETHER_BINARY_NOT_FOUND', `${n} is still missing after the build`);
    return p;
  };
  return { kubelet: path('kubelet'), kubeScheduler: path('kube-scheduler'), kubeProxy: path('kube-proxy') };
}

async function buildWithLock(
  names: BinaryName[],
  progress: BuildProgress,
  signal: AbortSignal | undefined,
): Promise<void> {
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true });
  const lockOptions = {
    what: 'the Kubernetes binaries',
    waitMs: 90 * 60_000,
    progress,
    signal,
    noteEveryMs: 30_000,
  };
  await withBuildLock(join(dir, '.build.lock'), lockOptions, async () => {
    const stillMissing = names.filter((n) => !locate(n));
    if (stillMissing.length > 0) await build(stillMissing, progress, signal);
  });
}

function versionLdflags(version: string): string {
  const m = /^v(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m)
    throw new TetherError(
      'TETHER_BINARY_BUILD_FAILED',
      `hack/kube/VERSION holds an unexpected version ${version}`,
    );
  const buildDate = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const fields = {
    gitVersion: version,
    gitMajor: m[1],
    gitMinor: m[2],
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate,
  };
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    for (const [k, v] of Object.entries(fields)) flags.push(`-X ${pkg}.${k}=${v}`);
  }
  return flags.join(' ');
}

async function build(names: BinaryName[], progress: BuildProgress, signal?: AbortSignal): Promise<void> {
  const dir = cacheDir();
  const tmp = join(dir, `.build-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    if (names.includes('etcd')) {
      await goBuild(
        'etcd',
        join(hackDir, 'etcd'),
        ['-ldflags', '-s -w', '-o', join(tmp, 'etcd'), 'go.etcd.io/etcd/server/v3'],
        progress,
        signal,
      );
    }
    const nodeTools = names.filter((n) => (NODE_BINARIES as readonly string[]).includes(n));
    if (nodeTools.length > 0) {
      await goBuild(
        nodeTools.join(' + '),
        join(hackDir, 'node'),
        [
          '-ldflags',
          versionLdflags(kubeVersion()),
          '-o',
          `${tmp}/`,
          ...nodeTools.map((n) => `k8s.io/kubernetes/cmd/${n}`),
        ],
        progress,
        signal,
      );
    }
    const kube = names.filter((n) => n !== 'etcd' && !nodeTools.includes(n));
    if (kube.length > 0) {
      const pkgs = kube.map((n) => `k8s.io/kubernetes/cmd/${n}`);
      await goBuild(
        kube.join(' + '),
        join(hackDir, 'kube'),
        ['-ldflags', versionLdflags(kubeVersion()), '-o', `${tmp}/`, ...pkgs],
        progress,
        signal,
      );
    }
    for (const n of names) renameSync(join(tmp, n), join(dir, n));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** `go` from PATH, else the usual install location (the Debian image keeps it in /usr/local/go). */
export function goCommand(): string {
  const onPath = (process.env.PATH ?? '').split(':').some((d) => d && isExecutableFile(join(d, 'go')));
  if (onPath) return 'go';
  return isExecutableFile('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go';
}

function goBuild(
  what: string,
  moduleDir: string,
  args: string[],
  progress: BuildProgress,
  signal?: AbortSignal,
): Promise<void> {
  signal?.throwIfAborted();
  const started = Date.now();
  progress(`building ${what} from Go modules in ${moduleDir} (first run only; several minutes on 2 cores)…`);
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(goCommand(), ['build', '-v', '-trimpath', ...args], {
        cwd: moduleDir,
        env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      reject(new TetherError('TETHER_BINARY_BUILD_FAILED', `cannot run go: ${String(err)}`));
      return;
    }
    let packages = 0;
    const tail: string[] = [];
    const onData = (chunk: Buffer): void => {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue;
        if (/^[\w.\-/]+$/.test(line)) packages++;
        else {
          tail.push(line);
          if (tail.length > 30) tail.shift();
        }
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    const ticker = setInterval(() => {
      const secs = Math.round((Date.now() - started) / 1000);
      progress(`building ${what}: ${packages} packages compiled, ${secs}s`);
    }, 20_000);
    // the compile steps go already started finish on their own within seconds
    const onAbort = (): void => {
      child.kill('SIGKILL');
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      clearInterval(ticker);
      signal?.removeEventListener('abort', onAbort);
      reject(
        new TetherError(
          'TETHER_BINARY_BUILD_FAILED',
          `cannot run 'go' (${err.message}). Install Go >= 1.26, or point KUBEBUILDER_ASSETS at existing binaries.`,
        ),
      );
    });
    child.on('exit', (code, exitSignal) => {
      clearInterval(ticker);
      signal?.removeEventListener('abort', onAbort);
      const secs = Math.round((Date.now() - started) / 1000);
      if (signal?.aborted) {
        reject(signal.reason);
      } else if (code === 0) {
        progress(`built ${what} in ${secs}s (${packages} packages)`);
        resolve();
      } else {
        reject(
          new TetherError(
            'TETHER_BINARY_BUILD_FAILED',
            `go build of ${what} failed (${exitSignal ?? `exit ${code}`}) in ${moduleDir}:\n${tail.join('\n')}`,
          ),
        );
      }
    });
  });
}

export function binariesPresent(): boolean {
  return existsSync(join(cacheDir(), 'kube-apiserver'));
}
