// The production bundle (src/image/bundle.ts) runs as the source tree does: built into a project of
// its own (package.json and node_modules of this checkout, the bundle two levels below), it prints
// the package version it reads at `../../package.json`, and every verb's chunk loads (its --help).
// A real verb against real control planes from the bundle is `npm run bench -- footprint --bundle`.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DIR } from '../../src/image/build.ts';
import { buildBundle } from '../../src/image/bundle.ts';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'tether-bundle-test-'));
let entry = '';
let bytes = 0;

beforeAll(async () => {
  symlinkSync(join(PROJECT_DIR, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(PROJECT_DIR, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'dist'));
  ({ entry, bytes } = await buildBundle(join(dir, 'dist', 'bin')));
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tether(args: string[]): Promise<string> {
  return exec(process.execPath, [entry, ...args], { cwd: dir, timeout: 20_000 }).then((r) => r.stdout);
}

describe('the production bundle', () => {
  it('prints the package version it finds two levels above its own files', async () => {
    const { version } = JSON.parse(readFileSync(join(PROJECT_DIR, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect((await tether(['--version'])).trim()).toBe(version);
    // minified into a few MB rather than the source tree with its dependencies
    expect(bytes).toBeGreaterThan(500_000);
    expect(bytes).toBeLessThan(20 * 1048576);
  });

  it("loads each long-running verb's chunk: its help names its own flags", async () => {
    const expected: Record<string, string> = {
      agent: '--cluster-name',
      hub: '--auto-approved-csr-users',
      'proxy-server': '--agent-port',
      'proxy-agent': '--proxy-server',
      'serviceaccount-agent': '--install-namespace',
      gateway: '--tls-cert-file',
    };
    for (const [verb, flag] of Object.entries(expected)) {
      expect(await tether([verb, '--help']), verb).toContain(flag);
    }
  });
});
