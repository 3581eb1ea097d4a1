// SessionSocket: the session's writes complete before the peer reads them (so node:http2 goes back
// to reading at once), up to maxUnsentBytes; beyond that they wait for the connection to drain.
// Its reads reach the session once per loop turn, joined, at most JOIN_MAX_BYTES at a time.
import { once } from 'node:events';
import { createServer as createH2Server } from 'node:http2';
import { type AddressInfo, createServer, connect as netConnect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { JOIN_MAX_BYTES, SessionSocket } from '../../src/tunnel/session-socket.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** A loopback TCP pair whose accepting end reads nothing until told to. */
async function socketPair(): Promise<{ client: Socket; peer: Socket }> {
  const server = createServer({ pauseOnConnect: true });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = netConnect((server.address() as AddressInfo).port, '127.0.0.1');
  const [peer] = (await once(server, 'connection')) as [Socket];
  cleanups.push(() => {
    client.destroy();
    peer.destroy();
    server.close();
  });
  return { client, peer };
}

function write(s: SessionSocket, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => s.write(chunk, (err) => (err ? reject(err) : resolve())));
}

describe('SessionSocket', () => {
  it('turns Nagle off on the connection, which node:http2 cannot reach through its JS stream bridge (else each small frame waits ~40 ms for an ACK)', async () => {
    const { client } = await socketPair();
    const calls: Array<boolean | undefined> = [];
    const original = client.setNoDelay.bind(client);
    client.setNoDelay = (on?: boolean) => {
      calls.push(on);
      return original(on);
    };
    const h2 = createH2Server();
    cleanups.push(() => h2.close());
    const sessions = once(h2, 'session');
    h2.emit('connection', new SessionSocket(client, { maxUnsentBytes: 1024 * 1024 }));
    await sessions;
    expect(calls).toEqual([true]);
  });

  it('completes writes the peer has not read yet, up to maxUnsentBytes', async () => {
    const { client } = await socketPair();
    const s = new SessionSocket(client, { maxUnsentBytes: 64 * 1024 * 1024 });
    // 32 MiB is more than loopback socket buffers take while the peer reads nothing.
    for (let i = 0; i < 32; i++) await write(s, Buffer.alloc(1024 * 1024, i));
    expect(client.writableLength).toBeGreaterThan(0);
  });

  it('holds a write above maxUnsentBytes until the peer reads, and delivers every byte in order', async () => {
    const { client, peer } = await socketPair();
    const s = new SessionSocket(client, { maxUnsentBytes: 1024 * 1024 });
    let done = false;
    const big = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
    const written = write(s, big).then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(done).toBe(false);
    const received: Buffer[] = [];
    let n = 0;
    peer.on('data', (c: Buffer) => {
      received.push(c);
      n += c.length;
    });
    peer.resume();
    await written;
    s.end();
    await once(peer, 'end');
    expect(n).toBe(big.length);
    expect(Buffer.concat(received).equals(big)).toBe(true);
  });

  it('passes the peer’s bytes and end through, and closes with the socket', async () => {
    const { client, peer } = await socketPair();
    const s = new SessionSocket(client, { maxUnsentBytes: 1024 });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    peer.resume();
    peer.end(Buffer.from('hello from the peer'));
    await once(s, 'end');
    expect(Buffer.concat(chunks).toString()).toBe('hello from the peer');
    expect(s.bytesRead).toBe(19);
    await once(s, 'close');
    expect(client.destroyed).toBe(true);
  });

  /** A connection whose reads the test makes: each `emit('data')` is one chunk as a TLS socket hands it on. */
  function fakeConnection(): Duplex {
    const d = new Duplex({ read() {}, write: (_c, _e, done) => done() });
    cleanups.push(() => d.destroy());
    return d;
  }

  it('hands on the records one read delivers as one chunk: one hop through the JS stream bridge, not four', async () => {
    const conn = fakeConnection();
    const s = new SessionSocket(conn, { maxUnsentBytes: 1024 * 1024 });
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    // a TLS socket hands on a 64 KiB read as four 16 KiB records, one after the other in one turn
    for (let i = 0; i < 4; i++) conn.emit('data', Buffer.alloc(16 * 1024, i));
    await nextTurn();
    expect(got.map((c) => c.length)).toEqual([64 * 1024]);
    expect([0, 1, 2, 3].map((i) => got[0]?.[i * 16 * 1024])).toEqual([0, 1, 2, 3]);
    // what arrives in a later turn is handed on then, not held for more
    conn.emit('data', Buffer.from('later'));
    await nextTurn();
    expect(got.map((c) => c.length)).toEqual([64 * 1024, 5]);
  });

  it('joins at most JOIN_MAX_BYTES (256 KiB): a turn that reads more hands that much on at once', async () => {
    expect(JOIN_MAX_BYTES).toBe(256 * 1024);
    const conn = fakeConnection();
    const s = new SessionSocket(conn, { maxUnsentBytes: 1024 * 1024 });
    const got: number[] = [];
    s.on('data', (c: Buffer) => got.push(c.length));
    for (let i = 0; i < 20; i++) conn.emit('data', Buffer.alloc(16 * 1024));
    // handed on already, before the turn ends (the stream emits it on the next tick)
    await new Promise((r) => process.nextTick(r));
    expect(got).toEqual([JOIN_MAX_BYTES]);
    await nextTurn();
    expect(got).toEqual([JOIN_MAX_BYTES, 64 * 1024]);
  });

  it('joins every turn into the same scratch while each join is read at once: no new buffer per turn', async () => {
    const conn = fakeConnection();
    const s = new SessionSocket(conn, { maxUnsentBytes: 1024 * 1024 });
    const seen: Array<{ buffer: ArrayBufferLike; first: number[] }> = [];
    // a reader like node's stream bridge: it takes what it needs while the event lasts
    s.on('data', (c: Buffer) =>
      seen.push({ buffer: c.buffer, first: [0, 1, 2, 3].map((i) => c[i * 16 * 1024] ?? -1) }),
    );
    for (const turn of [0, 1]) {
      for (let i = 0; i < 4; i++) conn.emit('data', Buffer.alloc(16 * 1024, turn * 4 + i));
      await nextTurn();
    }
    expect(seen.map((x) => x.first)).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(seen[1]?.buffer === seen[0]?.buffer).toBe(true);
  });

  it('never writes over a join the session has not read yet: a session that stopped reading gets every turn intact', async () => {
    const conn = fakeConnection();
    const s = new SessionSocket(conn, { maxUnsentBytes: 1024 * 1024 });
    s.pause(); // as node:http2 does while it cannot take more
    for (const turn of [0, 1, 2]) {
      for (let i = 0; i < 4; i++) conn.emit('data', Buffer.alloc(1024, turn * 4 + i));
      await nextTurn();
    }
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(Buffer.from(c)));
    s.resume();
    await nextTurn();
    const all = Buffer.concat(got);
    expect(all.length).toBe(12 * 1024);
    expect(Array.from({ length: 12 }, (_, i) => all[i * 1024])).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    ]);
  });

  it('hands on what it holds before the end of the connection', async () => {
    const conn = fakeConnection();
    const s = new SessionSocket(conn, { maxUnsentBytes: 1024 * 1024 });
    const got: string[] = [];
    s.on('data', (c: Buffer) => got.push(c.toString()));
    const ended = once(s, 'end');
    conn.emit('data', Buffer.from('last '));
    conn.emit('data', Buffer.from('words'));
    conn.emit('end');
    await ended;
    expect(got.join('')).toBe('last words');
  });
});
