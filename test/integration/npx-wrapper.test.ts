// `npx tether …`: npm runs `sh -c tether …`, and a SIGTERM to npm used to kill npm and the shell
// but leave the real tether process running, reparented. It must end with its wrapper.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { isNpmCommandLine, isShellCommandLine } from '../../src/cli/npm-wrapper.ts';
import { freePort } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { hubPki } from './tunnel-fixtures.ts';

const repo = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'tether-npx-'));
const started: ChildProcess[] = [];
const markers: string[] = [];

/** Live (non-zombie) processes whose command line contains `needle`, with their command lines. */
function processesWith(needle: string): Array<{ pid: number; cmdline: string }> {
  const out: Array<{ pid: number; cmdline: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(needle)) out.push({ pid: Number(entry), cmdline });
    } catch {}
  }
  return out;
}

afterAll(() => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
  // the real tether process, should the test have failed before it ended
  for (const m of markers) for (const p of processesWith(m)) process.kill(p.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('tether run through npx', () => {
  it('recognizes npm and shell wrapper command lines', () => {
    expect(isNpmCommandLine('npm exec tether up --clusters 1')).toBe(true);
    expect(isNpmCommandLine('npm run tether -- up')).toBe(true);
    expect(isNpmCommandLine('node /usr/lib/node_modules/npm/bin/npx-cli.js tether')).toBe(true);
    expect(isNpmCommandLine('node --disable-warning=ExperimentalWarning /x/bin/tether.js up')).toBe(false);
    expect(isShellCommandLine("sh -c 'tether' up")).toBe(true);
    expect(isShellCommandLine('/bin/bash -c tether')).toBe(true);
    expect(isShellCommandLine('node /x/bin/tether.js sh')).toBe(false);
  });

  it('SIGTERM to `npx tether proxy-agent …` ends the real tether process too', async () => {
    const pki = await hubPki();
    const cert = await pki.agentCert('npx-cluster', 'agent');
    const write = (name: string, content: string): string => {
      const p = join(dir, name);
      writeFileSync(p, content, { mode: 0o600 });
      return p;
    };
    const marker = `--cluster-name=npx-${process.pid}-${Date.now()}`;
    markers.push(marker);
    // nothing listens there: the agent keeps retrying, a long-running process like any tether command
    const [closedPort, ops] = await Promise.all([freePort(), freePort()]);
    const npx = spawn(
      'npx',
      [
        'tether',
        'proxy-agent',
        marker,
        '--agent-id=agent',
        `--proxy-server=127.0.0.1:${closedPort}`,
        `--cert-file=${write('agent.crt', cert.certPem)}`,
        `--key-file=${write('agent.key', cert.keyPem)}`,
        `--hub-ca-file=${write('ca.crt', pki.ca.certPem)}`,
        `--kube-apiserver=127.0.0.1:${closedPort}`,
        `--ops-port=${ops}`,
      ],
      { cwd: repo, stdio: 'ignore' },
    );
    started.push(npx);
    const real = await pollUntil(
      () => processesWith(marker).find((p) => /bin\/tether(\.js)? proxy-agent/.test(p.cmdline)),
      { timeoutMs: 60_000, intervalMs: 200, description: 'the real tether proxy-agent under npx' },
    );
    // up and serving (not exiting on a flag error): its ops port answers
    await pollUntil(async () => (await request(`http://127.0.0.1:${ops}/healthz`)).statusCode === 200, {
      timeoutMs: 30_000,
      description: 'the proxy-agent ops port',
    });
    // npm → sh → node: the real process is not npm's child
    expect(processesWith(marker).length).toBeGreaterThanOrEqual(2);
    npx.kill('SIGTERM');
    const endedAt = Date.now();
    await pollUntil(() => processesWith(marker).length === 0, {
      timeoutMs: 15_000,
      intervalMs: 100,
      description: `the real tether process (pid ${real.pid}) to end with npx; still running: ${JSON.stringify(processesWith(marker))}`,
    });
    process.stdout.write(`npx SIGTERM → real tether process gone in ${Date.now() - endedAt} ms\n`);
  });
});
