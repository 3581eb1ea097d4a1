// The relay's buffer towards a tunnel stream (src/tunnel/relay-buffer.ts): Node still honours the
// raised mark on an HTTP/2 client stream, a relay then reads a whole TLS read (64 KiB) without
// pausing, and a stream that is never drained still bounds what the relay queues.
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  createServer,
  type Http2Server,
} from 'node:http2';
import { Readable, Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { RELAY_BUFFER_BYTES, setRelayBuffer } from '../../src/tunnel/relay-buffer.ts';

const KiB = 1024;

describe('setRelayBuffer on an HTTP/2 client stream', () => {
  let server: Http2Server | undefined;
  let session: ClientHttp2Session | undefined;
  afterEach(async () => {
    session?.destroy();
    session = undefined;
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  /** A CONNECT stream to a local h2 server that accepts it and never reads. */
  async function openStream(): Promise<ClientHttp2Stream> {
    const srv = createServer();
    server = srv;
    srv.on('stream', (s) => s.respond({ ':status': 200 }));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    const client = connect(`http://127.0.0.1:${port}`);
    session = client;
    const stream = client.request({ ':method': 'CONNECT', ':authority': 'target:1' }, { endStream: false });
    await new Promise((r) => stream.once('response', r));
    return stream;
  }

  /** What write() returns for four 16 KiB chunks written in one tick (one TLS read's worth). */
  const writeOneRead = (s: Writable): boolean[] => [0, 1, 2, 3].map(() => s.write(Buffer.alloc(16 * KiB)));

  it('lets one 64 KiB read in without asking the relay to pause', async () => {
    const stream = await openStream();
    setRelayBuffer(stream);
    expect(stream.writableHighWaterMark).toBe(RELAY_BUFFER_BYTES);
    expect(writeOneRead(stream)).toEqual([true, true, true, true]);
  });

  it("without it, Node's default mark asks the relay to pause on every such read", async () => {
    const stream = await openStream();
    expect(stream.writableHighWaterMark).toBeLessThanOrEqual(64 * KiB);
    expect(writeOneRead(stream)).toContain(false);
  });

  it('never lowers a mark that is already higher', () => {
    const w = new Writable({ highWaterMark: 4 * RELAY_BUFFER_BYTES, write: (_c, _e, cb) => cb() });
    setRelayBuffer(w);
    expect(w.writableHighWaterMark).toBe(4 * RELAY_BUFFER_BYTES);
  });
});

describe('a relay into a stream that is never drained', () => {
  it('stops reading its source once the mark is queued: the bytes held stay bounded', async () => {
    const stalled = new Writable({ write: () => {} }); // never calls back: a cluster that stopped reading
    setRelayBuffer(stalled);
    let pulled = 0;
    const source = new Readable({
      read() {
        pulled += 16 * KiB;
        this.push(Buffer.alloc(16 * KiB));
      },
    });
    source.pipe(stalled);
    const deadline = Date.now() + 5_000;
    while (!source.isPaused() && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(source.isPaused()).toBe(true);
    // queued in the stream, plus at most the source's own buffer (its high-water mark) above it
    expect(stalled.writableLength).toBeLessThanOrEqual(RELAY_BUFFER_BYTES + 16 * KiB);
    expect(pulled).toBeLessThanOrEqual(RELAY_BUFFER_BYTES + source.readableHighWaterMark + 32 * KiB);
    source.destroy();
    stalled.destroy();
  });
});
