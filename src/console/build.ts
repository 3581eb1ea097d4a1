// The console's browser bundle: src/console/ui/main.ts and console.css bundled and minified by
// esbuild, in memory, once per process (the first request waits for it; every later one gets the
// cached result). Nothing is written to disk and nothing is fetched from a CDN: the page loads
// exactly app.js and app.css from the console itself. Sizes are kept so they can be reported and
// watched (minified bytes and gzip bytes, what a browser on a slow link pays).
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type * as Esbuild from 'esbuild';

/** One built file: its bytes and sizes. */
export interface BundleFile {
  body: Buffer;
  contentType: string;
  /** minified bytes */
  bytes: number;
  /** bytes after gzip -9 */
  gzipBytes: number;
}

export interface ConsoleBundle {
  js: BundleFile;
  css: BundleFile;
  /** wall time of the build */
  buildMs: number;
}

// From the project root, as other modules find the project's files: the same path from
// src/console/ and from the production bundle in dist/bin/ (the image ships src/ and preact, htm
// and uplot among its production packages).
const uiDir = fileURLToPath(new URL('../../src/console/ui/', import.meta.url));

/** The browsers the bundle is for: ES2022 (fetch streaming, private fields) without transpiling. */
const BROWSER_TARGET = ['es2022', 'chrome110', 'firefox115', 'safari16'];

function fileOf(text: string, contentType: string): BundleFile {
  const body = Buffer.from(text, 'utf8');
  return { body, contentType, bytes: body.length, gzipBytes: gzipSync(body, { level: 9 }).length };
}

// esbuild is loaded from node_modules at run time, never bundled into the production build (its
// JavaScript API finds its native binary relative to its own files): the specifier is a variable,
// which a bundler leaves alone.
const ESBUILD: string = 'esbuild';

async function bundleOnce(entry: string, loader: 'ts' | 'css'): Promise<string> {
  const { build } = (await import(ESBUILD)) as typeof Esbuild;
  const result = await build({
    entryPoints: [`${uiDir}${entry}`],
    bundle: true,
    minify: true,
    write: false,
    format: loader === 'ts' ? 'esm' : undefined,
    platform: 'browser',
    target: BROWSER_TARGET,
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const out = result.outputFiles[0];
  if (!out) throw new Error(`esbuild produced nothing for ${entry}`);
  return out.text;
}

let cached: Promise<ConsoleBundle> | undefined;

/** The console's bundle, built on first use and cached for the life of the process. */
export function consoleBundle(): Promise<ConsoleBundle> {
  cached ??= (async () => {
    const started = performance.now();
    const [js, css] = await Promise.all([bundleOnce('main.ts', 'ts'), bundleOnce('console.css', 'css')]);
    return {
      js: fileOf(js, 'text/javascript; charset=utf-8'),
      css: fileOf(css, 'text/css; charset=utf-8'),
      buildMs: Math.round(performance.now() - started),
    };
  })();
  // A failed build is not cached: the next request tries again (and says why it failed).
  cached.catch(() => {
    cached = undefined;
  });
  return cached;
}
