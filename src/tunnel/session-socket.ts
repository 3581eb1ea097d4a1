// The connection under a tunnel's HTTP/2 session, with writes that do not hold up reads.
//
// node:http2 stops reading its socket while one of its own writes is in progress (a write is one
// batch of every frame nghttp2 had ready, which with our windows can be tens of MiB). When both
// ends of a tunnel have such a batch out at once and the batches do not fit into the kernel's
// socket buffers, each end waits for the other to read before it reads again: the whole session
// stops, PING answers included, until the keepalive drops it. Streams echoing bulk data both ways
// (a stalled reader beside four busy streams under CPU load, or 32 busy streams at any load) were
// enough. The tunnel promises that one stream never stalls the session, so the session must keep
// reading whatever it has queued for the peer.
//
// Here the session writes into a buffer in front of the real socket and its write completes at
// once, so it goes straight back to reading. One end that always reads breaks the cycle (the other
// end's writes then always complete), so the agent's session runs on it (agent-session.ts). node
// runs a session over a Duplex that is not a socket through its JS stream bridge, which costs CPU
// per byte (one more JS hop and copy per chunk, about a third of the hub's CPU per byte in the
// tunnel benchmark), so the hub's session runs on it only where no TCP socket is reachable (TLS
// over a WebSocket). Over TCP the hub runs natively and stops reading while its own batch of DATA
// drains, which on a slow link can take seconds; its liveness checks then count the bytes the
// kernel sends as signs of the agent's life (connection-progress.ts). What
// waits in that buffer is bounded by the peer's HTTP/2 connection window (a session sends no DATA
// beyond it) plus a few control frames; a peer that advertises a larger window than
// maxUnsentBytes, and then reads nothing, meets ordinary backpressure again: writes complete only
// once the socket drains below maxUnsentBytes.
//
// Reads cross the bridge once per loop turn, not once per chunk. A TLS socket hands on every
// record (at most 16 KiB) as a chunk of its own, up to four per read from the kernel and several
// reads per turn, and each chunk that crosses the bridge is one more call into node:http2's
// native side with its copy and its round of stream callbacks. The chunks of one turn are joined
// and handed on at the end of it (setImmediate runs right after the reads of the same turn, so a
// small message waits for no other event): the agent's CPU per GiB on the CONNECT frontend's bulk
// paths fell from 2.1-3.4 s to 1.6-2.5 s on a loaded machine, and stayed within the spread on a
// quiet one (README, Performance). They are joined into one scratch buffer that the next turn's
// join reuses: node's stream bridge copies what it is handed before the 'data' event returns, so
// only a join this stream still holds (the session had stopped reading) needs a buffer of its
// own. A new buffer per join doubled the external memory the agent allocates per byte, and after
// a full collection (the idle trim runs one) V8 answered with mark-compacts: 63-71 in the
// benchmark's frontend bulk runs against 24-26 with the scratch, agent 2.7-4.1 against 2.0-3.0
// s/GiB on 16 connections. At most JOIN_MAX_BYTES are joined (more in one turn is handed on at
// once, in pieces of about that size), so a session keeps a scratch of at most JOIN_MAX_BYTES plus
// one chunk; a session that stops reading pauses the socket as before.
import { Duplex } from 'node:stream';
import { noteRelayedBytes } from './relay-gc.ts';

/** The most one turn's reads are joined into before they are handed on (one copy of this many bytes). */
export const JOIN_MAX_BYTES = 256 * 1024;

export interface SessionSocketOptions {
  /** bytes waiting to be sent above which the session's writes wait for the socket to drain */
  maxUnsentBytes: number;
}

