// konnectivity's gRPC frontend (`ProxyService.Proxy`, a bidirectional stream of Packets) on the
// proxy-server's CONNECT frontend port: a gRPC call is an HTTP/2 POST to /ProxyService/Proxy on a
// connection that chose h2 (connect-frontend-h2.ts routes it here), so konnectivity-client,
// cluster-gateway's konnectivity egress and clusteradm's `proxy` verbs reach clusters unchanged.
// gRPC is served by hand over node:http2 (konnectivity-packet.ts frames it) because the port already
// speaks h2 for CONNECT: grpc-js owns its HTTP/2 sessions and cannot share one with another server.
//
// Per call: DIAL_REQ{protocol "tcp", address, random} goes through the frontend's openTunnel — the
// same authentication (the connection's verified proxy-client certificate, or `proxy-authorization`
// / `authorization: Bearer <hub token>` metadata: konnectivity clients authenticate by certificate,
// gRPC clients that carry a token send it as `authorization`), refusal of managed-cluster
// identities, per-cluster authorization and per-caller limits as CONNECT; the address is a CONNECT
// authority (`<cluster>:443` …). The answer is DIAL_RSP{random, connectID} or DIAL_RSP{random,
// error: "<status> <text>: <reason>"}; a refusal leaves the call usable. Then DATA{connectID, data}
// both ways; CLOSE_REQ{connectID} closes that connection and is answered CLOSE_RSP{connectID}; a
// target that closes is reported with CLOSE_RSP; DIAL_CLS{random} abandons a dial still pending (no
// answer, as konnectivity's server gives none). A DATA or CLOSE_REQ for no open connection gets
// CLOSE_RSP{connectID, error} (what konnectivity's agent answers); DATA without a connectID, DRAIN
// and the packets only a server sends are ignored (what konnectivity's server does). When the
// client ends the call, or cancels it, every connection of it is closed; the call ends with
// grpc-status 0, or with the status of what went wrong: a malformed packet 3 (INVALID_ARGUMENT), a
// message over the limit 8 (RESOURCE_EXHAUSTED), a call left without connections 14 (UNAVAILABLE).
//
// Flow control: each call is an HTTP/2 stream with its own window, so calls never hold each other
// back (konnectivity-client opens one call per connection). Within one call, connections share that
// stream: a target that does not read stops the frontend reading the call, and a client that does
// not read the call pauses every target of it — head-of-line blocking inherent to the protocol,
// which has no per-connection window. What a peer can make the frontend hold is bounded: one
// partial message per call (≤ maxMessageBytes), partial messages across one HTTP/2 connection
// (maxPartialBytesPerConnection, the same bound as that connection's flow-control window), answers
// the client is not reading (reading stops while its stream is backed up), connections and pending
// dials per call, how long a call may hold no connection at all (idleCallMs), and how long a
// client may keep its side of a call the frontend has ended (endedCallGraceMs).
import { constants, type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../log.ts';
import { noteRelayedBytes } from '../tunnel/relay-gc.ts';
import type { TunnelOutcome, TunnelRequest } from './connect-frontend.ts';
import {
  decodePacket,
  encodePacket,
  GrpcFrameError,
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
  /** dials one call may have pending at once (each is a TokenReview / SubjectAccessReview and a dial) */
  maxPendingDialsPerCall: number;
  /** DATA payload sent to the client per packet, at most (bytes) */
  maxDataPacketBytes: number;
  /** partial (not yet complete) messages held across all calls of one HTTP/2 connection (bytes) */
  maxPartialBytesPerConnection: number;
  /** a call with no connection open or being dialed for this long is ended (ms) */
  idleCallMs: number;
  /** a call the frontend ended whose client still has not ended its side is reset after this long (ms) */
  endedCallGraceMs: number;
}

export const defaultGrpcFrontendLimits: GrpcFrontendLimits = {
  // gRPC's default receive limit (grpc-go's, which konnectivity's server keeps): konnectivity-client
  // sends each conn.Write as one DATA packet, so a client writing one large buffer needs it
  maxMessageBytes: 4 * 1024 * 1024,
  maxConnectionsPerCall: 64,
  maxPendingDialsPerCall: 16,
  maxDataPacketBytes: 64 * 1024,
  // the HTTP/2 connection window (connect-frontend-h2.ts): reassembly holds no more than a CONNECT
  // client could leave unread
  maxPartialBytesPerConnection: 16 * 1024 * 1024,
  idleCallMs: 30_000,
  endedCallGraceMs: 5_000,
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

/** grpc-message as the spec wants it: percent-encoded, one bounded line. */
function grpcMessage(message: string): string {
  return encodeURIComponent(message.replace(/[\r\n]/g, ' ').slice(0, 500));
}

/** Ends a call at once with a status (a trailers-only response). */
export function grpcTrailersOnly(stream: ServerHttp2Stream, status: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(status),
      'grpc-message': grpcMessage(message),
    },
    { endStream: true },
  );
}

export class GrpcFrontend {
  readonly limits: GrpcFrontendLimits;
  private readonly opts: GrpcFrontendOptions;
  /** partial-message bytes held per HTTP/2 connection, over all its calls */
  private readonly partialBytes = new WeakMap<Http2Session, { bytes: number }>();

