// Issue 11, finding 1: the proxy-server's agent port before authentication. A stranger's TLS
// connection is closed by the handshake deadline whatever it negotiated (HTTP/1.1, no ALPN, h2
// without a certificate, a WebSocket upgrade followed by silence), and a flood of strangers cannot
// keep an agent from connecting: they are capped per address and in total, apart from agents, and
// at a cap the one that has waited longest makes room for the newcomer.
import { once } from 'node:events';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '../../src/tunnel/protocol.ts';
import { pollUntil } from '../../src/wait.ts';
import { type HubPki, hubPki, startAgent, startServer } from './tunnel-fixtures.ts';

let pki: HubPki;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(async () => {
  pki = await hubPki();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A TLS client that completes the handshake and then sends nothing (unless told to). */
async function stranger(
  port: number,
  opts: { alpn?: string[]; localAddress?: string } = {},
): Promise<{ socket: TLSSocket; closed: Promise<number> }> {
  const started = Date.now();
  const socket = tlsConnect({
    host: '127.0.0.1',
    port,
    ca: pki.ca.certPem,
    servername: 'localhost',
    ...(opts.alpn ? { ALPNProtocols: opts.alpn } : {}),
    ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
  });
  socket.on('error', () => {});
  // Not events.once: it would reject on the reset a refused connection sees.
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - started)));
  cleanups.push(() => void socket.destroy());
  return { socket, closed };
}

/** How long until `closed` resolved, failing once `limitMs` passed without it. */
function closedWithin(closed: Promise<number>, limitMs: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still open after ${limitMs} ms`)), limitMs);
  });
  return Promise.race([closed, deadline]).finally(() => clearTimeout(timer));
}

describe('the agent port before authentication', () => {
  const deadlineMs = 600;

  it.each([
    ['HTTP/1.1', ['http/1.1']],
    ['no ALPN', undefined],
    ['h2 without a certificate', ['h2']],
  ])('a silent TLS client negotiating %s is closed by the handshake deadline', async (_name, alpn) => {
    const server = await startServer(pki, { limits: { handshakeTimeoutMs: deadlineMs } });
    cleanups.push(() => server.stop(100));
    const { closed } = await stranger(server.port, { alpn });
    expect(await closedWithin(closed, deadlineMs + 2_000)).toBeLessThan(deadlineMs + 2_000);
  });

  it('a client that upgrades to a WebSocket and then stays silent is closed by the inner handshake deadline', async () => {
    const server = await startServer(pki, { limits: { handshakeTimeoutMs: deadlineMs } });
    cleanups.push(() => server.stop(100));
    const { socket, closed } = await stranger(server.port, { alpn: ['http/1.1'] });
    await once(socket, 'secureConnect');
    socket.write(
      `GET ${WEBSOCKET_PATH} HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\nconnection: Upgrade\r\n` +
        `sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n` +
        `sec-websocket-protocol: ${WEBSOCKET_SUBPROTOCOL}\r\n\r\n`,
    );
    const [head] = (await once(socket, 'data')) as [Buffer];
    expect(head.toString()).toMatch(/^HTTP\/1.1 101/);
    expect(await closedWithin(closed, 2 * deadlineMs + 2_000)).toBeLessThan(2 * deadlineMs + 2_000);
  });

  /** Strangers from each of `addresses` (as many as `perAddress`), all through TLS and then silent. */
  async function flood(addresses: string[], perAddress: number, port: number) {
    const strangers = await Promise.all(
      addresses.flatMap((localAddress) =>
        Array.from({ length: perAddress }, () => stranger(port, { alpn: ['http/1.1'], localAddress })),
      ),
    );
    // each one either got through TLS or was closed to make room for a newer one
    await Promise.all(
      strangers.map(
        ({ socket }) =>
          new Promise<void>((resolve) => {
            if (socket.destroyed) resolve();
            socket.once('secureConnect', () => resolve());
            socket.once('close', () => resolve());
          }),
      ),
    );
    return { open: () => strangers.filter(({ socket }) => !socket.destroyed).length };
  }

  it('strangers flooding the agent port from one address hold at most its cap, and an agent still connects', async () => {
    // A long deadline, so the strangers hold their connections for the whole test.
    const server = await startServer(pki, {
      limits: { handshakeTimeoutMs: 30_000 },
      maxConnections: 150,
      maxUnauthenticatedPerAddress: 100,
    });
    cleanups.push(() => server.stop(100));
    const strangers = await flood(['127.0.0.2'], 300, server.port);
    // The oldest over the per-address cap were closed to make room: at most 100 are left.
    await pollUntil(() => strangers.open() <= 100, { timeoutMs: 5_000, description: 'at most 100 open' });
    expect(strangers.open()).toBeGreaterThan(0);

    const started = Date.now();
    const agent = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${server.port}`],
      targetPort: 1,
    });
    cleanups.push(() => agent.stop());
    await server.waitForAgents('cluster1', 1, 10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('strangers from many addresses filling the whole unauthenticated cap do not lock an agent out', async () => {
    const server = await startServer(pki, {
      limits: { handshakeTimeoutMs: 30_000 },
      maxUnauthenticatedConnections: 150,
      maxUnauthenticatedPerAddress: 100,
    });
    cleanups.push(() => server.stop(100));
    const strangers = await flood(['127.0.0.2', '127.0.0.3', '127.0.0.4'], 100, server.port);
    await pollUntil(() => strangers.open() <= 150, { timeoutMs: 5_000, description: 'at most 150 open' });
    expect(strangers.open()).toBeGreaterThan(100);

    // Before TLS the agent is one more stranger: it gets a slot because the longest waiting gives one up.
    const started = Date.now();
    const agent = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${server.port}`],
      targetPort: 1,
    });
    cleanups.push(() => agent.stop());
    await server.waitForAgents('cluster1', 1, 10_000);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
