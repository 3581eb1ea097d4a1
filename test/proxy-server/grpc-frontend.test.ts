// One `Proxy` call of the gRPC frontend against a stand-in HTTP/2 stream (whose write answers and
// pause state the test controls) and duplexPair targets: backpressure both ways, DATA split into
// packets, and the end of a call — deterministic where the integration test could only sample.
import { EventEmitter } from 'node:events';
import type { ServerHttp2Stream } from 'node:http2';
import { type Duplex, duplexPair } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { logger } from '../../src/log.ts';
import type { TunnelOutcome } from '../../src/proxy-server/connect-frontend.ts';
import { GrpcFrontend, type GrpcFrontendLimits } from '../../src/proxy-server/grpc-frontend.ts';
import {
  decodePacket,
  encodePacket,
  GrpcMessageReader,
  grpcFrame,
  type Packet,
  PacketType,
} from '../../src/proxy-server/konnectivity-packet.ts';
import { pollUntil } from '../../src/wait.ts';

/** The server side of one gRPC call, as much of ServerHttp2Stream as the frontend uses. */
class StandInStream extends EventEmitter {
  /** what write() answers: false = the client is not reading */
  writeReturns = true;
  paused = false;
  headersSent = false;
  destroyed = false;
  closed = false;
  writableEnded = false;
  readableEnded = false;
  trailers: Record<string, string> | undefined;
  readonly session = { socket: {} };
  private readonly reader = new GrpcMessageReader(16 * 1024 * 1024);
  readonly packets: Packet[] = [];

  respond(): void {
    this.headersSent = true;
  }
  write(frame: Buffer): boolean {
    for (const m of this.reader.push(frame)) this.packets.push(decodePacket(m));
    return this.writeReturns;
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  end(): void {
    this.writableEnded = true;
    this.emit('wantTrailers');
  }
  sendTrailers(t: Record<string, string>): void {
    this.trailers = t;
  }
  close(): void {
    this.closed = true;
  }

  /** The client sends packets. */
  send(...packets: Packet[]): void {
    this.emit('data', Buffer.concat(packets.map((p) => grpcFrame(encodePacket(p)))));
  }
  /** The client ends its side. */
  clientEnd(): void {
    this.readableEnded = true;
    this.emit('end');
  }
}

/** A call on a stand-in stream whose dials hand the frontend one end of a pair; `far` holds the other ends. */
function startCall(limits: Partial<GrpcFrontendLimits> = {}) {
  const far: Duplex[] = [];
  const frontend = new GrpcFrontend({
    open: async (): Promise<TunnelOutcome> => {
      const [near, other] = duplexPair();
      far.push(other);
      return { upstream: near };
    },
    limits,
    log: logger('grpc-frontend-test'),
  });
  const stream = new StandInStream();
  frontend.serve(stream as unknown as ServerHttp2Stream, {});
  return { stream, far };
}

const waitFor = (check: () => boolean, description: string) =>
  pollUntil(check, { timeoutMs: 2000, intervalMs: 5, description });

async function dial(stream: StandInStream, random: number): Promise<string> {
  stream.send({
    type: PacketType.DIAL_REQ,
    dialRequest: { protocol: 'tcp', address: 'cluster1:443', random },
  });
  const rsp = await pollUntil(
    () =>
      stream.packets.find((p) => p.type === PacketType.DIAL_RSP && p.dialResponse?.random === String(random)),
    { timeoutMs: 2000, intervalMs: 5, description: `DIAL_RSP ${random}` },
  );
  return String(rsp.dialResponse?.connectID);
}

describe('gRPC frontend call', () => {
  it('stops reading the client while a target does not read, and reads on once it drains', async () => {
    const { stream, far } = startCall();
    const id = await dial(stream, 1);
    const target = far[0] as Duplex;
    // more than the target's buffer (64 KiB) in one client packet: the target is now backed up
    stream.send({ type: PacketType.DATA, data: { connectID: id, data: Buffer.alloc(100 * 1024, 7) } });
    expect(stream.paused).toBe(true);
    let got = 0;
    target.on('data', (d: Buffer) => {
      got += d.length;
    });
    await waitFor(
      () => got === 100 * 1024 && !stream.paused,
      'the client read again once the target drained',
    );
  });

  it('pauses every target while the client does not read, and resumes them (and reading) on drain', async () => {
    const { stream, far } = startCall();
    const [a, b] = [await dial(stream, 1), await dial(stream, 2)];
    const [ta, tb] = far as [Duplex, Duplex];
    stream.writeReturns = false;
    ta.write(Buffer.from('fills the stream'));
    await waitFor(() => stream.packets.some((p) => p.type === PacketType.DATA), 'the first DATA written');
    expect(stream.paused).toBe(true);
    // the frontend stopped reading both targets: what they write now stays with them
    const before = stream.packets.length;
    tb.write(Buffer.from('waits'));
    // a turn of the event loop: a target still read would have sent its DATA by now
    await new Promise((r) => setImmediate(r));
    expect(stream.packets.length).toBe(before);
    stream.writeReturns = true;
    stream.emit('drain');
    expect(stream.paused).toBe(false);
    await waitFor(
      () => stream.packets.some((p) => p.type === PacketType.DATA && p.data?.connectID === b),
      "b's bytes sent after the drain",
    );
    expect(stream.packets.filter((p) => p.type === PacketType.DATA).map((p) => p.data?.connectID)).toEqual([
      a,
      b,
    ]);
  });

  it('splits what a target sends into DATA packets of at most maxDataPacketBytes', async () => {
    const { stream, far } = startCall({ maxDataPacketBytes: 1000 });
    const id = await dial(stream, 1);
    (far[0] as Duplex).write(Buffer.alloc(2500, 1));
    await waitFor(
      () => stream.packets.filter((p) => p.type === PacketType.DATA).length === 3,
      'three DATA packets',
    );
    const sizes = stream.packets.filter((p) => p.type === PacketType.DATA).map((p) => p.data?.data?.length);
    expect(sizes).toEqual([1000, 1000, 500]);
    expect(stream.packets.every((p) => p.type !== PacketType.DATA || p.data?.connectID === id)).toBe(true);
  });

  it('when the client ends the call: every target closed, CLOSE_RSP for each, then grpc-status 0', async () => {
    const { stream, far } = startCall();
    const ids = [await dial(stream, 1), await dial(stream, 2)];
    const ended = far.map((t) => new Promise<void>((r) => t.once('end', () => r())));
    for (const t of far) t.resume();
    stream.clientEnd();
    await Promise.all(ended);
    await waitFor(() => stream.trailers !== undefined, 'the trailers');
    expect(stream.trailers).toEqual({ 'grpc-status': '0' });
    const closes = stream.packets
      .filter((p) => p.type === PacketType.CLOSE_RSP)
      .map((p) => p.closeResponse?.connectID);
    expect(closes.sort()).toEqual(ids.sort());
    // the client ended its side: no reset needed
    expect(stream.closed).toBe(false);
  });
});
