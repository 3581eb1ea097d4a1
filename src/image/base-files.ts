// Writes the image's base layer into a root directory: the Node runtime (symbols stripped: 126 →
// 108 MB) and its shared libraries at the paths the binary asks for, the users (root and the
// non-root `tether`, uid/gid 65532, the one the image runs as), an nsswitch.conf that reads
// /etc/hosts before DNS (glibc's default without the file is the other way round), a world-writable
// sticky /tmp and the user's home. Nothing else: no shell, no package manager, no CA bundle (Node
// carries Mozilla's roots; tether's own connections are verified against the CAs it is given).
import { execFile } from 'node:child_process';
import { chmod, chown, copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { TetherError } from '../errors.ts';
import { IMAGE_NODE_PATH, type NodeRuntime } from './node-runtime.ts';

/** The image's user. 65532 is the "nonroot" uid distroless images use: outside any host range. */
export const IMAGE_UID = 65532;
export const IMAGE_USER = 'tether';
export const IMAGE_HOME = `/home/${IMAGE_USER}`;

/** Fills `rootDir` with the base files. Runs as root (sets owners). */
export async function writeBaseFiles(rootDir: string, runtime: NodeRuntime): Promise<void> {
  const at = (p: string): string => join(rootDir, p);
  await mkdir(dirname(at(IMAGE_NODE_PATH)), { recursive: true });
  await stripInto(runtime.binary, at(IMAGE_NODE_PATH));
  for (const lib of runtime.libraries) {
    await mkdir(dirname(at(lib.path)), { recursive: true });
    await copyFile(lib.source, at(lib.path));
    await chmod(at(lib.path), 0o755);
  }
  await mkdir(at('etc'), { recursive: true });
  await writeFile(
    at('etc/passwd'),
    `root:x:0:0:root:/root:/sbin/nologin\n${IMAGE_USER}:x:${IMAGE_UID}:${IMAGE_UID}:${IMAGE_USER}:${IMAGE_HOME}:/sbin/nologin\n`,
  );
  await writeFile(at('etc/group'), `root:x:0:\n${IMAGE_USER}:x:${IMAGE_UID}:\n`);
  await writeFile(at('etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  await mkdir(at('tmp'), { recursive: true });
  await chmod(at('tmp'), 0o1777);
  await mkdir(at(IMAGE_HOME), { recursive: true });
  await chown(at(IMAGE_HOME), IMAGE_UID, IMAGE_UID);
  await chmod(at(IMAGE_HOME), 0o700);
}

function stripInto(source: string, dest: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('strip', ['--strip-all', '-o', dest, source], { timeout: 120_000 }, (err) => {
      if (!err) return resolve();
      reject(
        (err as NodeJS.ErrnoException).code === 'ENOENT'
          ? new TetherError(
              'TETHER_BINARY_NOT_FOUND',
              'strip is not installed: run `bash hack/deps.sh` (or `apt-get install --no-install-recommends binutils`)',
            )
          : new TetherError('TETHER_PROCESS_FAILED', `strip ${source} failed: ${err.message}`),
      );
    });
  });
}
