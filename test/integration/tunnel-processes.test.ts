// The tunnel as separate processes, as deployed: `tether proxy-server` and `tether proxy-agent`.
// Restarting the server brings the agent back within seconds; killing the agent ends its streams
// promptly; bad flags stop startup with a message that says what to fix.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, type HubPki, hubPki, roundTrip } from './tunnel-fixtures.ts';

let pki: HubPki;
let dir: string;
let echo: { port: number; close: () => Promise<void> };
const files: Record<string, string> = {};
const children: ChildProcess[] = [];

function write(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

beforeAll(async () => {
  pki = await hubPki();
  dir = mkdtempSync(join(tmpdir(), 'tether-proc-'));
  echo = await echoServer();
  const agent = await pki.agentCert('cluster1', 'agent-a');
  const client = await pki.proxyClientCert('hub-service');
  Object.assign(files, {
    ca: write('ca.crt', pki.ca.certPem),
    serverCert: write('server.crt', pki.server.certPem),
    serverKey: write('server.key', pki.server.keyPem),
    agentCert: write('agent.crt', agent.certPem),
    agentKey: write('agent.key', agent.keyPem),
    clientCa: write('proxy-client-ca.crt', pki.proxyClientCa.certPem),
    clientCert: write('client.crt', client.certPem),
    clientKey: write('client.key', client.keyPem),
  });
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});
afterAll(async () => {
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function tether(args: string[]): Proc {
  const child = spawn(process.execPath, ['bin/tether.js', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TETHER_LOG_LEVEL: 'info' },
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return { child, output: () => out, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

async function ready(opsPort: number, timeoutMs = 15_000): Promise<void> {
  await pollUntil(
    async () => {
      const res = await request(`http://127.0.0.1:${opsPort}/readyz`);
      await res.body.text();
      return res.statusCode === 200;
    },
    { timeoutMs, intervalMs: 100, description: `readyz on ${opsPort}` },
  );
}

async function startServer(
  ports: { agent: number; connect: number; ops: number },
  extra: string[] = [],
): Promise<Proc> {
  const p = tether([
    'proxy-server',
    '--bind-address=127.0.0.1',
    `--agent-port=${ports.agent}`,
    `--connect-port=${ports.connect}`,
    `--ops-port=${ports.ops}`,
    `--tls-cert-file=${files.serverCert}`,
    `--tls-key-file=${files.serverKey}`,
    `--agent-ca-file=${files.ca}`,
    `--proxy-client-ca-file=${files.clientCa}`,
    // No hub in these tests: agents are taken on their certificate alone.
    '--insecure-skip-hub-checks',
    ...extra,
  ]);
  await ready(ports.ops);
  return p;
}

function startAgent(agentPort: number, opsPort: number, extra: string[] = []): Proc {
  return tether([
    'proxy-agent',
    '--cluster-name=cluster1',
    '--agent-id=agent-a',
    `--proxy-server=127.0.0.1:${agentPort}`,
    `--cert-file=${files.agentCert}`,
    `--key-file=${files.agentKey}`,
    `--hub-ca-file=${files.ca}`,
    `--kube-apiserver=127.0.0.1:${echo.port}`,
    `--ops-port=${opsPort}`,
    ...extra,
  ]);
}

function connectFrontend(port: number): Promise<{ status: number; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({
      host: '127.0.0.1',
      port,
      ca: pki.ca.certPem,
      cert: readFileSync(files.clientCert as string),
      key: readFileSync(files.clientKey as string),
    });
    s.once('error', reject);
    s.once('secureConnect', () => s.write('CONNECT cluster1:443 HTTP/1.1\r\n\r\n'));
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n\r\n')) {
        s.off('data', onData);
        resolve({ status: Number(buf.slice(9, 12)), socket: s });
      }
    };
    s.on('data', onData);
  });
}

describe('tunnel processes', () => {
  it('gets the agent back within seconds after the proxy-server process is killed and restarted', async () => {
    const ports = { agent: await freePort(), connect: await freePort(), ops: await freePort() };
    const agentOps = await freePort();
    let server = await startServer(ports);
    startAgent(ports.agent, agentOps);
    await ready(agentOps);
    server.child.kill('SIGKILL');
    await server.exited;
    await pollUntil(
      async () => {
        const res = await request(`http://127.0.0.1:${agentOps}/readyz`);
        await res.body.text();
        return res.statusCode === 503;
      },
      { timeoutMs: 35_000, description: 'agent to notice the dead server' },
    );
    server = await startServer(ports);
    const restarted = Date.now();
    await ready(agentOps, 15_000);
    expect(Date.now() - restarted).toBeLessThan(10_000);
    const { status, socket } = await connectFrontend(ports.connect);
    expect(status).toBe(200);
    expect((await roundTrip(socket, Buffer.from('again'))).bytes).toBe(5);
  });

  it('ends the streams of a killed agent promptly, and then answers 503', async () => {
    const ports = { agent: await freePort(), connect: await freePort(), ops: await freePort() };
    const agentOps = await freePort();
    await startServer(ports);
    const agent = startAgent(ports.agent, agentOps);
    await ready(agentOps);
    const { status, socket } = await connectFrontend(ports.connect);
    expect(status).toBe(200);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => {});
    const killedAt = Date.now();
    agent.child.kill('SIGKILL');
    await closed;
    expect(Date.now() - killedAt).toBeLessThan(5000);
    const after = await pollUntil(
      async () => {
        const r = await connectFrontend(ports.connect);
        r.socket.destroy();
        return r.status === 503 ? r : undefined;
      },
      { timeoutMs: 10_000, description: '503 once the agent is gone' },
    );
    expect(after.status).toBe(503);
  });

  it('drops a frozen agent once PINGs go unanswered, and takes it back when it thaws', async () => {
    const keepalive = ['--ping-interval=300', '--ping-timeout=700'];
    const ports = { agent: await freePort(), connect: await freePort(), ops: await freePort() };
    const agentOps = await freePort();
    await startServer(ports, keepalive);
    const agent = startAgent(ports.agent, agentOps, keepalive);
    await ready(agentOps);
    const frozenAt = Date.now();
    agent.child.kill('SIGSTOP');
    try {
      await pollUntil(
        async () => {
          const r = await connectFrontend(ports.connect);
          r.socket.destroy();
          return r.status === 503;
        },
        { timeoutMs: 10_000, intervalMs: 100, description: 'the hub to drop the frozen agent' },
      );
      // interval + timeout, plus scheduling slack on a busy machine
      expect(Date.now() - frozenAt).toBeLessThan(5000);
    } finally {
      agent.child.kill('SIGCONT');
    }
    const back = await pollUntil(
      async () => {
        const r = await connectFrontend(ports.connect);
        if (r.status !== 200) r.socket.destroy();
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200, description: 'the thawed agent to reconnect' },
    );
    expect((await roundTrip(back.socket, Buffer.from('thawed'))).bytes).toBe(6);
  });

  it('a proxy-server cannot be started that trusts agent certificates as hub services or has no hub to authorize against', async () => {
    const base = [
      'proxy-server',
      '--bind-address=127.0.0.1',
      '--agent-port=0',
      '--connect-port=0',
      '--ops-port=0',
      `--tls-cert-file=${files.serverCert}`,
      `--tls-key-file=${files.serverKey}`,
      `--agent-ca-file=${files.ca}`,
    ];
    const sameCa = tether([...base, `--proxy-client-ca-file=${files.ca}`, '--insecure-skip-hub-checks']);
    expect(await sameCa.exited).not.toBe(0);
    expect(sameCa.output()).toContain('--proxy-client-ca-file is the same CA as --agent-ca-file');
    const noHub = tether([...base, `--proxy-client-ca-file=${files.clientCa}`]);
    expect(await noHub.exited).not.toBe(0);
    expect(noHub.output()).toContain('--hub-kubeconfig is required');
  });

  it('stops at startup with a clear message for a bad flag or a missing file', async () => {
    const noName = tether([
      'proxy-agent',
      '--proxy-server=127.0.0.1:1',
      `--cert-file=${files.agentCert}`,
      `--key-file=${files.agentKey}`,
      `--hub-ca-file=${files.ca}`,
    ]);
    expect(await noName.exited).not.toBe(0);
    expect(noName.output()).toContain('--cluster-name');
    const missing = tether([
      'proxy-agent',
      '--cluster-name=cluster1',
      '--proxy-server=127.0.0.1:1',
      '--cert-file=/nonexistent/agent.crt',
      `--key-file=${files.agentKey}`,
      `--hub-ca-file=${files.ca}`,
      '--kube-apiserver=127.0.0.1:6443',
    ]);
    expect(await missing.exited).not.toBe(0);
    expect(missing.output()).toContain('--cert-file /nonexistent/agent.crt: no such file');
    const badExport = tether([
      'proxy-agent',
      '--cluster-name=cluster1',
      '--proxy-server=127.0.0.1:1',
      `--cert-file=${files.agentCert}`,
      `--key-file=${files.agentKey}`,
      `--hub-ca-file=${files.ca}`,
      '--kube-apiserver=127.0.0.1:6443',
      '--export=Bad Name=1.2.3.4:5',
    ]);
    expect(await badExport.exited).not.toBe(0);
    expect(badExport.output()).toContain('--export must be name=host:port');
    const badPort = tether([
      'proxy-server',
      '--agent-port=99999',
      `--tls-cert-file=${files.serverCert}`,
      `--tls-key-file=${files.serverKey}`,
      `--agent-ca-file=${files.ca}`,
    ]);
    expect(await badPort.exited).not.toBe(0);
    expect(badPort.output()).toContain('--agent-port must be a whole number between 0 and 65535');
  });
});
