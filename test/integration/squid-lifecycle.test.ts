// squid's lifetime in a local environment: a SIGKILLed squid is started again on the same port and
// tunnels again; a SIGKILLed parent (what `tether up` is to squid) leaves neither a squid process
// nor its directory behind, also when the parent is root (squid then runs as the proxy user).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Squid, startSquid } from '../../src/localenv/squid.ts';
import { Supervisor } from '../../src/localenv/supervisor.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer } from './tunnel-fixtures.ts';

const repo = join(import.meta.dirname, '..', '..');
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function livePidsWith(needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) out.push(Number(entry));
    } catch {}
  }
  return out;
}

/** CONNECT through squid to 127.0.0.1:port, one byte there and back. */
function tunnelsThrough(squid: Squid, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(squid.port, '127.0.0.1');
    s.setTimeout(5_000, () => resolve(false));
    s.on('error', () => resolve(false));
    let buf = '';
    s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      if (/^HTTP\/1\.1 200/.test(buf) && buf.includes('\r\n\r\n')) {
        if (buf.endsWith('x')) {
          s.destroy();
          resolve(true);
        } else if (buf.endsWith('\r\n\r\n')) s.write('x');
      } else if (buf.includes('\r\n\r\n')) {
        s.destroy();
        resolve(false);
      }
    });
  });
}

describe('squid lifecycle', () => {
  it('a SIGKILLed squid is respawned on the same port and tunnels CONNECT again', async () => {
    const echo = await echoServer();
    cleanups.push(() => echo.close());
    const squid = await startSquid();
    cleanups.push(() => squid.stop());
    expect(await tunnelsThrough(squid, echo.port)).toBe(true);
    const reports: string[] = [];
    const supervisor = new Supervisor({ report: (m) => reports.push(m), onGiveUp: () => {} });
    cleanups.push(() => supervisor.stop());
    supervisor.watch(squid.process);
    const oldPid = squid.process.pid as number;
    process.kill(oldPid, 'SIGKILL');
    await pollUntil(() => reports.some((r) => r.startsWith('squid is running again')), {
      timeoutMs: 30_000,
      description: `squid to run again; reports: ${reports.join('\n')}`,
    });
    expect(reports[0]).toMatch(/^squid exited \(SIGKILL\); restarting in 1s; last log lines:/);
    expect(squid.process.pid).not.toBe(oldPid);
    expect(await tunnelsThrough(squid, echo.port)).toBe(true);
  });

  it('no squid process and no squid directory survive a SIGKILLed parent', async () => {
    // the parent: a node process that starts squid the way `tether up` does, then waits
    const parent = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { startSquid } = await import(${JSON.stringify(join(repo, 'src/localenv/squid.ts'))});
         const squid = await startSquid();
         console.log(JSON.stringify({ accessLog: squid.accessLogPath }));
         setInterval(() => {}, 60_000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    parent.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    cleanups.push(() => {
      if (parent.exitCode === null) parent.kill('SIGKILL');
    });
    const started = await pollUntil(
      () => (out.includes('\n') ? (JSON.parse(out) as { accessLog: string }) : undefined),
      { timeoutMs: 30_000, description: 'the parent to start squid' },
    );
    const squidDir = dirname(started.accessLog);
    const conf = join(squidDir, 'squid.conf');
    cleanups.push(() => {
      for (const pid of livePidsWith(conf)) process.kill(pid, 'SIGKILL');
    });
    expect(livePidsWith(conf).length).toBeGreaterThan(0);
    expect(existsSync(squidDir)).toBe(true);
    const exited = new Promise((r) => parent.once('exit', r));
    parent.kill('SIGKILL');
    await exited;
    await pollUntil(() => (livePidsWith(conf).length === 0 && !existsSync(squidDir)) || undefined, {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: `no squid with ${conf} (left: ${livePidsWith(conf).join(', ') || 'none'}) and no ${squidDir} (${existsSync(squidDir) ? 'still there' : 'gone'})`,
    });
  });
});
