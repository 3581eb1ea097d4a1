// Half-open tunnel streams are reset after --half-open-timeout without traffic the other way
// (issue 11 item 8): a client that never ends after the target did (CONNECT frontend, real
// `tether proxy-server` and `tether proxy-agent` processes), and a hub caller that ended its side
// while the target never answers or ends (ProxyServer.dial, as the in-process gateway uses it), no
// longer hold a stream, a frontend socket and the agent's target socket forever. A half-closed
// stream that still carries traffic the other way is left alone. (A CONNECT-frontend client that
// ends its side closes the whole tunnel at once, as RFC 9110 asks of a tunnel intermediary.)
// The target is a TCP server here that keeps its sockets half-open on purpose.
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import { type HubPki, hubPki, startAgent, startServer } from './tunnel-fixtures.ts';
import { type ServerPorts, TunnelProcesses } from './tunnel-process-fixtures.ts';

const HALF_OPEN_TIMEOUT_MS = 1000;
/** timeout + the stream timer's granularity + process and scheduling slack on a shared machine */
const RESET_BOUND_MS = HALF_OPEN_TIMEOUT_MS + 3000;
/** how long the old code was watched without closing anything */
const WATCH_MS = 10_000;

interface TargetConn {
  socket: Socket;
  closedAt?: number;
  received: string;
}

/**
 * The managed-cluster target; it never ends a connection because the other side did. Its
 * behaviour per connection is the first line the client sends:
 *   silent — never writes and never ends
 *   bye    — writes "bye", ends its side, keeps reading forever
 */
async function halfOpenTarget(): Promise<{
  port: number;
  conns: TargetConn[];
  close: () => Promise<void>;
}> {
  const conns: TargetConn[] = [];
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    const c: TargetConn = { socket, received: '' };
    conns.push(c);
    socket.on('error', () => {});
    socket.once('close', () => {
      c.closedAt = Date.now();
    });
    socket.on('data', (d: Buffer) => {
      const first = !c.received.includes('\n');
      c.received += d.toString();
      if (first && c.received.startsWith('bye\n')) socket.end('bye');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    conns,
    close: () =>
      new Promise<void>((r) => {
        for (const c of conns) c.socket.destroy();
        server.close(() => r());
      }),
  };
}

/**
 * Whether the agent has let go of `conn`: the target writes, and a socket the agent closed answers
 * with a reset (EPIPE/ECONNRESET closes it here). Polls until `timeoutMs`.
 */
async function agentLetGo(conn: TargetConn, timeoutMs: number): Promise<boolean> {
  try {
    await pollUntil(
      () => {
        if (conn.closedAt) return true;
        if (conn.socket.writable) conn.socket.write('?');
        return false;
      },
      { timeoutMs, intervalMs: 100, description: 'the agent to close its socket to the target' },
    );
    return true;
  } catch {
    return false;
  }
}

/** Resolves with ms from `from` until `socket` closes, or undefined if still open after WATCH_MS. */
function closesWithin(socket: Socket, from: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve(Date.now() - from);
    const t = setTimeout(() => resolve(undefined), WATCH_MS);
    socket.once('close', () => {
      clearTimeout(t);
      resolve(Date.now() - from);
    });
  });
}

function firstConn(target: { conns: TargetConn[] }): Promise<TargetConn> {
  return pollUntil(() => target.conns[0], {
    timeoutMs: 5000,
    intervalMs: 20,
    description: 'the target connection',
  });
}

