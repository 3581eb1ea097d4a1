// The local squid fixture on its own: raw CONNECT over a plain socket (no tether dialer involved).
import { existsSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isTetherError } from '../../src/errors.ts';
import { type Squid, startSquid } from '../../src/localenv/squid.ts';
import { pollUntil } from '../../src/wait.ts';

/** Reads from `socket` until `predicate` holds for everything received so far. */
function readUntil(socket: Socket, predicate: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(
      () => done(new Error(`no complete answer within 5 s; got ${JSON.stringify(text)}`)),
      5000,
    );
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      if (predicate(text)) done();
    };
    const done = (err?: Error): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', done);
      if (err) reject(err);
      else resolve(text);
    };
    socket.on('data', onData);
    socket.once('error', done);
  });
}

function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('local squid', () => {
  let echo: Server;
  let echoPort = 0;
  const squids: Squid[] = [];
  const openSockets = new Set<Socket>();

  beforeAll(async () => {
    echo = createServer((s) => {
      openSockets.add(s);
      s.pipe(s);
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const addr = echo.address();
    echoPort = typeof addr === 'object' && addr ? addr.port : 0;
  });

  afterEach(async () => {
    for (const s of openSockets) s.destroy();
    openSockets.clear();
    await Promise.all(squids.splice(0).map((s) => s.stop()));
  });

  afterAll(async () => {
    for (const s of openSockets) s.destroy();
    await new Promise<void>((resolve) => echo.close(() => resolve()));
  });

  it('tunnels a CONNECT to a local TCP echo server and logs it in the access log', async () => {
    const squid = await startSquid();
    squids.push(squid);
    expect(squid.url).toBe(`http://127.0.0.1:${squid.port}`);

    const socket = connect({ host: '127.0.0.1', port: squid.port });
    openSockets.add(socket);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const head = readUntil(socket, (t) => t.includes('\r\n\r\n'));
    socket.write(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\n\r\n`);
    expect(await head).toMatch(/^HTTP\/1\.1 200 /);

    const echoed = readUntil(socket, (t) => t === 'ping through squid');
    socket.write('ping through squid');
    expect(await echoed).toBe('ping through squid');

    // squid logs a tunnel when it closes
    socket.end();
    const line = await pollUntil(
      () =>
        squid
          .accessLog()
          .split('\n')
          .find((l) => l.includes(`CONNECT 127.0.0.1:${echoPort}`)),
      { timeoutMs: 10_000, intervalMs: 100, description: 'the CONNECT in the squid access log' },
    );
    expect(line).toContain('TCP_TUNNEL/200');
  });

  it('stop() frees the port and removes the directory', async () => {
    const squid = await startSquid();
    squids.push(squid); // stopped again in afterEach if an expectation fails first
    const dir = dirname(squid.accessLogPath);
    expect(existsSync(dir)).toBe(true);
    expect(await acceptsConnections(squid.port)).toBe(true);

    await squid.stop();
    expect(existsSync(dir)).toBe(false);
    expect(await acceptsConnections(squid.port)).toBe(false);
    // and the port can be bound again
    const probe = createServer();
    await new Promise<void>((resolve, reject) =>
      probe.once('error', reject).listen(squid.port, '127.0.0.1', resolve),
    );
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    await squid.stop(); // idempotent
  });

  it('asks for Basic credentials when basicAuth is set', async () => {
    const squid = await startSquid({ basicAuth: { username: 'agent', password: 'p@ss:w/rd' } });
    squids.push(squid);
    const ask = async (credentials?: string): Promise<string> => {
      const socket = connect({ host: '127.0.0.1', port: squid.port });
      openSockets.add(socket);
      const head = readUntil(socket, (t) => t.includes('\r\n\r\n'));
      const auth = credentials
        ? `Proxy-Authorization: Basic ${Buffer.from(credentials).toString('base64')}\r\n`
        : '';
      socket.write(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\n${auth}\r\n`);
      const text = await head;
      socket.destroy();
      return text.split('\r\n')[0] ?? '';
    };
    expect(await ask()).toMatch(/^HTTP\/1\.1 407 /);
    expect(await ask('agent:wrong')).toMatch(/^HTTP\/1\.1 407 /);
    expect(await ask('agent:p@ss:w/rd')).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('quotes squid log lines when it cannot start', async () => {
    const err = await startSquid({ tls: { certPem: 'not a certificate', keyPem: 'not a key' } }).catch(
      (e) => e,
    );
    expect(isTetherError(err, 'TETHER_PROCESS_FAILED')).toBe(true);
    expect((err as Error).message).toContain('last log lines');
  });
});
