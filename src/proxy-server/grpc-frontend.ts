// konnectivity's gRPC frontend (`ProxyService.Proxy`, a bidirectional stream of Packets) on the
// proxy-server's CONNECT frontend port: a gRPC call is an HTTP/2 POST to /ProxyService/Proxy on a
// connection that chose h2 (connect-frontend-h2.ts routes it here), so konnectivity-client,
// cluster-gateway's konnectivity egress and clusteradm's `proxy` verbs reach clusters unchanged.
//
// Per call: DIAL_REQ{protocol "tcp", address, random} goes through the frontend's openTunnel — the
// same authentication (the connection's verified proxy-client certificate, or `authorization` /
// `proxy-authorization: Bearer <hub token>` metadata), refusal of managed-cluster identities,
// per-cluster authorization and per-caller limits as CONNECT; the address is a CONNECT authority
// (`<cluster>:443` …). The answer is DIAL_RSP{random, connectID} or DIAL_RSP{random, error}; a
// refusal leaves the call usable. Then DATA{connectID, data} both ways; CLOSE_REQ{connectID} closes
// that connection and is answered CLOSE_RSP{connectID}; a target that closes is reported with
// CLOSE_RSP; DIAL_CLS{random} abandons a dial still pending; DRAIN (an agent's hint) is ignored. A
// DATA or CLOSE_REQ for no open connection gets CLOSE_RSP{connectID, error}. When the client ends
// the call, or cancels it, every connection of it is closed; the call ends with grpc-status 0
// (or the status of what went wrong: malformed packet 3, message over the limit 8).
//
// Flow control: each call is an HTTP/2 stream with its own window, so calls never hold each other
// back (konnectivity-client opens one call per connection). Within one call, connections share
// that stream: a target that does not read pauses the whole call until it drains — inherent to
// the protocol, which has no per-connection window.
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.ts';
import type { TunnelOutcome, TunnelRequest } from './connect-frontend.ts';
import {
  decodePacket,
  encodePacket,
  type GrpcFrameError,
  GrpcMessageReader,
  GrpcStatus,
  grpcFrame,
  type Packet,
  PacketType,
} from './konnectivity-packet.ts';

export interface GrpcFrontendLimits {
  /** largest Packet message accepted from a client (bytes) */
  maxMessageBytes: number;
  /** open plus pending connections one call may hold */
  maxConnectionsPerCall: number;
  /** DATA payload sent to the client per packet, at most (bytes) */
  maxDataPacketBytes: number;
}

export const defaultGrpcFrontendLimits: GrpcFrontendLimits = {
  // gRPC's default receive limit (grpc-go's, which konnectivity's server keeps): a client writing
  // one large buffer sends it as one DATA packet
  maxMessageBytes: 4 * 1024 * 1024,
  maxConnectionsPerCall: 64,
  maxDataPacketBytes: 64 * 1024,
};

export interface GrpcFrontendOptions {
  open: (req: TunnelRequest) => Promise<TunnelOutcome>;
  limits?: Partial<GrpcFrontendLimits>;
  log: Logger;
}

/** Whether an HTTP/2 request is a gRPC call (POST, content-type application/grpc[+proto]). */
export function isGrpcRequest(headers: IncomingHttpHeaders): boolean {
  const type = headers['content-type'] ?? '';
  return headers[':method'] === 'POST' && /^application\/grpc(\+proto)?(;|$)/.test(type);
}

/** Ends a call at once with a status (a trailers-only response). */
export function grpcTrailersOnly(stream: ServerHttp2Stream, status: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(status),
      'grpc-message': encodeURIComponent(message.slice(0, 500)),
    },
    { endStream: true },
  );
}

interface Connection {
  upstream: Duplex;
}

export class GrpcFrontend {
  readonly limits: GrpcFrontendLimits;
  private readonly opts: GrpcFrontendOptions;

  constructor(opts: GrpcFrontendOptions) {
    this.opts = opts;
    this.limits = { ...defaultGrpcFrontendLimits, ...opts.limits };
  }

