// konnectivity's Packet and gRPC's message framing (pure): the published field numbers pinned
// against hand-computed protobuf bytes, every packet type round-tripping, and the reassembler's
// behaviour on split, oversize, compressed and malformed input.
import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { defaultGrpcFrontendLimits } from '../../src/proxy-server/grpc-frontend.ts';
import {
  decodePacket,
  encodePacket,
  GrpcFrameError,
  GrpcMessageReader,
  grpcFrame,
  type Packet,
  PacketType,
  proxyMethodPath,
} from '../../src/proxy-server/konnectivity-packet.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const str = (s: string) => Buffer.from(s).toString('hex');

// The test client's own text of the published proto (test/fixtures/konnectivity/client.proto),
// parsed by protobufjs independently of the frontend's descriptor.
const fixtureProto = protobuf.parse(
  readFileSync(new URL('../fixtures/konnectivity/client.proto', import.meta.url), 'utf8'),
).root;
const FixturePacket = fixtureProto.lookupType('Packet');
const fixtureObject = (bytes: Uint8Array) =>
  FixturePacket.toObject(FixturePacket.decode(bytes), { longs: String, enums: Number, bytes: Uint8Array });

const payloadOf: Record<number, keyof Packet> = {
  [PacketType.DIAL_REQ]: 'dialRequest',
  [PacketType.DIAL_RSP]: 'dialResponse',
  [PacketType.CLOSE_REQ]: 'closeRequest',
  [PacketType.CLOSE_RSP]: 'closeResponse',
  [PacketType.DATA]: 'data',
  [PacketType.DIAL_CLS]: 'closeDial',
  [PacketType.DRAIN]: 'drain',
};

/** An int64 as a decimal string anywhere in the range (never 0: proto3 leaves 0 off the wire). */
function randomInt64(): string {
  const n = (BigInt(randomInt(0, 2 ** 32)) << 32n) | BigInt(randomInt(0, 2 ** 32));
  const signed = BigInt.asIntN(64, n);
  return (signed === 0n ? 1n : signed).toString();
}
const randomText = () => randomBytes(randomInt(1, 40)).toString('base64');

/** A Packet of a random type with random, non-default field values. */
function randomPacket(): Packet {
  const type = randomInt(0, 7) as Packet['type'];
  switch (type) {
    case PacketType.DIAL_REQ:
      return { type, dialRequest: { protocol: 'tcp', address: randomText(), random: randomInt64() } };
    case PacketType.DIAL_RSP:
      return { type, dialResponse: { error: randomText(), connectID: randomInt64(), random: randomInt64() } };
    case PacketType.CLOSE_REQ:
      return { type, closeRequest: { connectID: randomInt64() } };
    case PacketType.CLOSE_RSP:
      return { type, closeResponse: { error: randomText(), connectID: randomInt64() } };
    case PacketType.DATA:
      return {
        type,
        data: { connectID: randomInt64(), error: randomText(), data: randomBytes(randomInt(1, 2000)) },
      };
    case PacketType.DIAL_CLS:
      return { type, closeDial: { random: randomInt64() } };
    default:
      return { type: PacketType.DRAIN, drain: {} };
  }
}

