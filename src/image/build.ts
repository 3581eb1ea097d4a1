// Builds the tether container image: two layers on nothing (`from scratch`), written as an
// oci-archive tagged localhost/tether:<package.json version>, ready for `ctr -n k8s.io images
// import`. Layer 1 is the base (Node runtime, its libraries, users, /tmp): the same runtime gives
// the same layer, so a node keeps it across tether versions; layer 2 is the app (/app: sources,
// production packages and the production bundle in /app/dist/bin, src/image/bundle.ts). Both are
// written with a fixed timestamp (buildTimestamp), so the same sources give the same image digest.
// The image runs the bundle, `node /app/dist/bin/tether.js`, as uid 65532: about a third less
// memory per process than the sources (README, Performance); the sources stay for the add-on
// examples, which run from /app/examples.
// Storage is a temp dir removed afterwards (buildah.ts).
// glibc's allocator is tuned in the image's environment (IMAGE_MALLOC_ENV): measured on a real node,
// the idle klusterlet agent keeps 121–129 MB RSS with glibc's defaults and 104–107 MB with them.

import { mkdirSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '../errors.ts';
import { tetherNodeFlags } from '../node-flags.ts';
import { copyApp } from './app-files.ts';
import { IMAGE_HOME, IMAGE_UID, writeBaseFiles } from './base-files.ts';
import { assertBuildahUsable, isolatedBuildah } from './buildah.ts';
import { buildBundle } from './bundle.ts';
import { findNodeRuntime, IMAGE_NODE_PATH } from './node-runtime.ts';

/** The project this module belongs to: what goes into the image. */
export const PROJECT_DIR = fileURLToPath(new URL('../..', import.meta.url));

/** Where the app sits in the image. */
export const IMAGE_APP_DIR = '/app';

/** What the image runs: tether on the image's Node with tether's V8 flags, its experimental-feature notice off. */
export const IMAGE_ENTRYPOINT = [
  IMAGE_NODE_PATH,
  '--disable-warning=ExperimentalWarning',
  ...tetherNodeFlags,
  `${IMAGE_APP_DIR}/dist/bin/tether.js`,
];

export interface ImageBuildOptions {
  /** the archive to write (default .tether/images/tether-<version>.tar in the project) */
  output?: string;
  /** the image name (default localhost/tether:<version>) */
  reference?: string;
  /** progress lines (each step and its time) */
  onProgress?: (line: string) => void;
  /** stops the build (a running buildah is ended); its temp storage is removed, nothing is written */
  signal?: AbortSignal;
  /** the project whose files go in (default: this one) */
  projectDir?: string;
}

export interface ImageBuildResult {
  /** the oci-archive written */
  archive: string;
  reference: string;
  version: string;
  nodeVersion: string;
  archiveBytes: number;
  /** sum of the sizes of the files in the image (what a node's snapshotter holds unpacked) */
  unpackedBytes: number;
  durationMs: number;
}

export function projectVersion(projectDir = PROJECT_DIR): Promise<string> {
  return readFile(join(projectDir, 'package.json'), 'utf8').then(
    (text) => (JSON.parse(text) as { version: string }).version,
  );
}

export function defaultImageArchive(version: string, projectDir = PROJECT_DIR): string {
  return join(projectDir, '.tether', 'images', `tether-${version}.tar`);
}

/** Builds the image from the project's files; the archive appears only when the build succeeded. */
export async function buildImage(opts: ImageBuildOptions = {}): Promise<ImageBuildResult> {
  const started = performance.now();
  const progress = opts.onProgress ?? (() => {});
  let stepStarted = started;
  const step = (what: string): void => {
    const now = performance.now();
    progress(`${what} (${((now - stepStarted) / 1000).toFixed(1)} s)`);
    stepStarted = now;
  };
  await assertBuildahUsable();
  const projectDir = opts.projectDir ?? PROJECT_DIR;
  const version = await projectVersion(projectDir);
  const reference = opts.reference ?? `localhost/tether:${version}`;
  const archive = resolve(opts.output ?? defaultImageArchive(version, projectDir));
  const runtime = await findNodeRuntime(projectDir);
  const timestamp = buildTimestamp();
  const workDir = await mkdtemp(join(tmpdir(), 'tether-image-'));
  const partial = `${archive}.partial-${process.pid}`;
  try {
    const buildah = isolatedBuildah(workDir, opts.signal);
    const base = await buildah.run(['from', '--name', 'tether-base', 'scratch']);
    const baseRoot = await buildah.run(['mount', base]);
    opts.signal?.throwIfAborted();
    await writeBaseFiles(baseRoot, runtime);
    let unpackedBytes = await treeBytes(baseRoot);
    await buildah.run(['umount', base]);
    await buildah.run([
      'config',
      '--created-by',
      `tether base: node ${runtime.version} and its shared libraries`,
      base,
    ]);
    await buildah.run([
      'commit',
      '--quiet',
      '--format',
      'oci',
      '--timestamp',
      timestamp,
      base,
      'localhost/tether-base',
    ]);
    step(`base layer: node ${runtime.version} + ${runtime.libraries.length} shared libraries`);

    const app = await buildah.run(['from', '--pull=never', '--name', 'tether', 'localhost/tether-base']);
    const appRoot = await buildah.run(['mount', app]);
    opts.signal?.throwIfAborted();
    await copyApp(projectDir, join(appRoot, IMAGE_APP_DIR));
    await buildBundle(join(appRoot, IMAGE_APP_DIR, 'dist', 'bin'), projectDir);
    unpackedBytes += await treeBytes(join(appRoot, IMAGE_APP_DIR));
    await buildah.run(['umount', app]);
    await buildah.run([
      'config',
      '--entrypoint',
      JSON.stringify(IMAGE_ENTRYPOINT),
      '--cmd',
      '--help',
      '--user',
      `${IMAGE_UID}:${IMAGE_UID}`,
      '--workingdir',
      IMAGE_HOME,
      '--env',
      'PATH=/usr/local/bin',
      '--env',
      `HOME=${IMAGE_HOME}`,
      '--env',
      'NODE_ENV=production',
      ...IMAGE_MALLOC_ENV.flatMap((e) => ['--env', e]),
      '--stop-signal',
      'SIGTERM',
      '--label',
      'org.opencontainers.image.title=tether',
      '--label',
      `org.opencontainers.image.version=${version}`,
      '--label',
      'org.opencontainers.image.licenses=Apache-2.0',
      '--created-by',
      'tether app: bin, src, production node_modules and the production bundle (dist/bin)',
      app,
    ]);
    await buildah.run(['commit', '--quiet', '--format', 'oci', '--timestamp', timestamp, app, reference]);
    step('app layer: sources, production packages and the bundle');

    mkdirSync(dirname(archive), { recursive: true });
    await rm(partial, { force: true });
    await buildah.run(['push', '--quiet', reference, `oci-archive:${partial}:${reference}`]);
    opts.signal?.throwIfAborted();
    await rename(partial, archive);
    step(`archive written: ${archive}`);
    return {
      archive,
      reference,
      version,
      nodeVersion: runtime.version,
      archiveBytes: (await stat(archive)).size,
      unpackedBytes,
      durationMs: performance.now() - started,
    };
  } finally {
    await rm(partial, { force: true });
    await rm(workDir, { recursive: true, force: true });
  }
}

/**
 * glibc malloc settings every tether process in the image starts with. Most of an idle process's
 * memory outside V8's heap is malloc's (TLS and HTTP/2 buffers, OpenSSL): by default glibc keeps
 * freed memory at the top of its heaps up to a threshold it raises as a process frees large blocks,
 * and gives each thread that allocates an arena of its own. A 64 KiB trim threshold returns freed
 * memory to the system (measured alone: agent 121–129 → 106–107 MB); two arenas at most keep V8's
 * and libuv's threads from holding arenas each (a node with more cores runs more of them).
 */
export const IMAGE_MALLOC_ENV = ['MALLOC_ARENA_MAX=2', 'MALLOC_TRIM_THRESHOLD_=65536'] as const;

/**
 * The time written into the image (history, config `created`, every file's mtime): the
 * reproducible-builds SOURCE_DATE_EPOCH if set, else 0 (1970, as distroless and ko do), so the same
 * sources give the same image digest and a node that has a layer never takes it again.
 */
export function buildTimestamp(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.SOURCE_DATE_EPOCH;
  if (given === undefined || given === '') return '0';
  if (!/^\d{1,12}$/.test(given))
    throw new InvalidArgumentError(`SOURCE_DATE_EPOCH must be seconds since 1970 (digits), got "${given}"`);
  return given;
}

/** Bytes in the regular files under `dir` (symlinks and directories not counted). */
async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await lstat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}