  /** Serves one call (the caller routed `POST /ProxyService/Proxy` here). */
  serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    new ProxyCall(stream, headers, this.opts, this.limits).start();
  }
}

/** One `Proxy` call: its connections, the packets in and out. */
class ProxyCall {
  private readonly reader: GrpcMessageReader;
  /** connectID (decimal) → connection */
  private readonly connections = new Map<string, Connection>();
  /** random (decimal, echoed exactly) of a DIAL_REQ whose tunnel is being opened → cancelled by DIAL_CLS? */
  private readonly pending = new Map<string, { cancelled: boolean }>();
  private nextConnectId = 1;
  private ended = false;
  /** upstreams paused because the call's stream is backed up */
  private blocked = false;
  /** upstreams whose writes are backed up (the call's stream is paused while any is) */
  private readonly slowTargets = new Set<Duplex>();
  private clientEnded = false;
  private readonly stream: ServerHttp2Stream;
  private readonly headers: IncomingHttpHeaders;
  private readonly opts: GrpcFrontendOptions;
  private readonly limits: GrpcFrontendLimits;

  constructor(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    opts: GrpcFrontendOptions,
    limits: GrpcFrontendLimits,
  ) {
    this.stream = stream;
    this.headers = headers;
    this.opts = opts;
    this.limits = limits;
    this.reader = new GrpcMessageReader(limits.maxMessageBytes);
  }

