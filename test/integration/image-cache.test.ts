// The image cache (src/image/cache.ts) on a small project of its own (so that edits other people
// make to this working tree cannot change the inputs between two calls): the inputs digest follows
// the files and SOURCE_DATE_EPOCH; ensureImage builds once, then hands back the archive as is.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DIR } from '../../src/image/build.ts';
import { ensureImage, imageCacheDir, imageInputsDigest } from '../../src/image/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-image-cache-test-'));
const project = join(dir, 'project');
const savedEnv = { cache: process.env.TETHER_CACHE_DIR, epoch: process.env.SOURCE_DATE_EPOCH };

beforeAll(() => {
  process.env.TETHER_CACHE_DIR = join(dir, 'cache');
  delete process.env.SOURCE_DATE_EPOCH;
  mkdirSync(join(project, 'bin'), { recursive: true });
  mkdirSync(join(project, 'src'), { recursive: true });
  mkdirSync(join(project, 'examples'), { recursive: true });
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  writeFileSync(join(project, 'package.json'), '{"name":"tether","version":"0.0.0-cachetest"}\n');
  writeFileSync(join(project, 'LICENSE'), 'test\n');
  writeFileSync(join(project, 'bin', 'tether.js'), "console.log('hi');\n");
  writeFileSync(join(project, 'src', 'a.ts'), 'export const a = 1;\n');
  writeFileSync(join(project, 'examples', 'e.ts'), 'export const e = 1;\n');
  // the runtime the image is built on: this project's npm `node` package
  symlinkSync(join(PROJECT_DIR, 'node_modules', 'node'), join(project, 'node_modules', 'node'));
});

afterAll(() => {
  if (savedEnv.cache === undefined) delete process.env.TETHER_CACHE_DIR;
  else process.env.TETHER_CACHE_DIR = savedEnv.cache;
  if (savedEnv.epoch !== undefined) process.env.SOURCE_DATE_EPOCH = savedEnv.epoch;
  rmSync(dir, { recursive: true, force: true });
});

describe('image cache', () => {
  it('the inputs digest is the same for the same files and changes with a source file or SOURCE_DATE_EPOCH', async () => {
    const first = await imageInputsDigest(project);
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(await imageInputsDigest(project)).toBe(first);
    writeFileSync(join(project, 'src', 'a.ts'), 'export const a = 2;\n');
    const edited = await imageInputsDigest(project);
    expect(edited).not.toBe(first);
    process.env.SOURCE_DATE_EPOCH = '1764000000';
    try {
      expect(await imageInputsDigest(project)).not.toBe(edited);
    } finally {
      delete process.env.SOURCE_DATE_EPOCH;
    }
  });

  it('ensureImage builds once, then returns the cached archive without building; an edit changes its name', async () => {
    const first = await ensureImage({ projectDir: project });
    expect(first.built).toBe(true);
    expect(first.reference).toBe('localhost/tether:0.0.0-cachetest');
    expect(first.archive.startsWith(imageCacheDir())).toBe(true);
    const started = performance.now();
    const again = await ensureImage({ projectDir: project });
    expect(again).toEqual({ ...first, built: false });
    expect(performance.now() - started).toBeLessThan(5_000);
    // an edit changes the digest, so the next call looks for (and builds) another archive; not
    // built here to keep the CPU free for the other test files
    writeFileSync(join(project, 'src', 'b.ts'), 'export const b = 1;\n');
    expect(await imageInputsDigest(project)).not.toBe(first.inputsDigest);
  }, 180_000);
});
