// `tether image build` where it cannot build or is stopped: the message names what to do (or what
// happened), nothing is written and the build's temp storage is gone.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';

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

  it('SIGTERM during the build: buildah is ended, its temp storage removed, no archive, exit 1 within 5 s', async () => {
    const out = join(dir, 'interrupted.tar');
    const child = spawn(process.execPath, ['bin/tether.js', 'image', 'build', '--output', out], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // the build's own storage, read off its running buildah (`--root <workDir>/storage`)
      const workDir = await pollUntil(
        () => {
          const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8')
            .trim()
            .split(' ');
          for (const kid of kids.filter(Boolean)) {
            const argv = readFileSync(`/proc/${kid}/cmdline`, 'utf8').split('\0');
            const root = argv[argv.indexOf('--root') + 1];
            if (argv.includes('--root') && root?.endsWith('/storage'))
              return root.slice(0, -'/storage'.length);
          }
          return undefined;
        },
        { timeoutMs: 60_000, intervalMs: 20, description: 'a running buildah of the build' },
      );
      expect(existsSync(workDir)).toBe(true);
      const sent = performance.now();
      child.kill('SIGTERM');
      const code = await exited;
      expect(performance.now() - sent).toBeLessThan(5_000);
      expect(stderr).toContain('image build interrupted by SIGTERM; nothing was written');
      expect(code).toBe(1);
      expect(existsSync(workDir)).toBe(false);
      expect(existsSync(out)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  }, 90_000);
});
