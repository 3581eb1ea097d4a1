// `tether image build` where it cannot build: the message names what to do, and nothing is written.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'tether-image-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tether(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { env, encoding: 'utf8', timeout: 30_000 }, (_err, _out, stderr) =>
      resolve({ code: child.exitCode, stderr }),
    );
  });
}

describe('tether image build, refused', () => {
  it('as a non-root user: says it needs root', async () => {
    const out = join(dir, 'nonroot.tar');
    const { code, stderr } = await tether(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        'bin/tether.js',
        'image',
        'build',
        '--output',
        out,
      ],
      { PATH: process.env.PATH },
    );
    expect(stderr).toContain('building the image needs root');
    expect(code).toBe(1);
    expect(existsSync(out)).toBe(false);
  });

  it('without buildah: names hack/deps.sh and the Debian package', async () => {
    const out = join(dir, 'nobuildah.tar');
    const { code, stderr } = await tether(
      process.execPath,
      ['bin/tether.js', 'image', 'build', '--output', out],
      { PATH: join(dir, 'empty-path') },
    );
    expect(stderr).toContain('buildah is not installed: run `bash hack/deps.sh`');
    expect(code).toBe(1);
    expect(existsSync(out)).toBe(false);
  });
});
