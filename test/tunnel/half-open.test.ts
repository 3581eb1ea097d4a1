// The half-open timer of a tunnel stream must not outlive the stream. A consumer that destroys the
// stream (the CONNECT frontend does when its caller hangs up) used to leave node's stream timer
// armed, and node's timer list then held the stream, its listeners and what they hold until the
// timer ran out (60 s by default): ≈ 7 KB per closed tunnel in the proxy-server. Real node:http2
// client and server on loopback; a forced GC tells whether the closed stream is still held.
import { once } from 'node:events';
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  createServer,
  type Http2Server,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetWhenHalfOpen } from '../../src/tunnel/half-open.ts';
import { pollUntil } from '../../src/wait.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** What a half-open stream may hold: big enough that a retained one would show in a heap too. */
const HELD_BYTES = 1024 * 1024;

let server: Http2Server;
let client: ClientHttp2Session;
const serverStreams: ServerHttp2Stream[] = [];

beforeEach(async () => {
  server = createServer();
  server.on('stream', (stream) => {
    serverStreams.push(stream);
    stream.on('error', () => {});
    stream.respond({ ':status': 200 });
    // Keeps its side open: the client's stream stays half-open once the client ends its side.
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  client = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  client.on('error', () => {});
  await once(client, 'connect');
});

afterEach(async () => {
  client?.destroy();
  for (const s of serverStreams.splice(0)) s.destroy();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
});

/**
 * Opens a stream with the half-open timer on, ends our side (armed), then destroys the stream the
 * way a consumer whose socket closed does. Returns only weak references to the stream and to a
 * buffer one of its listeners holds, as a CONNECT frontend's listener holds its caller's socket.
 */
async function openHalfCloseAndDestroy(timeoutMs: number): Promise<{
  stream: WeakRef<ClientHttp2Stream>;
  held: WeakRef<Buffer>;
}> {
  const stream = client.request({ ':method': 'POST', ':path': '/' }, { endStream: false });
  const held = Buffer.alloc(HELD_BYTES);
  stream.on('error', () => held.length);
  await once(stream, 'response');
  resetWhenHalfOpen(stream, timeoutMs);
  stream.end();
  await once(stream, 'finish'); // our side has ended: the half-open timer is armed
  stream.resume();
  const closed = once(stream, 'close');
  stream.destroy();
  await closed;
  return { stream: new WeakRef(stream), held: new WeakRef(held) };
}

describe('resetWhenHalfOpen', () => {
  it('lets go of a half-open stream that a consumer destroys long before the timeout (nothing held until the timer would run out)', async () => {
    const refs = await openHalfCloseAndDestroy(60_000);
    await pollUntil(
      async () => {
        // WeakRefs read in the current job stay alive until it ends: collect on a fresh one.
        await new Promise((r) => setImmediate(r));
        gc();
        return refs.stream.deref() === undefined && refs.held.deref() === undefined;
      },
      {
        timeoutMs: 5000,
        intervalMs: 50,
        description: 'the destroyed stream and what its listeners hold to be collected',
      },
    );
    expect(refs.stream.deref()).toBeUndefined();
  });

  it('still resets a stream that stays half-open and silent past the timeout', async () => {
    const stream = client.request({ ':method': 'POST', ':path': '/' }, { endStream: false });
    stream.on('error', () => {});
    await once(stream, 'response');
    const sides: string[] = [];
    resetWhenHalfOpen(stream, 200, (side) => sides.push(side));
    stream.resume();
    const started = Date.now();
    stream.end();
    await once(stream, 'close');
    expect(sides).toEqual(['local']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });
});