  start(): void {
    const { stream } = this;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => {
      const status = this.status ?? { code: GrpcStatus.OK, message: '' };
      stream.sendTrailers({
        'grpc-status': String(status.code),
        ...(status.message ? { 'grpc-message': encodeURIComponent(status.message.slice(0, 500)) } : {}),
      });
    });
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('end', () => {
      this.clientEnded = true;
      this.finish();
    });
    stream.on('drain', () => this.unblock());
    stream.once('close', () => this.closeAll());
  }

  private status: { code: number; message: string } | undefined;

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    let messages: Buffer[];
    try {
      messages = this.reader.push(chunk);
    } catch (err) {
      const e = err as GrpcFrameError;
      this.fail(e.grpcStatus ?? GrpcStatus.INTERNAL, e.message);
      return;
    }
    for (const message of messages) {
      let packet: Packet;
      try {
        packet = decodePacket(message);
      } catch (err) {
        this.fail(GrpcStatus.INVALID_ARGUMENT, `malformed Packet: ${(err as Error).message}`);
        return;
      }
      this.onPacket(packet);
      if (this.ended) return;
    }
  }

  private onPacket(p: Packet): void {
    switch (p.type ?? PacketType.DIAL_REQ) {
      case PacketType.DIAL_REQ:
        void this.dial(p.dialRequest ?? {});
        break;
      case PacketType.DATA: {
        const c = this.connectionOr(String(p.data?.connectID ?? 0));
        const data = p.data?.data;
        if (c && data && data.length > 0 && !c.upstream.write(data)) this.slowTarget(c.upstream);
        break;
      }
      case PacketType.CLOSE_REQ:
        // its close answers CLOSE_RSP
        this.connectionOr(String(p.closeRequest?.connectID ?? 0))?.upstream.destroy();
        break;
      case PacketType.DIAL_CLS: {
        const pending = this.pending.get(String(p.closeDial?.random ?? 0));
        if (pending) pending.cancelled = true;
        break;
      }
      case PacketType.DRAIN:
        break;
      default:
        this.fail(GrpcStatus.INVALID_ARGUMENT, `a client does not send packets of type ${p.type}`);
    }
  }

  /** The open connection `id`, or undefined after answering CLOSE_RSP with an error. */
  private connectionOr(id: string): Connection | undefined {
    const c = this.connections.get(id);
    if (!c)
      this.send({
        type: PacketType.CLOSE_RSP,
        closeResponse: { connectID: id, error: `no connection ${id}` },
      });
    return c;
  }

  private async dial(req: NonNullable<Packet['dialRequest']>): Promise<void> {
    const random = String(req.random ?? 0);
    const refuse = (error: string) =>
      this.send({ type: PacketType.DIAL_RSP, dialResponse: { random, error } });
    if (req.protocol && req.protocol !== 'tcp')
      return refuse(`protocol "${req.protocol}" is not served; only tcp`);
    if (this.pending.has(random)) return refuse(`a dial with random ${random} is already pending`);
    if (this.connections.size + this.pending.size >= this.limits.maxConnectionsPerCall)
      return refuse(`at most ${this.limits.maxConnectionsPerCall} connections per call`);
    const pending = { cancelled: false };
    this.pending.set(random, pending);
    let outcome: TunnelOutcome;
    try {
      outcome = await this.opts.open({
        authority: req.address ?? '',
        tlsSocket: this.stream.session?.socket as TLSSocket,
        proxyAuthorization: this.headers['proxy-authorization'] ?? this.headers.authorization,
      });
    } catch (err) {
      outcome = { refusal: { status: 500, text: 'Internal Server Error', reason: (err as Error).message } };
    } finally {
      this.pending.delete(random);
    }
    if ('refusal' in outcome) {
      const r = outcome.refusal;
      const code = r.headers?.['tether-error'];
      return refuse(`${r.status} ${r.text}: ${r.reason}${code ? ` (${code})` : ''}`);
    }
    const { upstream } = outcome;
    if (pending.cancelled || this.ended) {
      upstream.destroy();
      return;
    }
    const connectID = this.nextConnectId++;
    const c: Connection = { upstream };
    this.connections.set(String(connectID), c);
    upstream.on('error', () => {});
    upstream.on('data', (chunk: Buffer) => {
      for (let i = 0; i < chunk.length; i += this.limits.maxDataPacketBytes)
        this.send({
          type: PacketType.DATA,
          data: { connectID, data: chunk.subarray(i, i + this.limits.maxDataPacketBytes) },
        });
    });
    upstream.on('drain', () => this.targetDrained(upstream));
    // the target finished sending (TCP FIN): the protocol has no half-close, so the connection closes
    upstream.once('end', () => upstream.end());
    upstream.once('close', () => {
      this.connections.delete(String(connectID));
      this.targetDrained(upstream);
      this.send({ type: PacketType.CLOSE_RSP, closeResponse: { connectID } });
      if (this.clientEnded) this.finish();
    });
    this.send({ type: PacketType.DIAL_RSP, dialResponse: { random, connectID } });
    if (this.blocked) upstream.pause();
  }

  /** Writes a packet; while the call's stream is backed up, every target of the call pauses. */
  private send(p: Packet): void {
    if (this.ended || this.stream.destroyed || this.stream.writableEnded) return;
    if (!this.stream.write(grpcFrame(encodePacket(p))) && !this.blocked) {
      this.blocked = true;
      for (const c of this.connections.values()) c.upstream.pause();
    }
  }

  private unblock(): void {
    if (!this.blocked) return;
    this.blocked = false;
    for (const c of this.connections.values()) c.upstream.resume();
  }

  private slowTarget(upstream: Duplex): void {
    this.slowTargets.add(upstream);
    this.stream.pause();
  }

  private targetDrained(upstream: Duplex): void {
    if (this.slowTargets.delete(upstream) && this.slowTargets.size === 0) this.stream.resume();
  }

  /** The client ended its side: close what is open, then end with the status. */
  private finish(): void {
    if (this.ended) return;
    if (this.connections.size > 0) {
      for (const c of this.connections.values()) c.upstream.destroy();
      return; // each close sends CLOSE_RSP and calls finish() again
    }
    this.ended = true;
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
  }

  private fail(code: number, message: string): void {
    this.opts.log.debug({ code, message }, 'gRPC call ended');
    this.status = { code, message };
    this.ended = true;
    this.closeAll();
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
  }

  private closeAll(): void {
    for (const p of this.pending.values()) p.cancelled = true;
    for (const c of this.connections.values()) c.upstream.destroy();
    this.connections.clear();
    this.slowTargets.clear();
  }
}
