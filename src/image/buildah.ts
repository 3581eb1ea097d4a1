// Runs buildah for the image build with everything it would otherwise keep in system places
// redirected into one work directory: image storage (vfs driver, --root/--runroot), its
// containers.conf and storage.conf, the CNI lock buildah takes on `from`, and the blob-info cache
// (which containers/image keeps in /var/lib/containers/cache for root, whatever --root says).
// Removing the work directory removes every trace of the build. No daemon, no registry, no network.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TetherError } from '../errors.ts';

/** One buildah call may not take longer than this (a commit of the ~150 MB rootfs takes a few s). */
const BUILDAH_CALL_TIMEOUT_MS = 300_000;
/** stdout/stderr kept from one buildah call */
const BUILDAH_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

export interface BuildahRunner {
  /** Runs `buildah <global flags> <args>` and resolves with its trimmed stdout. */
  run(args: string[]): Promise<string>;
}

/** Fails with what to do when buildah cannot run here (not installed, not root). */
export async function assertBuildahUsable(): Promise<void> {
  if (process.getuid?.() !== 0)
    throw new TetherError(
      'TETHER_BINARY_NOT_FOUND',
      'building the image needs root: buildah runs with vfs storage and chroot isolation and sets file ' +
        'owners in the image (uid 65532). Run `npm run image` / `tether image build` as root (or with sudo)',
    );
  try {
    await execFileText('buildah', ['--version'], {});
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new TetherError(
        'TETHER_BINARY_NOT_FOUND',
        'buildah is not installed: run `bash hack/deps.sh` (or `apt-get install --no-install-recommends buildah`)',
      );
    throw err;
  }
}

/** A buildah whose storage and configuration live in `workDir` only; `signal` ends a running call. */
export function isolatedBuildah(workDir: string, signal?: AbortSignal): BuildahRunner {
  const root = join(workDir, 'storage');
  const runroot = join(workDir, 'run');
  const cniDir = join(workDir, 'cni');
  const dataHome = join(workDir, 'data');
  for (const d of [root, runroot, cniDir, dataHome]) mkdirSync(d, { recursive: true });
  const containersConf = join(workDir, 'containers.conf');
  writeFileSync(containersConf, `[network]\nnetwork_config_dir = ${JSON.stringify(cniDir)}\n`);
  const storageConf = join(workDir, 'storage.conf');
  writeFileSync(
    storageConf,
    `[storage]\ndriver = "vfs"\ngraphroot = ${JSON.stringify(root)}\nrunroot = ${JSON.stringify(runroot)}\n`,
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: workDir,
    CONTAINERS_CONF: containersConf,
    CONTAINERS_STORAGE_CONF: storageConf,
    // containers/image puts root's blob-info cache in /var/lib/containers/cache; for a non-root uid
    // it uses $XDG_DATA_HOME/containers/cache. This variable is how buildah itself tells its
    // re-executed children their uid; set here, only the cache location follows it (storage paths
    // and isolation are given explicitly below).
    _CONTAINERS_ROOTLESS_UID: '65532',
    XDG_DATA_HOME: dataHome,
    XDG_CONFIG_HOME: join(workDir, 'config'),
    XDG_RUNTIME_DIR: runroot,
  };
  const global = ['--root', root, '--runroot', runroot, '--storage-driver', 'vfs'];
  return {
    async run(args) {
      signal?.throwIfAborted();
      try {
        return (await execFileText('buildah', [...global, ...args], env, signal)).trim();
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const e = err as Error & { stderr?: string; code?: unknown; killed?: boolean };
        const why = e.killed
          ? `timed out after ${BUILDAH_CALL_TIMEOUT_MS / 1000} s`
          : (e.stderr?.trim() ?? e.message).split('\n').slice(-15).join('\n');
        throw new TetherError('TETHER_PROCESS_FAILED', `buildah ${args[0] ?? ''} failed: ${why}`, {
          cause: err,
        });
      }
    },
  };
}

function execFileText(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      {
        env: Object.keys(env).length > 0 ? env : process.env,
        timeout: BUILDAH_CALL_TIMEOUT_MS,
        maxBuffer: BUILDAH_MAX_OUTPUT_BYTES,
        encoding: 'utf8',
        signal,
      },
      (err, stdout, stderr) => {
        if (err) reject(Object.assign(err, { stderr }));
        else resolve(stdout);
      },
    );
  });
}