  constructor(opts: GrpcFrontendOptions) {
    this.opts = opts;
    this.limits = { ...defaultGrpcFrontendLimits, ...opts.limits };
  }

  /** Serves one call (the caller routed `POST /ProxyService/Proxy` here). */
  serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    const session = stream.session;
    if (!session) return;
    let partial = this.partialBytes.get(session);
    if (!partial) {
      partial = { bytes: 0 };
      this.partialBytes.set(session, partial);
    }
    new ProxyCall(stream, headers, this.opts, this.limits, partial).start();
  }
}

/** One `Proxy` call: its connections, the packets in and out. */
class ProxyCall {
  private readonly reader: GrpcMessageReader;
  /** connectID (decimal) → the target connection */
  private readonly connections = new Map<string, Duplex>();
  /** random (decimal, echoed exactly) of a DIAL_REQ whose tunnel is being opened → cancelled by DIAL_CLS? */
  private readonly pending = new Map<string, { cancelled: boolean }>();
  private nextConnectId = 1;
  /** no more packets are read or written (the status is decided) */
  private ended = false;
  private clientEnded = false;
  private status: { code: number; message: string } = { code: GrpcStatus.OK, message: '' };
  /** the call's stream is backed up: targets paused, the client not read */
  private blocked = false;
  /** targets whose writes are backed up (the client is not read while any is) */
  private readonly slowTargets = new Set<Duplex>();
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly stream: ServerHttp2Stream;
  private readonly headers: IncomingHttpHeaders;
  private readonly opts: GrpcFrontendOptions;
  private readonly limits: GrpcFrontendLimits;
  private readonly partial: { bytes: number };
  /** what this call counts in `partial` */
  private partialHeld = 0;

  constructor(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    opts: GrpcFrontendOptions,
    limits: GrpcFrontendLimits,
    partial: { bytes: number },
  ) {
    this.stream = stream;
    this.headers = headers;
    this.opts = opts;
    this.limits = limits;
    this.partial = partial;
    this.reader = new GrpcMessageReader(limits.maxMessageBytes);
  }

  start(): void {
    const { stream } = this;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => {
      stream.sendTrailers({
        'grpc-status': String(this.status.code),
        ...(this.status.message ? { 'grpc-message': grpcMessage(this.status.message) } : {}),
      });
      // The call is over; real clients end their side on the trailers. One that keeps sending is
      // reset (RST_STREAM NO_ERROR, as grpc-go's server does), but only once the trailers had time to
      // leave: a reset submitted at once would overtake them.
      if (!stream.readableEnded)
        setTimeout(() => {
          if (!stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
        }, this.limits.endedCallGraceMs).unref();
    });
    stream.on('data', (chunk: Buffer) => {
      noteRelayedBytes(chunk.length);
      this.onData(chunk);
    });
    stream.on('end', () => {
      this.clientEnded = true;
      this.finish();
    });
    stream.on('drain', () => {
      if (!this.blocked) return;
      this.blocked = false;
      for (const upstream of this.connections.values()) upstream.resume();
      this.updateReading();
    });
    stream.once('close', () => this.closeAll());
    this.updateIdle();
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    let messages: Buffer[];
    try {
      messages = this.reader.push(chunk);
    } catch (err) {
      const code = err instanceof GrpcFrameError ? err.grpcStatus : GrpcStatus.INTERNAL;
      this.fail(code, (err as Error).message);
      return;
    }
    this.partial.bytes += this.reader.buffered - this.partialHeld;
    this.partialHeld = this.reader.buffered;
    if (this.partial.bytes > this.limits.maxPartialBytesPerConnection) {
      this.fail(
        GrpcStatus.RESOURCE_EXHAUSTED,
        `unfinished messages on this connection exceed ${this.limits.maxPartialBytesPerConnection} bytes`,
      );
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
    switch (p.type) {
      case PacketType.DIAL_REQ:
        void this.dial(p.dialRequest ?? {});
        break;
      case PacketType.DATA: {
        const id = String(p.data?.connectID ?? 0);
        if (id === '0') break; // konnectivity's server skips these too
        const upstream = this.connectionOr(id);
        const data = p.data?.data;
        if (upstream && data && data.length > 0 && !upstream.write(data)) {
          this.slowTargets.add(upstream);
          this.updateReading();
        }
        break;
      }
      case PacketType.CLOSE_REQ:
        // its close answers CLOSE_RSP
        this.connectionOr(String(p.closeRequest?.connectID ?? 0))?.destroy();
        break;
      case PacketType.DIAL_CLS: {
        const pending = this.pending.get(String(p.closeDial?.random ?? 0));
        if (pending) pending.cancelled = true;
        break;
      }
      default:
        // DRAIN (an agent's hint) and what only a server sends: konnectivity's server ignores them
        this.opts.log.debug({ type: p.type }, 'ignored a packet a client does not send');
    }
  }

  /** The open connection `id`, or undefined after answering CLOSE_RSP with an error. */
  private connectionOr(id: string): Duplex | undefined {
    const upstream = this.connections.get(id);
    if (!upstream)
      this.send({
        type: PacketType.CLOSE_RSP,
        closeResponse: { connectID: id, error: `no connection ${id} on this call` },
      });
    return upstream;
  }

  private async dial(req: NonNullable<Packet['dialRequest']>): Promise<void> {
    const random = String(req.random ?? 0);
    const refuse = (error: string) =>
      this.send({ type: PacketType.DIAL_RSP, dialResponse: { random, error } });
    if (req.protocol && req.protocol !== 'tcp')
      return refuse(`protocol "${req.protocol}" is not served; only tcp`);
    if (this.pending.has(random)) return refuse(`a dial with random ${random} is already pending`);
    if (this.pending.size >= this.limits.maxPendingDialsPerCall)
      return refuse(`at most ${this.limits.maxPendingDialsPerCall} dials may be pending on one call`);
    if (this.connections.size + this.pending.size >= this.limits.maxConnectionsPerCall)
      return refuse(`at most ${this.limits.maxConnectionsPerCall} connections per call`);
    const pending = { cancelled: false };
    this.pending.set(random, pending);
    this.updateIdle();
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
      refuse(`${r.status} ${r.text}: ${r.reason}${code ? ` (${code})` : ''}`);
      this.updateIdle();
      return;
    }
    const { upstream } = outcome;
    if (pending.cancelled || this.ended) {
      upstream.destroy();
      this.updateIdle();
      return;
    }
    const connectID = this.nextConnectId++;
    this.connections.set(String(connectID), upstream);
    upstream.on('error', () => {});
    upstream.on('data', (chunk: Buffer) => {
      noteRelayedBytes(chunk.length);
      for (let i = 0; i < chunk.length; i += this.limits.maxDataPacketBytes)
        this.send({
          type: PacketType.DATA,
          data: { connectID, data: chunk.subarray(i, i + this.limits.maxDataPacketBytes) },
        });
    });
    upstream.on('drain', () => {
      if (this.slowTargets.delete(upstream)) this.updateReading();
    });
    // the target finished sending (TCP FIN): the protocol has no half-close, so the connection closes
    // (unless our side has ended already: a second end() builds an error, stack trace and all)
    upstream.once('end', () => {
      if (!upstream.writableEnded) upstream.end();
    });
    upstream.once('close', () => {
      this.connections.delete(String(connectID));
      if (this.slowTargets.delete(upstream)) this.updateReading();
      this.send({ type: PacketType.CLOSE_RSP, closeResponse: { connectID } });
      if (this.clientEnded) this.finish();
      else this.updateIdle();
    });
    this.send({ type: PacketType.DIAL_RSP, dialResponse: { random, connectID } });
    if (this.blocked) upstream.pause();
  }

