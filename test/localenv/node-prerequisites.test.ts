// A machine that cannot run a real node is told why and what to do before anything is created.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkNodePrerequisites } from '../../src/localenv/node-command.ts';

const moduleUrl = new URL('../../src/localenv/node-command.ts', import.meta.url).href;

describe('real node prerequisites', () => {
  it('names the missing packages and the command that installs them', () => {
    const gone = ['/usr/sbin/runc', '/usr/bin/runc', '/usr/lib/cni/bridge'];
    const missing = (p: string): boolean => !gone.includes(p);
    expect(() => checkNodePrerequisites({ uid: 0, exists: missing })).toThrow(
      /real nodes need runc, CNI bridge plugin: run 'bash hack\/deps.sh' \(or apt-get install --no-install-recommends runc containernetworking-plugins\)/,
    );
    try {
      checkNodePrerequisites({ uid: 0, exists: missing });
    } catch (err) {
      expect((err as { code?: string }).code).toBe('TETHER_BINARY_NOT_FOUND');
    }
  });

  it('says that cgroups are missing', () => {
    expect(() => checkNodePrerequisites({ uid: 0, exists: (p) => !p.startsWith('/sys/fs/cgroup') })).toThrow(
      /real nodes need cgroups mounted at \/sys\/fs\/cgroup/,
    );
  });

  it('asks for br_netfilter', () => {
    expect(() =>
      checkNodePrerequisites({ uid: 0, exists: (p) => !p.startsWith('/proc/sys/net/bridge') }),
    ).toThrow(/modprobe br_netfilter/);
  });

  it('refuses a non-root user (a real process dropped to nobody) and points at the process mode', async () => {
    const script = `import(${JSON.stringify(moduleUrl)}).then((m) => m.checkNodePrerequisites()).then(() => process.exit(0), (e) => { process.stderr.write(e.code + ' ' + e.message); process.exit(3); })`;
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      // as root drop to nobody; a non-root runner is already the case under test
      const [cmd, args] =
        process.getuid?.() === 0
          ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script]]
          : [process.execPath, ['-e', script]];
      const child = execFile(
        cmd,
        args,
        { timeout: 20_000, cwd: fileURLToPath(new URL('../..', import.meta.url)) },
        (_err, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('TETHER_INVALID_ARGUMENT real nodes need root');
    expect(result.stderr).toContain('process mode');
  });
});
