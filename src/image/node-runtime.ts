// The image's whole base: the Node runtime binary the project already brings (the npm `node`
// package, pinned in package.json) and the shared libraries it links, found with ldd on this
// machine. No distribution, no shell: glibc (2.34+ carries the NSS files/dns modules inside libc),
// libstdc++, libgcc_s and the dynamic loader are all a pure-JS app on Node needs.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { TetherError } from '../errors.ts';

/** Where the runtime sits in the image. */
export const IMAGE_NODE_PATH = '/usr/local/bin/node';

export interface SharedLibrary {
  /** path the binary asks for (the image gets the file at this path) */
  path: string;
  /** the file on this machine that path resolves to */
  source: string;
}

export interface NodeRuntime {
  /** the node binary on this machine */
  binary: string;
  /** its version, e.g. 24.21.0 */
  version: string;
  libraries: SharedLibrary[];
}

/** The npm `node` package's binary under `projectDir`, with its version and shared libraries. */
export async function findNodeRuntime(projectDir: string): Promise<NodeRuntime> {
  const pkgDir = join(projectDir, 'node_modules', 'node');
  const binary = join(pkgDir, 'bin', 'node');
  if (!existsSync(binary))
    throw new TetherError(
      'TETHER_BINARY_NOT_FOUND',
      `the Node runtime for the image is missing (${binary}): run \`npm ci\` in ${projectDir} (the npm \`node\` package brings it)`,
    );
  const version = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string })
    .version;
  return { binary: realpathSync(binary), version, libraries: parseLdd(await ldd(binary)) };
}

/**
 * The libraries in `ldd` output: `name => /path (0x…)` lines and the loader's `/path (0x…)` line;
 * the kernel's vDSO has no file. A library ldd cannot find is an error: the image would not start.
 */
export function parseLdd(output: string): SharedLibrary[] {
  const libs: SharedLibrary[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('linux-vdso') || line.startsWith('linux-gate')) continue;
    if (line.includes('=> not found'))
      throw new TetherError(
        'TETHER_BINARY_NOT_FOUND',
        `the node binary needs a library this machine lacks: ${line}`,
      );
    const m = /^(?:\S+ => )?(\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (!m?.[1]) continue;
    libs.push({ path: m[1], source: realpathSync(m[1]) });
  }
  if (!libs.some((l) => l.path.includes('ld-linux')))
    throw new TetherError('TETHER_BINARY_NOT_FOUND', `ldd named no dynamic loader for node:\n${output}`);
  return libs;
}

function ldd(binary: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ldd', [binary], { encoding: 'utf8', timeout: 30_000 }, (err, stdout) => {
      if (err)
        reject(
          new TetherError(
            'TETHER_BINARY_NOT_FOUND',
            `ldd ${binary} failed (${err.message}); ldd comes with Debian's libc-bin package`,
          ),
        );
      else resolve(stdout);
    });
  });
}