describe('half-open tunnel streams through the CONNECT frontend (processes)', () => {
  let procs: TunnelProcesses;
  let target: Awaited<ReturnType<typeof halfOpenTarget>>;
  let ports: ServerPorts;

  beforeEach(async () => {
    procs = await TunnelProcesses.create();
    target = await halfOpenTarget();
    ({ ports } = await procs.startServer([`--half-open-timeout=${HALF_OPEN_TIMEOUT_MS}`]));
    const agent = await procs.startAgent({
      cluster: 'cluster1',
      agent: 'agent-a',
      server: `127.0.0.1:${ports.agent}`,
      targetPort: target.port,
    });
    await procs.ready(agent.opsPort);
    await procs.agentHeld(ports.ops, 'cluster1');
  });
  afterEach(async () => {
    await procs.cleanup();
    await target.close();
  });

  it('resets a stream whose target ended when the client never ends, freeing the target socket and the frontend connection', async () => {
    const r = await procs.connect(ports.connect, 'cluster1:443', 15_000, { allowHalfOpen: true });
    expect(r.status, r.reason).toBe(200);
    r.socket.on('error', () => {});
    let got = '';
    r.socket.on('data', (d: Buffer) => {
      got += d.toString();
    });
    const ended = new Promise<number>((res) => r.socket.once('end', () => res(Date.now())));
    r.socket.write('bye\n');
    const endedAt = await ended;
    expect(got).toBe('bye');
    const conn = await firstConn(target);
    // We never end our side and send nothing: the agent must drop the target socket (the target
    // has ended too, so it closes once the agent lets go)...
    const targetClosed = await closesWithin(conn.socket, endedAt);
    // ...and the frontend must drop our connection: a write now meets a reset.
    const clientClosed = await pollUntil(
      () => {
        if (r.socket.destroyed) return Date.now() - endedAt;
        r.socket.write('?');
        return undefined;
      },
      { timeoutMs: 5000, intervalMs: 100, description: 'the frontend to drop the connection' },
    ).catch(() => undefined);
    console.log(
      `target ended, client silent: agent let go after ${targetClosed} ms; frontend after ${clientClosed} ms`,
    );
    expect(targetClosed, 'the agent should close its socket to the target').toBeDefined();
    expect(targetClosed).toBeGreaterThanOrEqual(HALF_OPEN_TIMEOUT_MS - 100);
    expect(targetClosed).toBeLessThanOrEqual(RESET_BOUND_MS);
    expect(clientClosed, 'the frontend should close the connection').toBeDefined();
  });

  it('keeps a half-closed stream that still carries traffic the other way, past the timeout', async () => {
    const r = await procs.connect(ports.connect, 'cluster1:443', 15_000, { allowHalfOpen: true });
    expect(r.status, r.reason).toBe(200);
    const ended = new Promise<void>((res) => r.socket.once('end', () => res()));
    let reset = false;
    r.socket.once('close', () => {
      reset = true;
    });
    r.socket.write('bye\n');
    await ended;
    const conn = await firstConn(target);
    // 10 chunks 300 ms apart: 3 s half-closed, three times the timeout
    const chunks = Array.from({ length: 10 }, (_, i) => `chunk${i + 1};`);
    for (const c of chunks) {
      expect(reset, 'the stream was reset while carrying traffic').toBe(false);
      r.socket.write(c);
      await new Promise((res) => setTimeout(res, 300));
    }
    await pollUntil(() => conn.received === `bye\n${chunks.join('')}`, {
      timeoutMs: 5000,
      intervalMs: 50,
      description: `all chunks at the target (got ${JSON.stringify(conn.received)})`,
    });
    expect(reset).toBe(false);
    r.socket.end();
    expect(await closesWithin(conn.socket, Date.now()), 'a clean end closes the target').toBeDefined();
  });
});

