// The built image kept under ~/.cache/tether/images/ (or $TETHER_CACHE_DIR/images), named by a
// digest of everything that goes into it: the runtime binary and libraries, every /app file (path,
// mode, content; the build code in src/image is one of them), the version and the timestamp. The
// build is reproducible, so an archive with the same inputs digest is the image a build would
// produce, and `tether up` / tests take it instead of spending ~10 s. Two processes that miss at
// once both build and rename the same bytes into place: no lock is needed.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { tetherCacheBase } from '../cache-dir.ts';
import { listAppFiles } from './app-files.ts';
import { buildImage, buildTimestamp, PROJECT_DIR, projectVersion } from './build.ts';
import { bundlerVersion } from './bundle.ts';
import { findNodeRuntime } from './node-runtime.ts';

/** Bump when the build changes in a way the inputs below do not show. */
const CACHE_FORMAT = 3;
/** Archives kept in the cache (newest first); older ones are removed after a build. */
const KEEP_ARCHIVES = 3;

export interface CachedImage {
  archive: string;
  reference: string;
  inputsDigest: string;
  /** false when the cached archive was taken as is */
  built: boolean;
}

/** Where cached image archives live. */
export function imageCacheDir(): string {
  return join(tetherCacheBase(), 'images');
}

/** sha256 (hex) over everything the image is built from. */
export async function imageInputsDigest(projectDir = PROJECT_DIR): Promise<string> {
  const hash = createHash('sha256');
  const runtime = await findNodeRuntime(projectDir);
  const version = await projectVersion(projectDir);
  hash.update(
    JSON.stringify({
      format: CACHE_FORMAT,
      version,
      timestamp: buildTimestamp(),
      node: runtime.version,
      bundler: bundlerVersion,
      libraries: runtime.libraries.map((l) => l.path),
    }),
  );
  for (const source of [runtime.binary, ...runtime.libraries.map((l) => l.source)])
    await hashFile(hash, source);
  const app = await listAppFiles(projectDir);
  for (const d of app.dirs) hash.update(`\0d ${d}`);
  for (const l of app.links) hash.update(`\0l ${l} ${await readlink(join(projectDir, l))}`);
  for (const f of app.files) {
    const st = await stat(join(projectDir, f));
    hash.update(`\0f ${f} ${(st.mode & 0o777).toString(8)} ${st.size}\0`);
    await hashFile(hash, join(projectDir, f));
  }
  return hash.digest('hex');
}

/** The cached image for the current sources, built first if there is none. */
export async function ensureImage(
  opts: { onProgress?: (line: string) => void; signal?: AbortSignal; projectDir?: string } = {},
): Promise<CachedImage> {
  const projectDir = opts.projectDir ?? PROJECT_DIR;
  const version = await projectVersion(projectDir);
  const reference = `localhost/tether:${version}`;
  const inputsDigest = await imageInputsDigest(projectDir);
  const archive = join(imageCacheDir(), `tether-${version}-${inputsDigest.slice(0, 16)}.tar`);
  if (await isFile(archive)) return { archive, reference, inputsDigest, built: false };
  // A file edited during the build can land in an archive named after the digest from before the
  // edit; the next call sees the new digest and builds again (only undoing the edit would then
  // take that archive).
  await buildImage({ ...opts, projectDir, output: archive, reference });
  await pruneCache();
  return { archive, reference, inputsDigest, built: true };
}

async function pruneCache(): Promise<void> {
  const dir = imageCacheDir();
  const archives = await Promise.all(
    (await readdir(dir))
      .filter((n) => /^tether-.*\.tar$/.test(n))
      .map(async (n) => ({ path: join(dir, n), mtimeMs: (await lstat(join(dir, n))).mtimeMs })),
  );
  archives.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const old of archives.slice(KEEP_ARCHIVES)) await rm(old.path, { force: true });
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function hashFile(hash: ReturnType<typeof createHash>, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve());
  });
}
