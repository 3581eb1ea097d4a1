// The supervisor of `tether up` on real processes: a SIGKILLed `tether proxy-agent` is started again
// with the same command line (same ops port, even with a connection to it open when it died), its
// tunnel comes back, and the crash is reported with the process name, the signal and its last log
// lines; a process that keeps crashing is given up on with a message naming it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import { Supervisor } from '../../src/localenv/supervisor.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, hubPki, roundTrip, sha256, startServer } from './tunnel-fixtures.ts';

let dir: string;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-supervisor-'));
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

async function tunnelWorks(server: ProxyServer, payload: Buffer): Promise<boolean> {
  const stream = await server.dial('cluster1', 'kube-apiserver:443', { timeoutMs: 5_000 });
  const { sha } = await roundTrip(stream, payload);
  return sha === sha256(payload);
}

describe('supervisor of tether up children', () => {
  it('a SIGKILLed proxy-agent comes back with the same ops port and its tunnel, and the crash is reported', async () => {
    const pki = await hubPki();
    const echo = await echoServer();
    cleanups.push(() => echo.close());
    const server = await startServer(pki);
    cleanups.push(() => server.stop());
    const cert = await pki.agentCert('cluster1', 'agent-a');
    const write = (name: string, content: string): string => {
      const p = join(dir, name);
      writeFileSync(p, content, { mode: 0o600 });
      return p;
    };
    const ops = await freePort();
    const agent = new SupervisedProcess({
      name: 'cluster1/proxy-agent',
      command: process.execPath,
      logFile: join(dir, 'agent.log'),
      args: [
        tetherBin,
        'proxy-agent',
        '--cluster-name=cluster1',
        '--agent-id=agent-a',
        `--proxy-server=127.0.0.1:${server.port}`,
        `--cert-file=${write('agent.crt', cert.certPem)}`,
        `--key-file=${write('agent.key', cert.keyPem)}`,
        `--hub-ca-file=${write('ca.crt', pki.ca.certPem)}`,
        `--kube-apiserver=127.0.0.1:${echo.port}`,
        `--ops-port=${ops}`,
      ],
      env: { ...process.env, TETHER_LOG_LEVEL: 'info' },
    });
    cleanups.push(() => agent.stop(5_000));
    agent.readiness = () => waitReady(agent, ops, 30_000);
    await waitReady(agent, ops, 30_000);
    await server.waitForAgents('cluster1');
    const payload = Buffer.from('through the tunnel before and after the crash');
    expect(await tunnelWorks(server, payload)).toBe(true);

    const reports: string[] = [];
    const givenUp: string[] = [];
    const supervisor = new Supervisor({ report: (m) => reports.push(m), onGiveUp: (r) => givenUp.push(r) });
    cleanups.push(() => supervisor.stop());
    supervisor.watch(agent);

    // a keep-alive connection to the ops port is open when the process dies: the port must still be
    // bindable at once by the new process (TIME_WAIT on the old connection, SO_REUSEADDR)
    const keepAlive = new Agent({ keepAliveTimeout: 60_000 });
    cleanups.push(() => keepAlive.close());
    const first = await request(`http://127.0.0.1:${ops}/readyz`, { dispatcher: keepAlive });
    await first.body.text();
    const oldPid = agent.pid;
    const killedAt = Date.now();
    process.kill(oldPid as number, 'SIGKILL');

    await pollUntil(() => reports.some((r) => r.startsWith('cluster1/proxy-agent is running again')), {
      timeoutMs: 30_000,
      description: `"running again" report; reports so far: ${reports.join('\n')}`,
    });
    const healMs = Date.now() - killedAt;
    expect(reports[0]).toMatch(
      /^cluster1\/proxy-agent exited \(SIGKILL\); restarting in 1s; last log lines:\n {4}\S/,
    );
    // the quoted lines are the agent's own log (it logged that it connected)
    expect(reports[0]).toContain('"component":');
    expect(reports[1]).toBe(`cluster1/proxy-agent is running again (pid ${agent.pid})`);
    expect(agent.pid).not.toBe(oldPid);
    expect(givenUp).toEqual([]);
    const again = await request(`http://127.0.0.1:${ops}/readyz`);
    expect(again.statusCode).toBe(200);
    await again.body.text();
    await server.waitForAgents('cluster1');
    expect(
      await pollUntil(() => tunnelWorks(server, payload), { timeoutMs: 15_000, description: 'tunnel' }),
    ).toBe(true);
    // both runs wrote to the same log file
    expect(
      readFileSync(join(dir, 'agent.log'), 'utf8').match(/"component":"proxy-agent"/g)?.length,
    ).toBeGreaterThan(1);
    process.stdout.write(`proxy-agent SIGKILL → running again (ready) in ${healMs} ms\n`);
  });

  it('a process that crashes at every start is given up on after maxCrashes, naming it and its exit code', async () => {
    const runs = join(dir, 'runs');
    const crasher = new SupervisedProcess({
      name: 'hub/crasher',
      command: process.execPath,
      logFile: join(dir, 'crasher.log'),
      args: [
        '-e',
        `require('node:fs').appendFileSync(${JSON.stringify(runs)}, 'run\\n'); console.error('cannot start: port taken'); process.exit(3);`,
      ],
    });
    cleanups.push(() => crasher.stop());
    const reports: string[] = [];
    let gaveUp: string | undefined;
    const supervisor = new Supervisor({
      report: (m) => reports.push(m),
      onGiveUp: (r) => {
        gaveUp = r;
      },
      limits: { firstDelayMs: 100, maxDelayMs: 400, maxCrashes: 3 },
    });
    cleanups.push(() => supervisor.stop());
    supervisor.watch(crasher);
    await pollUntil(() => gaveUp, { timeoutMs: 20_000, description: 'the supervisor to give up' });
    expect(gaveUp).toMatch(
      /^hub\/crasher crashed 3 times within 5 minutes \(last: exit code 3\); giving up \(its log: .*crasher\.log\)$/,
    );
    // without a readiness probe a respawned process counts as running once spawned
    const exits = reports.filter((r) => r.startsWith('hub/crasher exited'));
    expect(exits).toHaveLength(3);
    expect(exits[0]).toMatch(
      /^hub\/crasher exited \(exit code 3\); restarting in 0\.1s; last log lines:\n {4}cannot start: port taken/,
    );
    expect(exits[1]).toMatch(/restarting in 0\.2s/);
    expect(exits[2]).toMatch(/^hub\/crasher exited \(exit code 3\); last log lines:/);
    expect(readFileSync(runs, 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
    expect(crasher.running).toBe(false);
    // once stopped, nothing brings it back
    await crasher.stop();
    expect(crasher.respawn()).toBe(false);
  });
});
