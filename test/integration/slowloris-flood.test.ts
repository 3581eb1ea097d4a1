// A slow-loris flood on both ports a stranger can reach — the agent port and the CONNECT frontend —
// from 20 loopback addresses at once, against real `tether proxy-server` and `tether proxy-agent`
// processes with their default limits, while the agent is killed and starts again. Strangers open
// TLS connections and then dribble one byte a second (reconnecting whenever they are closed), so
// the flood lasts the whole test. The agent must reconnect within seconds, a hub service must still
// get through the CONNECT frontend, and the server's memory must stay bounded and come back down.
// The figures (connections held, reconnect time, RSS before/peak/after) are printed for the notes.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDLE_CHECK_INTERVAL_MS } from '../../src/cli/idle-memory.ts';
import { freePort } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, type HubPki, hubPki, roundTrip } from './tunnel-fixtures.ts';

const SOURCES = 20;
const AGENT_PORT_PER_SOURCE = 100;
const FRONTEND_PER_SOURCE = 50;

let pki: HubPki;
let dir: string;
let echo: { port: number; close: () => Promise<void> };
const files: Record<string, string> = {};
const children: ChildProcess[] = [];

beforeAll(async () => {
  pki = await hubPki();
  dir = mkdtempSync(join(tmpdir(), 'tether-flood-'));
  echo = await echoServer();
  const agent = await pki.agentCert('cluster1', 'agent-a');
  const client = await pki.proxyClientCert('hub-service');
  const write = (name: string, content: string): string => {
    const p = join(dir, name);
    writeFileSync(p, content);
    return p;
  };
  Object.assign(files, {
    ca: write('ca.crt', pki.ca.certPem),
    serverCert: write('server.crt', pki.server.certPem),
    serverKey: write('server.key', pki.server.keyPem),
    agentCert: write('agent.crt', agent.certPem),
    agentKey: write('agent.key', agent.keyPem),
    clientCa: write('proxy-client-ca.crt', pki.proxyClientCa.certPem),
  });
  files.clientCertPem = client.certPem;
  files.clientKeyPem = client.keyPem;
});
afterAll(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await echo?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function tether(args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['bin/tether.js', ...args], {
    stdio: ['ignore', 'ignore', 'ignore'],
    env: { ...process.env, TETHER_LOG_LEVEL: 'warn' },
  });
  children.push(child);
  return child;
}

async function readyz(opsPort: number): Promise<boolean> {
  try {
    const res = await request(`http://127.0.0.1:${opsPort}/readyz`);
    await res.body.text();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return Math.round(kb / 1024);
}

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * Slow-loris strangers on one port: each completes TLS (or, on the frontend, tries to without a
 * certificate) and then sends one byte a second; a closed one is replaced until stop().
 */
function slowLoris(port: number, perSource: number, firstBytes: string) {
  let stopped = false;
  const open = new Set<TLSSocket>();
  let opened = 0;
  const timers = new Set<NodeJS.Timeout>();
  const start = (source: string): void => {
    if (stopped) return;
    opened++;
    const raw = netConnect({ host: '127.0.0.1', port, localAddress: source });
    raw.on('error', () => {});
    const socket = tlsConnect({
      socket: raw,
      ca: pki.ca.certPem,
      servername: 'localhost',
      ALPNProtocols: ['http/1.1'],
    });
    socket.on('error', () => {});
    open.add(socket);
    let sent = 0;
    const drip = setInterval(() => {
      if (socket.writable && sent < firstBytes.length) socket.write(firstBytes[sent++] ?? '');
    }, 1000);
    timers.add(drip);
    socket.once('close', () => {
      clearInterval(drip);
      timers.delete(drip);
      open.delete(socket);
      // a new stranger takes its place (after a short pause, as a real attacker's loop would)
      const again = setTimeout(() => {
        timers.delete(again);
        start(source);
      }, 100);
      timers.add(again);
    });
  };
  for (let s = 0; s < SOURCES; s++) {
    for (let i = 0; i < perSource; i++) start(`127.0.0.${s + 2}`);
  }
  return {
    held: () => [...open].filter((s) => !s.destroyed && s.readyState === 'open').length,
    opened: () => opened,
    stop: () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      for (const s of open) s.destroy();
    },
  };
}