describe('Packet encoding', () => {
  it('decodes a DIAL_REQ as a Go client writes it (type 0 omitted): dialRequest=2, protocol=1, address=2, random=3', () => {
    // 12 15 | 0a 03 "tcp" | 12 0c "cluster1:443" | 18 2a
    const bytes = Buffer.from(`1215${'0a03'}${str('tcp')}120c${str('cluster1:443')}182a`, 'hex');
    expect(decodePacket(bytes)).toEqual({
      type: PacketType.DIAL_REQ,
      dialRequest: { protocol: 'tcp', address: 'cluster1:443', random: '42' },
    });
  });

  it('encodes a DIAL_REQ for cluster1:443 to exactly the bytes Go writes (type 0 and other defaults left out)', () => {
    expect(
      hex(
        encodePacket({
          type: PacketType.DIAL_REQ,
          dialRequest: { protocol: 'tcp', address: 'cluster1:443', random: 42 },
        }),
      ),
    ).toBe(`1215${'0a03'}${str('tcp')}120c${str('cluster1:443')}182a`);
    // a DIAL_RSP with no field set still names its payload (an empty message 3)
    expect(hex(encodePacket({ type: PacketType.DIAL_RSP, dialResponse: { error: '', connectID: 0 } }))).toBe(
      '08011a00',
    );
  });

  it('encodes DIAL_RSP, DATA and CLOSE_RSP with the published field numbers', () => {
    // type=1 | dialResponse=3 { connectID=2: 7, random=3: 42 }
    expect(hex(encodePacket({ type: PacketType.DIAL_RSP, dialResponse: { connectID: 7, random: 42 } }))).toBe(
      '08011a041007182a',
    );
    // type=4 | data=4 { connectID=1: 7, data=3: "hi" }
    expect(
      hex(encodePacket({ type: PacketType.DATA, data: { connectID: 7, data: Buffer.from('hi') } })),
    ).toBe(`0804220608071a02${str('hi')}`);
    // type=3 | closeResponse=6 { error=1: "x", connectID=2: 7 }
    expect(
      hex(encodePacket({ type: PacketType.CLOSE_RSP, closeResponse: { error: 'x', connectID: 7 } })),
    ).toBe('080332050a01781007');
  });

  it('round-trips every packet type, int64 ids exact over the whole range (as decimal strings)', () => {
    // a random as Go's konnectivity-client draws it: beyond 2^53, where a double would round it
    const big = '467151740299863296';
    const packets: Packet[] = [
      {
        type: PacketType.DIAL_REQ,
        dialRequest: { protocol: 'tcp', address: 'metrics.c-2:8443', random: big },
      },
      { type: PacketType.DIAL_RSP, dialResponse: { error: 'refused', random: '9223372036854775807' } },
      { type: PacketType.CLOSE_REQ, closeRequest: { connectID: big } },
      { type: PacketType.CLOSE_RSP, closeResponse: { connectID: '3' } },
      { type: PacketType.DATA, data: { connectID: '9', data: randomBytes(1000) } },
      { type: PacketType.DIAL_CLS, closeDial: { random: '-77' } },
      { type: PacketType.DRAIN, drain: {} },
    ];
    for (const p of packets) expect(decodePacket(encodePacket(p))).toEqual(p);
  });

  it('agrees with an independent parse of the published proto text on 500 random packets, both ways', () => {
    for (let i = 0; i < 500; i++) {
      const p = randomPacket();
      const key = payloadOf[p.type] as keyof Packet;
      // ours → theirs
      const theirs = fixtureObject(encodePacket(p));
      expect(theirs[key]).toEqual(p[key]);
      expect(theirs.type ?? 0).toBe(p.type);
      // theirs → ours (the fixture writes type 0 explicitly; decoding must not care)
      const bytes = FixturePacket.encode(FixturePacket.fromObject(p)).finish();
      expect(decodePacket(bytes)).toEqual(p);
    }
  });

  it('throws on bytes that are not a Packet', () => {
    expect(() => decodePacket(Buffer.from([0x12, 0x40, 0x0a]))).toThrow();
  });

  it('serves the method the published proto names (no package)', () => {
    expect(proxyMethodPath).toBe('/ProxyService/Proxy');
  });
});

describe('GrpcMessageReader', () => {
  it('reassembles messages from any split of the stream', () => {
    const messages = Array.from({ length: 50 }, (_, i) => randomBytes(i * 37));
    const stream = Buffer.concat(messages.map((m) => grpcFrame(m)));
    for (let round = 0; round < 20; round++) {
      const reader = new GrpcMessageReader(4096);
      const got: Buffer[] = [];
      for (let i = 0; i < stream.length; ) {
        const n = randomInt(1, 300);
        got.push(...reader.push(stream.subarray(i, i + n)));
        i += n;
      }
      expect(got.map(hex)).toEqual(messages.map(hex));
      expect(reader.buffered).toBe(0);
    }
  });

  it('refuses a message over the limit from its header alone, a compressed one and an unknown flag', () => {
    const reader = new GrpcMessageReader(10);
    expect(() => reader.push(Buffer.from([0, 0, 0, 0, 11]))).toThrow(
      expect.objectContaining({
        grpcStatus: 8,
        message: expect.stringMatching(/11 bytes exceeds the limit of 10/),
      }),
    );
    expect(() => new GrpcMessageReader(10).push(Buffer.from([1, 0, 0, 0, 1, 0]))).toThrow(
      expect.objectContaining({ grpcStatus: 3, message: expect.stringMatching(/compressed/) }),
    );
    expect(() => new GrpcMessageReader(10).push(Buffer.from([2, 0, 0, 0, 0]))).toThrow(/bad message flag/);
  });

  it('on random garbage in random splits, yields messages or a GrpcFrameError and never holds more than one message', () => {
    const max = 1024;
    let refused = 0;
    for (let round = 0; round < 300; round++) {
      const reader = new GrpcMessageReader(max);
      // mostly zero flag bytes and small lengths, so that some garbage frames and some does not
      const garbage = Buffer.from(
        Array.from({ length: randomInt(1, 4000) }, () => (randomInt(0, 4) === 0 ? randomInt(0, 256) : 0)),
      );
      try {
        for (let i = 0; i < garbage.length; ) {
          const n = randomInt(1, 700);
          for (const m of reader.push(garbage.subarray(i, i + n))) {
            expect(m.length).toBeLessThanOrEqual(max);
            // a complete message decodes to a Packet or throws; neither hangs nor crashes the reader
            try {
              decodePacket(m);
            } catch {}
          }
          expect(reader.buffered).toBeLessThan(5 + max);
          i += n;
        }
      } catch (err) {
        expect(err).toBeInstanceOf(GrpcFrameError);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(0);
  });

  it('pins the frontend limits', () => {
    expect(defaultGrpcFrontendLimits).toEqual({
      // gRPC's default receive limit, which konnectivity's server keeps
      maxMessageBytes: 4 * 1024 * 1024,
      maxConnectionsPerCall: 64,
      maxPendingDialsPerCall: 16,
      maxDataPacketBytes: 64 * 1024,
      // the HTTP/2 connection window of the CONNECT frontend
      maxPartialBytesPerConnection: 16 * 1024 * 1024,
      idleCallMs: 30_000,
      endedCallGraceMs: 5_000,
    });
  });
});