/** A Duplex over `socket` for an HTTP/2 session (node wraps it in its JS stream bridge). */
export class SessionSocket extends Duplex {
  readonly socket: Duplex;
  private readonly maxUnsentBytes: number;
  /** a write held back until the socket drains below maxUnsentBytes */
  private heldWrite: ((err?: Error | null) => void) | undefined;
  /** chunks read from the socket in this loop turn, handed on together (flushUnread) */
  private unread: Buffer[] = [];
  private unreadBytes = 0;
  private flushScheduled = false;
  /** where a turn's chunks are joined, kept for the next join while nothing holds it */
  private scratch: Buffer | undefined;

  constructor(socket: Duplex, opts: SessionSocketOptions) {
    super({ allowHalfOpen: false, readableHighWaterMark: 256 * 1024 });
    this.socket = socket;
    this.maxUnsentBytes = opts.maxUnsentBytes;
    // node:http2 turns Nagle off on the socket it is given, but it wraps a Duplex like this one in
    // its JS stream bridge, where that call reaches nothing: without this every small frame (a
    // hello answer, a CONNECT reply) waited for the peer's delayed ACK, ≈ 40 ms per new stream.
    (socket as { setNoDelay?: (on: boolean) => unknown }).setNoDelay?.(true);
    socket.on('data', (chunk: Buffer) => {
      noteRelayedBytes(chunk.length);
      this.unread.push(chunk);
      this.unreadBytes += chunk.length;
      if (this.unreadBytes >= JOIN_MAX_BYTES) this.flushUnread();
      else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flushUnread);
      }
    });
    socket.once('end', () => {
      this.flushUnread();
      this.push(null);
    });
    socket.on('drain', () => this.releaseHeldWrite());
    socket.once('error', (err) => this.destroy(err));
    socket.once('close', () => this.destroy());
  }

  private readonly flushUnread = (): void => {
    this.flushScheduled = false;
    const chunks = this.unread;
    if (chunks.length === 0 || this.destroyed) return;
    const total = this.unreadBytes;
    this.unread = [];
    this.unreadBytes = 0;
    if (chunks.length === 1) {
      if (!this.push(chunks[0])) this.socket.pause();
      return;
    }
    let scratch = this.scratch;
    if (scratch === undefined || scratch.length < total) scratch = Buffer.allocUnsafeSlow(total);
    let at = 0;
    for (const c of chunks) at += c.copy(scratch, at);
    const more = this.push(scratch.subarray(0, total));
    // Read at once (copied by node's stream bridge), the scratch can take the next join; held
    // in this stream's buffer, it is that chunk now, and the next join needs another.
    this.scratch = this.readableLength === 0 ? scratch : undefined;
    if (!more) this.socket.pause();
  };

  /** Bytes read from the peer (for keepalive and liveness checks). */
  get bytesRead(): number {
    return (this.socket as { bytesRead?: number }).bytesRead ?? 0;
  }

  /** Bytes handed to the connection towards the peer. */
  get bytesWritten(): number {
    return (this.socket as { bytesWritten?: number }).bytesWritten ?? 0;
  }

  override _read(): void {
    this.socket.resume();
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, done: (err?: Error | null) => void): void {
    const socket = this.socket;
    socket.cork();
    for (const { chunk } of chunks) {
      noteRelayedBytes(chunk.length);
      socket.write(chunk);
    }
    socket.uncork();
    this.settleWrite(done);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    noteRelayedBytes(chunk.length);
    this.socket.write(chunk);
    this.settleWrite(done);
  }

  private settleWrite(done: (err?: Error | null) => void): void {
    if (this.socket.writableLength <= this.maxUnsentBytes) {
      done();
      return;
    }
    this.heldWrite = done;
  }

  private releaseHeldWrite(): void {
    const held = this.heldWrite;
    if (!held || this.socket.writableLength > this.maxUnsentBytes) return;
    this.heldWrite = undefined;
    held();
  }

  override _final(done: (err?: Error | null) => void): void {
    this.socket.end(done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    // A held write is cancelled by node's stream bridge when it closes; nothing to call here.
    this.heldWrite = undefined;
    this.socket.destroy();
    done(err);
  }
}