describe('half-open tunnel streams, agent-side timer (processes)', () => {
  let procs: TunnelProcesses;
  let target: Awaited<ReturnType<typeof halfOpenTarget>>;

  afterEach(async () => {
    await procs.cleanup();
    await target.close();
  });

  it('tether proxy-agent --half-open-timeout resets the stream when the proxy-server does not (--half-open-timeout=0)', async () => {
    procs = await TunnelProcesses.create();
    target = await halfOpenTarget();
    const { ports } = await procs.startServer(['--half-open-timeout=0']);
    const agent = await procs.startAgent({
      cluster: 'cluster1',
      agent: 'agent-a',
      server: `127.0.0.1:${ports.agent}`,
      targetPort: target.port,
      extra: [`--half-open-timeout=${HALF_OPEN_TIMEOUT_MS}`],
    });
    await procs.ready(agent.opsPort);
    await procs.agentHeld(ports.ops, 'cluster1');
    const r = await procs.connect(ports.connect, 'cluster1:443', 15_000, { allowHalfOpen: true });
    expect(r.status, r.reason).toBe(200);
    r.socket.on('error', () => {});
    const ended = new Promise<number>((res) => r.socket.once('end', () => res(Date.now())));
    r.socket.write('bye\n');
    const endedAt = await ended;
    const conn = await firstConn(target);
    const targetClosed = await closesWithin(conn.socket, endedAt);
    console.log(`agent-side timer only: agent let go of the target after ${targetClosed} ms`);
    expect(targetClosed, 'the agent should close its socket to the target').toBeDefined();
    expect(targetClosed).toBeLessThanOrEqual(RESET_BOUND_MS);
  });
});

describe('half-open tunnel streams dialled in process (ProxyServer.dial)', () => {
  let pki: HubPki;
  let target: Awaited<ReturnType<typeof halfOpenTarget>>;
  let server: ProxyServer | undefined;
  let agent: ProxyAgent | undefined;

  beforeEach(async () => {
    pki = await hubPki();
    target = await halfOpenTarget();
  });
  afterEach(async () => {
    await agent?.stop();
    await server?.stop(0);
    await target.close();
  });

  it('resets a stream the hub ended when the target never answers or ends, and the agent lets go of the target', async () => {
    server = await startServer(pki, { limits: { halfOpenTimeoutMs: HALF_OPEN_TIMEOUT_MS } });
    agent = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${server.port}`],
      targetPort: target.port,
    });
    await server.waitForAgents('cluster1');
    const stream = await server.dial('cluster1', 'kube-apiserver:443');
    stream.on('error', () => {});
    stream.resume();
    stream.write('silent\n');
    const conn = await firstConn(target);
    await pollUntil(() => conn.received === 'silent\n', { timeoutMs: 5000, description: 'the line' });
    const endedAt = Date.now();
    stream.end();
    const closed = await closesWithin(stream as unknown as Socket, endedAt);
    console.log(`hub ended, target silent: stream reset after ${closed} ms`);
    expect(closed, 'the hub should reset the stream').toBeDefined();
    expect(closed).toBeGreaterThanOrEqual(HALF_OPEN_TIMEOUT_MS - 100);
    expect(closed).toBeLessThanOrEqual(RESET_BOUND_MS);
    expect(await agentLetGo(conn, 5000), 'the agent should close its socket to the target').toBe(true);
  });

  it('the agent resets a half-open stream by itself when the hub does not (hub timeout 0)', async () => {
    server = await startServer(pki, { limits: { halfOpenTimeoutMs: 0 } });
    agent = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${server.port}`],
      targetPort: target.port,
      limits: { halfOpenTimeoutMs: HALF_OPEN_TIMEOUT_MS },
    });
    await server.waitForAgents('cluster1');
    const stream = await server.dial('cluster1', 'kube-apiserver:443');
    stream.on('error', () => {});
    stream.resume();
    stream.write('silent\n');
    const conn = await firstConn(target);
    await pollUntil(() => conn.received === 'silent\n', { timeoutMs: 5000, description: 'the line' });
    const endedAt = Date.now();
    stream.end();
    const closed = await closesWithin(stream as unknown as Socket, endedAt);
    console.log(`hub ended, target silent, agent-side timer only: stream reset after ${closed} ms`);
    expect(closed, 'the agent should reset the stream').toBeDefined();
    expect(closed).toBeLessThanOrEqual(RESET_BOUND_MS);
    expect(await agentLetGo(conn, 5000), 'the agent should close its socket to the target').toBe(true);
  });
});
