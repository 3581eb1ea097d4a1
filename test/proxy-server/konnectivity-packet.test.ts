// konnectivity's Packet and gRPC's message framing (pure): the published field numbers pinned
// against hand-computed protobuf bytes, every packet type round-tripping, and the reassembler's
// behaviour on split, oversize, compressed and malformed input.
import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultGrpcFrontendLimits } from '../../src/proxy-server/grpc-frontend.ts';
import {
  decodePacket,
  encodePacket,
  GrpcMessageReader,
  grpcFrame,
  type Packet,
  PacketType,
  proxyMethodPath,
} from '../../src/proxy-server/konnectivity-packet.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const str = (s: string) => Buffer.from(s).toString('hex');

describe('Packet encoding', () => {
  it('decodes a DIAL_REQ as a Go client writes it (type 0 omitted): dialRequest=2, protocol=1, address=2, random=3', () => {
    // 12 15 | 0a 03 "tcp" | 12 0c "cluster1:443" | 18 2a
    const bytes = Buffer.from(`1215${'0a03'}${str('tcp')}120c${str('cluster1:443')}182a`, 'hex');
    expect(decodePacket(bytes)).toEqual({
      type: PacketType.DIAL_REQ,
      dialRequest: { protocol: 'tcp', address: 'cluster1:443', random: '42' },
    });
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

  it('pins the frontend limits: 4 MiB messages (gRPC default), 64 connections per call, 64 KiB DATA packets', () => {
    expect(defaultGrpcFrontendLimits).toEqual({
      maxMessageBytes: 4 * 1024 * 1024,
      maxConnectionsPerCall: 64,
      maxDataPacketBytes: 64 * 1024,
    });
  });
});