  /** Writes a packet; while the call's stream is backed up, every target of the call pauses. */
  private send(p: Packet): void {
    if (this.ended || this.stream.destroyed || this.stream.writableEnded) return;
    if (!this.stream.write(grpcFrame(encodePacket(p))) && !this.blocked) {
      this.blocked = true;
      for (const upstream of this.connections.values()) upstream.pause();
      this.updateReading();
    }
  }

  /**
   * Reads the client only while every target takes what it is sent and the client takes what it is
   * sent (answers to its packets would otherwise pile up unread).
   */
  private updateReading(): void {
    if (this.ended || this.stream.destroyed) return;
    if (this.blocked || this.slowTargets.size > 0) this.stream.pause();
    else this.stream.resume();
  }

  /** A call holding no connection (open or being dialed) ends after idleCallMs. */
  private updateIdle(): void {
    const idle = !this.ended && this.connections.size === 0 && this.pending.size === 0;
    if (!idle) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    } else if (!this.idleTimer) {
      this.idleTimer = setTimeout(
        () =>
          this.fail(GrpcStatus.UNAVAILABLE, `no connection on this call for ${this.limits.idleCallMs} ms`),
        this.limits.idleCallMs,
      );
      this.idleTimer.unref();
    }
  }

  /** The client ended its side: close what is open, then end with the status. */
  private finish(): void {
    if (this.ended) return;
    if (this.connections.size > 0) {
      for (const upstream of this.connections.values()) upstream.destroy();
      return; // each close sends CLOSE_RSP and calls finish() again
    }
    this.ended = true;
    this.updateIdle();
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
  }

  private fail(code: number, message: string): void {
    if (this.ended) return;
    this.opts.log.debug({ code, message }, 'gRPC call ended');
    this.status = { code, message };
    this.ended = true;
    this.closeAll();
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.end();
  }

  /** Closes every connection and pending dial; nothing more is read, so no partial message is held. */
  private closeAll(): void {
    this.ended = true;
    this.partial.bytes -= this.partialHeld;
    this.partialHeld = 0;
    clearTimeout(this.idleTimer);
    for (const p of this.pending.values()) p.cancelled = true;
    for (const upstream of this.connections.values()) upstream.destroy();
    this.connections.clear();
    this.slowTargets.clear();
  }
}
