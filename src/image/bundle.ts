// The production build of the tether command: bin/tether.js and everything it imports bundled and
// minified by esbuild into `<root>/dist/bin/` — the entry `tether.js` and one chunk per lazily
// loaded verb, so a verb still loads only its own code. Measured with `npm run bench -- footprint
// --bundle`: a process that talks to Kubernetes loads one minified file set instead of ~900
// modules, about a third less RSS and start-up CPU (README, Performance).
// The output sits two levels below the project root on purpose: modules find the project's files
// (package.json, hack/, charts) at `../../` from their own URL, from src/<folder>/ and from
// dist/bin/ alike. jq-web stays external: it reads its WebAssembly file from its package at run
// time. The image runs the bundle (src/image/build.ts); the source tree still runs directly, and
// nothing here is needed for development.
//
//   npm run bundle            writes dist/bin/ in this checkout
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const projectDir = fileURLToPath(new URL('../..', import.meta.url));

/** Where `npm run bundle` writes the production build of this checkout. */
export const bundleDir = join(projectDir, 'dist', 'bin');

/** Packages loaded from node_modules at run time rather than bundled, and why. */
const EXTERNAL = [
  'jq-web', // its .wasm is located next to its own module
];

/** The bundler's version: a new esbuild may write other code from the same sources. */
export { version as bundlerVersion } from 'esbuild';

/**
 * Bundles `project`'s bin/tether.js into `outDir` (emptied first): `outDir/tether.js` plus its
 * chunks. `outDir` must be two levels below a directory holding package.json (and node_modules for
 * jq-web): the image's /app/dist/bin, or this checkout's dist/bin.
 */
export async function buildBundle(
  outDir = bundleDir,
  project = projectDir,
): Promise<{ entry: string; bytes: number }> {
  rmSync(outDir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [join(project, 'bin', 'tether.js')],
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    minify: true,
    external: EXTERNAL,
    // CommonJS dependencies (undici, pino, …) call require(); an ES module has none of its own
    banner: {
      js: "import { createRequire as __tetherRequire } from 'node:module'; const require = __tetherRequire(import.meta.url);",
    },
    metafile: true,
    logLevel: 'error',
  });
  const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
  return { entry: join(outDir, 'tether.js'), bytes };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { entry, bytes } = await buildBundle();
  process.stdout.write(`${entry} (${(bytes / 1048576).toFixed(1)} MB with its chunks)\n`);
}
