// konnectivity's `ProxyService` wire format: the Packet message of apiserver-network-proxy's
// published client proto (field numbers and types as published; protobuf encoding by protobufjs),
// and gRPC's length-prefixed message framing (1 flag byte, 4-byte big-endian length). The framing
// is written here because gRPC is served on the HTTP/2 sessions the CONNECT frontend already owns
// (grpc-js owns its sessions and cannot share one); it is five bytes of header and a bounded
// reassembly buffer. Pure: no I/O, nothing about connections or callers.
import Long from 'long';
import protobuf from 'protobufjs/light.js';

// int64 ids must survive exactly: Go clients draw `random` from the whole int64 range
protobuf.util.Long = Long;
protobuf.configure();

export const PacketType = {
  DIAL_REQ: 0,
  DIAL_RSP: 1,
  CLOSE_REQ: 2,
  CLOSE_RSP: 3,
  DATA: 4,
  DIAL_CLS: 5,
  DRAIN: 6,
} as const;
export type PacketTypeValue = (typeof PacketType)[keyof typeof PacketType];

/**
 * An int64 as decoded: a decimal string, exact over the whole range (Go clients draw `random` from
 * all of int64); written from a string or a safe integer.
 */
export type Int64 = string | number;

/** A Packet as decoded (int64 fields as decimal strings). */
export interface Packet {
  type: PacketTypeValue;
  dialRequest?: { protocol?: string; address?: string; random?: Int64 };
  dialResponse?: { error?: string; connectID?: Int64; random?: Int64 };
  data?: { connectID?: Int64; error?: string; data?: Uint8Array };
  closeRequest?: { connectID?: Int64 };
  closeResponse?: { error?: string; connectID?: Int64 };
  closeDial?: { random?: Int64 };
  drain?: Record<string, never>;
}

/** The gRPC method the frontend serves (the proto declares no package). */
export const proxyMethodPath = '/ProxyService/Proxy';

const root = protobuf.Root.fromJSON({
  nested: {
    PacketType: { values: { ...PacketType } },
    Packet: {
      oneofs: {
        payload: {
          oneof: [
            'dialRequest',
            'dialResponse',
            'data',
            'closeRequest',
            'closeResponse',
            'closeDial',
            'drain',
          ],
        },
      },
      fields: {
        type: { type: 'PacketType', id: 1 },
        dialRequest: { type: 'DialRequest', id: 2 },
        dialResponse: { type: 'DialResponse', id: 3 },
        data: { type: 'Data', id: 4 },
        closeRequest: { type: 'CloseRequest', id: 5 },
        closeResponse: { type: 'CloseResponse', id: 6 },
        closeDial: { type: 'CloseDial', id: 7 },
        drain: { type: 'Drain', id: 8 },
      },
    },
    DialRequest: {
      fields: {
        protocol: { type: 'string', id: 1 },
        address: { type: 'string', id: 2 },
        random: { type: 'int64', id: 3 },
      },
    },
    DialResponse: {
      fields: {
        error: { type: 'string', id: 1 },
        connectID: { type: 'int64', id: 2 },
        random: { type: 'int64', id: 3 },
      },
    },
    CloseRequest: { fields: { connectID: { type: 'int64', id: 1 } } },
    CloseResponse: {
      fields: { error: { type: 'string', id: 1 }, connectID: { type: 'int64', id: 2 } },
    },
    CloseDial: { fields: { random: { type: 'int64', id: 1 } } },
    Drain: { fields: {} },
    Data: {
      fields: {
        connectID: { type: 'int64', id: 1 },
        error: { type: 'string', id: 2 },
        data: { type: 'bytes', id: 3 },
      },
    },
  },
});
const PacketMessage = root.lookupType('Packet');

/** Whether a field value is proto3's default, which Go's encoder leaves off the wire. */
function isDefault(v: unknown): boolean {
  return v === 0 || v === '' || v === '0' || (v instanceof Uint8Array && v.length === 0);
}

/**
 * Packet → protobuf bytes, as Go's encoder writes them (proto3 defaults left out, so a packet
 * encodes to the same bytes konnectivity's own server would send).
 */
export function encodePacket(p: Packet): Uint8Array {
  const object: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(p)) {
    if (key === 'type') {
      if (!isDefault(value)) object.type = value;
    } else if (value && typeof value === 'object') {
      object[key] = Object.fromEntries(
        Object.entries(value).filter(([, v]) => v !== undefined && !isDefault(v)),
      );
    }
  }
  return PacketMessage.encode(PacketMessage.fromObject(object)).finish();
}

/** protobuf bytes → Packet (int64 as decimal strings, enums as numbers, absent scalars left out); throws when malformed. */
export function decodePacket(bytes: Uint8Array): Packet {
  const message = PacketMessage.decode(bytes);
  const packet = PacketMessage.toObject(message, {
    longs: String,
    enums: Number,
    bytes: Uint8Array,
  }) as Packet;
  // proto3 leaves a zero enum off the wire (DIAL_REQ)
  if (packet.type === undefined) packet.type = PacketType.DIAL_REQ;
  return packet;
}

/** One gRPC message: uncompressed flag, length, payload. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** Why a gRPC message stream cannot be read on (the status to end the call with). */
export class GrpcFrameError extends Error {
  readonly grpcStatus: number;
  constructor(grpcStatus: number, message: string) {
    super(message);
    this.grpcStatus = grpcStatus;
    this.name = 'GrpcFrameError';
  }
}

/** gRPC status codes used by the frontend. */
export const GrpcStatus = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/**
 * Reassembles gRPC messages from DATA chunks: `push` returns the complete messages so far. Messages
 * over `maxMessageBytes` and compressed ones (no grpc-encoding is negotiated) throw GrpcFrameError;
 * at most one partial message (≤ maxMessageBytes + 5) is ever held.
 */
export class GrpcMessageReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly maxMessageBytes: number;

  constructor(maxMessageBytes: number) {
    this.maxMessageBytes = maxMessageBytes;
  }

  push(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const out: Buffer[] = [];
    while (this.pendingBytes >= 5) {
      const head = this.peek(5);
      if (head[0] !== 0)
        throw new GrpcFrameError(
          GrpcStatus.INVALID_ARGUMENT,
          head[0] === 1 ? 'compressed messages are not accepted (no grpc-encoding)' : 'bad message flag',
        );
      const length = head.readUInt32BE(1);
      if (length > this.maxMessageBytes)
        throw new GrpcFrameError(
          GrpcStatus.RESOURCE_EXHAUSTED,
          `message of ${length} bytes exceeds the limit of ${this.maxMessageBytes}`,
        );
      if (this.pendingBytes < 5 + length) break;
      out.push(this.take(5 + length).subarray(5));
    }
    return out;
  }

  /** Bytes of an unfinished message still held. */
  get buffered(): number {
    return this.pendingBytes;
  }

  private peek(n: number): Buffer {
    if ((this.pending[0]?.length ?? 0) < n) this.pending = [Buffer.concat(this.pending)];
    return (this.pending[0] as Buffer).subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.pending.length === 1 ? (this.pending[0] as Buffer) : Buffer.concat(this.pending);
    const taken = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    return taken;
  }
}
