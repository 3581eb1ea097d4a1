// The helm v3 CLI, built once from the Go module proxy (hack/helm pins helm.sh/helm/v3; no prebuilt
// download) into ~/.cache/tether/helm/<version>/helm, for the chart tests and anyone who wants the
// same helm the charts are tested with. Built lazily: only callers of ensureHelm() pay for it
// (≈ 2 min on 2 cores with a cold Go build cache, seconds warm). $TETHER_HELM names an existing
// helm instead. A lock directory keeps two processes from building it at once.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TetherError } from '../errors.ts';
import { type BuildProgress, goCommand, tetherCacheBase } from './binaries.ts';
import { withBuildLock } from './build-lock.ts';

const helmModuleDir = fileURLToPath(new URL('../../hack/helm/', import.meta.url));
/** a cold build compiles ≈ 900 packages (client-go, oras, …) */
const BUILD_TIMEOUT_MS = 20 * 60_000;
const LOCK_WAIT_MS = 30 * 60_000;

/** The helm release hack/helm pins, e.g. v3.22.0. */
export function helmVersion(): string {
  return readFileSync(join(helmModuleDir, 'VERSION'), 'utf8').trim();
}

function isExecutableFile(path: string): boolean {
  try {
    const st = statSync(path);
    return st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** The Kubernetes minor the pinned client-go belongs to (v0.37.x → 1.37): helm's default kube version. */
function kubeMinorOfClientGo(): string {
  const m = /^\s*k8s\.io\/client-go v0\.(\d+)\./m.exec(readFileSync(join(helmModuleDir, 'go.mod'), 'utf8'));
  if (!m?.[1])
    throw new TetherError('TETHER_BINARY_BUILD_FAILED', 'hack/helm/go.mod requires no k8s.io/client-go');
  return m[1];
}

function ldflags(version: string): string {
  const minor = kubeMinorOfClientGo();
  const v = 'helm.sh/helm/v3/internal/version';
  // what helm's Makefile sets: the version `helm version` prints, and the Kubernetes version
  // `helm template` / `helm lint` assume without a cluster
  return [
    '-s',
    '-w',
    `-X ${v}.version=${version}`,
    `-X ${v}.gitTreeState=clean`,
    ...['pkg/lint/rules', 'pkg/chartutil'].flatMap((p) => [
      `-X helm.sh/helm/v3/${p}.k8sVersionMajor=1`,
      `-X helm.sh/helm/v3/${p}.k8sVersionMinor=${minor}`,
    ]),
  ].join(' ');
}

/** Returns the path of the pinned helm, building it from hack/helm on first use. */
export async function ensureHelm(progress: BuildProgress = () => {}): Promise<string> {
  const explicit = process.env.TETHER_HELM;
  if (explicit) {
    if (!isExecutableFile(explicit))
      throw new TetherError('TETHER_BINARY_NOT_FOUND', `TETHER_HELM=${explicit} is not an executable file`);
    return explicit;
  }
  const version = helmVersion();
  const dir = join(tetherCacheBase(), 'helm', version);
  const bin = join(dir, 'helm');
  if (isExecutableFile(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  return withBuildLock(
    join(dir, '.build.lock'),
    { what: 'helm', waitMs: LOCK_WAIT_MS, progress },
    async () => {
      if (isExecutableFile(bin)) return bin;
      const tmp = `${bin}.${process.pid}`;
      const started = Date.now();
      progress(`building helm ${version} from Go modules in ${helmModuleDir} (first run only)…`);
      await new Promise<void>((resolve, reject) => {
        execFile(
          goCommand(),
          ['build', '-trimpath', '-ldflags', ldflags(version), '-o', tmp, 'helm.sh/helm/v3/cmd/helm'],
          {
            cwd: helmModuleDir,
            env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' },
            timeout: BUILD_TIMEOUT_MS,
            maxBuffer: 16 * 1024 * 1024,
          },
          (err, _stdout, stderr) => {
            if (err) {
              rmSync(tmp, { force: true });
              reject(
                new TetherError(
                  'TETHER_BINARY_BUILD_FAILED',
                  `go build of helm ${version} failed in ${helmModuleDir}: ${stderr.trim().split('\n').slice(-20).join('\n') || err.message}`,
                ),
              );
            } else resolve();
          },
        );
      });
      renameSync(tmp, bin);
      progress(`built helm ${version} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
      return bin;
    },
  );
}

export interface HelmResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs `helm args…` with its cache/config/data under `home` (so tests never touch the user's helm
 * setup); rejects with helm's stderr when it fails.
 */
export function runHelm(
  helm: string,
  args: string[],
  opts: { home: string; kubeconfig?: string; timeoutMs?: number },
): Promise<HelmResult> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: opts.home,
    HELM_CACHE_HOME: join(opts.home, 'cache'),
    HELM_CONFIG_HOME: join(opts.home, 'config'),
    HELM_DATA_HOME: join(opts.home, 'data'),
    ...(opts.kubeconfig ? { KUBECONFIG: opts.kubeconfig } : {}),
  };
  return new Promise((resolve, reject) => {
    execFile(
      helm,
      args,
      { env, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`helm ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}
