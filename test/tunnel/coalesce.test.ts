// Write coalescing (src/tunnel/coalesce.ts): the chunks a source delivers in one tick reach the
// destination as one writev, in order, and a destination that is gone is left alone.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { coalesceWrites } from '../../src/tunnel/coalesce.ts';

/** A destination that records each call its stream machinery makes: one entry per write or writev. */
function recordingSink(): { sink: Writable; calls: Buffer[][] } {
  const calls: Buffer[][] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      calls.push([chunk]);
      cb();
    },
    writev(chunks, cb) {
      calls.push(chunks.map((c) => c.chunk as Buffer));
      cb();
    },
  });
  return { sink, calls };
}

/** Pipes a fresh source into `sink` (coalesced or not) and pushes `chunks` in one tick. */
async function relayInOneTick(sink: Writable, chunks: Buffer[], coalesce: boolean): Promise<void> {
  const src = new Readable({ read() {} });
  if (coalesce) coalesceWrites(src, sink);
  src.pipe(sink);
  await new Promise((r) => setImmediate(r)); // pipe() starts the flow on the next tick
  for (const c of chunks) src.push(c);
  await new Promise((r) => setImmediate(r));
}

describe('coalesceWrites', () => {
  const chunks = ['a', 'bb', 'ccc', 'dddd'].map((s) => Buffer.from(s));

  it('writes the chunks of one tick with one writev, in order', async () => {
    const { sink, calls } = recordingSink();
    await relayInOneTick(sink, chunks, true);
    expect(calls).toHaveLength(1);
    expect(Buffer.concat(calls[0] as Buffer[]).toString()).toBe('abbcccdddd');
  });

  it('without it, every chunk is a write of its own (what the test above rules out)', async () => {
    const { sink, calls } = recordingSink();
    await relayInOneTick(sink, chunks, false);
    expect(calls).toHaveLength(4);
  });

  it('writes each tick again: chunks of a later tick are a writev of their own', async () => {
    const { sink, calls } = recordingSink();
    const src = new Readable({ read() {} });
    coalesceWrites(src, sink);
    src.pipe(sink);
    await new Promise((r) => setImmediate(r));
    src.push(Buffer.from('1'));
    src.push(Buffer.from('2'));
    await new Promise((r) => setImmediate(r));
    src.push(Buffer.from('3'));
    src.push(Buffer.from('4'));
    await new Promise((r) => setImmediate(r));
    expect(calls.map((c) => Buffer.concat(c).toString())).toEqual(['12', '34']);
  });

  it('leaves a destroyed destination alone', async () => {
    const { sink, calls } = recordingSink();
    const src = new Readable({ read() {} });
    coalesceWrites(src, sink);
    src.on('data', () => {});
    sink.destroy();
    await new Promise((r) => setImmediate(r));
    src.push(Buffer.from('x'));
    await new Promise((r) => setImmediate(r));
    expect(sink.writableCorked).toBe(0);
    expect(calls).toHaveLength(0);
  });
});

describe('coalesceWrites over TCP', () => {
  let server: Server | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    sockets.length = 0;
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  it('delivers every byte in order to a real socket', async () => {
    const received: Buffer[] = [];
    let ended: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const srv = createServer((s) => {
      sockets.push(s);
      s.on('data', (c: Buffer) => received.push(c));
      s.on('end', () => ended());
    });
    server = srv;
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    const client = connect(port, '127.0.0.1');
    sockets.push(client);
    await new Promise((r) => client.once('connect', r));
    const src = new Readable({ read() {} });
    coalesceWrites(src, client);
    src.pipe(client);
    await new Promise((r) => setImmediate(r));
    const sent: Buffer[] = [];
    for (let tick = 0; tick < 50; tick++) {
      for (let i = 0; i < 8; i++) {
        const c = Buffer.alloc(16 * 1024, (tick * 8 + i) % 251);
        sent.push(c);
        src.push(c);
      }
      await new Promise((r) => setImmediate(r));
    }
    src.push(null);
    await done;
    expect(Buffer.concat(received).equals(Buffer.concat(sent))).toBe(true);
  });
});