/** A hub service's CONNECT to cluster1 through the frontend, echoing a payload. */
function hubServiceRoundTrip(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({
      host: '127.0.0.1',
      port,
      ca: pki.ca.certPem,
      cert: files.clientCertPem,
      key: files.clientKeyPem,
    });
    s.once('error', reject);
    s.once('secureConnect', () => s.write('CONNECT cluster1:443 HTTP/1.1\r\nhost: cluster1:443\r\n\r\n'));
    let head = '';
    const onData = (d: Buffer): void => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.off('data', onData);
      const status = Number(head.slice(9, 12));
      if (status !== 200) {
        s.destroy();
        resolve(status);
        return;
      }
      roundTrip(s, Buffer.from('through the flood')).then(
        (r) => {
          s.destroy();
          resolve(r.bytes === 17 ? 200 : -1);
        },
        (err: unknown) => reject(err),
      );
    };
    s.on('data', onData);
  });
}

describe('slow-loris flood on the agent port and the CONNECT frontend', () => {
  it('a killed agent reconnects and a hub service gets through while 3 000 strangers dribble bytes', async () => {
    const ports = { agent: await freePort(), connect: await freePort(), ops: await freePort() };
    const agentOps = await freePort();
    const server = tether([
      'proxy-server',
      '--bind-address=127.0.0.1',
      `--agent-port=${ports.agent}`,
      `--connect-port=${ports.connect}`,
      `--ops-port=${ports.ops}`,
      `--tls-cert-file=${files.serverCert}`,
      `--tls-key-file=${files.serverKey}`,
      `--agent-ca-file=${files.ca}`,
      `--proxy-client-ca-file=${files.clientCa}`,
      '--insecure-skip-hub-checks',
    ]);
    await pollUntil(() => readyz(ports.ops), { timeoutMs: 20_000, description: 'proxy-server readyz' });
    const agentArgs = [
      'proxy-agent',
      '--cluster-name=cluster1',
      '--agent-id=agent-a',
      `--proxy-server=127.0.0.1:${ports.agent}`,
      `--cert-file=${files.agentCert}`,
      `--key-file=${files.agentKey}`,
      `--hub-ca-file=${files.ca}`,
      `--kube-apiserver=127.0.0.1:${echo.port}`,
      `--ops-port=${agentOps}`,
    ];
    const firstStart = Date.now();
    let agent = tether(agentArgs);
    await pollUntil(() => readyz(agentOps), {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: 'agent readyz',
    });
    const quietStartMs = Date.now() - firstStart;
    // The bounds below are for a machine that starts the agent within a second without a flood.
    // On a busier one (a cold CI run builds Kubernetes beside this test: 1.6 s here, 22 s for the
    // service against 6 s on a quiet machine) they stretch by the same factor, measured in this run.
    const pace = Math.max(1, quietStartMs / 1000);
    expect(await hubServiceRoundTrip(ports.connect)).toBe(200);
    const pid = server.pid ?? 0;
    const rssBefore = rssMiB(pid);
    const fdsBefore = fdCount(pid);

    const onAgentPort = slowLoris(ports.agent, AGENT_PORT_PER_SOURCE, 'GET / HTTP/1.1\r\nhost: x\r\n');
    const onFrontend = slowLoris(ports.connect, FRONTEND_PER_SOURCE, 'CONNECT cluster1:443 HTTP/1.1\r\n');
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssMiB(pid));
    }, 250);
    try {
      // the flood builds up: most strangers are through TLS and holding on
      await pollUntil(() => onAgentPort.held() + onFrontend.held() >= 1000, {
        timeoutMs: 30_000,
        description: 'the flood to hold 1 000 connections',
      });
      const heldAtKill = { agentPort: onAgentPort.held(), frontend: onFrontend.held() };
      agent.kill('SIGKILL');
      await new Promise((r) => agent.once('exit', r));
      await pollUntil(async () => !(await readyz(agentOps)), { timeoutMs: 5_000, description: 'agent gone' });
      const restartedAt = Date.now();
      agent = tether(agentArgs);
      await pollUntil(() => readyz(agentOps), {
        timeoutMs: 30_000 * pace,
        intervalMs: 100,
        description: 'the restarted agent to hold its tunnel during the flood',
      });
      const reconnectMs = Date.now() - restartedAt;
      const through = await pollUntil(
        async () =>
          (await hubServiceRoundTrip(ports.connect).catch(() => 0)) === 200 ? Date.now() : undefined,
        { timeoutMs: 30_000 * pace, description: 'a hub service through the frontend during the flood' },
      );
      const serviceMs = through - restartedAt;
      const stats = { ...heldAtKill, opened: onAgentPort.opened() + onFrontend.opened() };
      onAgentPort.stop();
      onFrontend.stop();
      clearInterval(sampler);
      // Memory the allocator took for the flood is kept for reuse (RSS does not drop back), so what
      // shows a leak is growth across floods: a second wave of the same size must not add to it.
      // "After" is once the process has settled: its sockets closed, and then its RSS steady for
      // longer than two idle-trim checks (src/cli/idle-memory.ts), so the trim an idle process runs
      // (50–60 MiB here) has happened before either figure is read. Reading one wave before the
      // trim and the other after it made a 72 MiB "growth" in a loaded CI run.
      const settled = async (): Promise<number> => {
        await pollUntil(() => fdCount(pid) <= fdsBefore + 5, {
          timeoutMs: 30_000,
          description: `proxy-server fds back near ${fdsBefore}`,
        });
        const steadyMs = 2 * IDLE_CHECK_INTERVAL_MS + 1_500;
        let last = rssMiB(pid);
        let since = Date.now();
        return pollUntil(
          () => {
            const now = rssMiB(pid);
            if (Math.abs(now - last) > 2) {
              last = now;
              since = Date.now();
              return undefined;
            }
            return Date.now() - since >= steadyMs ? now : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250, description: 'proxy-server RSS steady after the flood' },
        );
      };
      const rssAfterFirst = await settled();
      const second = [
        slowLoris(ports.agent, AGENT_PORT_PER_SOURCE, 'GET / HTTP/1.1\r\nhost: x\r\n'),
        slowLoris(ports.connect, FRONTEND_PER_SOURCE, 'CONNECT cluster1:443 HTTP/1.1\r\n'),
      ];
      await pollUntil(() => (second[0]?.held() ?? 0) + (second[1]?.held() ?? 0) >= 1000, {
        timeoutMs: 30_000,
        description: 'the second wave to hold 1 000 connections',
      });
      for (const wave of second) wave.stop();
      const rssAfter = await settled();
      process.stdout.write(
        `flood: held ${stats.agentPort} on the agent port + ${stats.frontend} on the frontend ` +
          `(${stats.opened} opened in all); agent start to tunnel ${reconnectMs} ms (${quietStartMs} ms without a flood), hub service through ` +
          `${serviceMs} ms after the agent restart; proxy-server RSS ${rssBefore} → peak ${rssPeak} → ` +
          `after ${rssAfterFirst} MiB, after a second wave ${rssAfter} MiB\n`,
      );
      expect(stats.agentPort + stats.frontend).toBeGreaterThanOrEqual(1000);
      expect(reconnectMs).toBeLessThan(15_000 * pace);
      expect(serviceMs).toBeLessThan(20_000 * pace);
      expect(rssPeak).toBeLessThan(rssBefore + 400);
      // On a loaded machine handshakes queue up, so more TLS state is live at once and the
      // allocator's high-water mark (which RSS keeps) varies from wave to wave: a loaded CI run
      // (pace 2.5) read 232 → 303 MiB with every socket closed. The bound stretches by the pace.
      expect(rssAfter).toBeLessThanOrEqual(rssAfterFirst + 50 * pace);
    } finally {
      clearInterval(sampler);
      onAgentPort.stop();
      onFrontend.stop();
    }
  }, 120_000);
});
