// Signs of life on the connection under a hub tunnel session, read from the kernel socket.
//
// The hub runs its HTTP/2 session straight on the agent's TLS socket (hub-session.ts): node's JS
// stream bridge under it cost about a third of the hub's CPU per byte (issue 26). node:http2 reads
// nothing while one of its own writes is in progress, though, and towards a slow link or a busy
// agent one write (up to the agent's connection window of DATA) can take seconds to drain: the
// agent's PING answers then wait unread, and a liveness check that only counts bytes read would
// take a live agent for a frozen one. What still shows the agent is alive is that our backed-up
// bytes keep leaving: while more is queued than the kernel will take, it takes more only as the
// agent's side acknowledges, and once the agent's receive buffer is full, only as its process
// reads. So "heard from the peer" here is bytes read plus bytes the kernel sent *while our writes
// were backed up*; a frozen agent stops that within a receive buffer's worth of data, a black-holed
// path at once. Bytes sent with nothing backed up say nothing: a frozen agent's kernel still takes
// a PING or a small request into its receive buffer, so they are not counted.
//
// node exposes those counters on the TCP handle under the TLS socket (`bytesRead`, `bytesWritten`,
// and `writeQueueSize`, the bytes libuv still holds); no public API gives them, hence this module.
// A connection with no TCP handle below it (TLS over a WebSocket stream) falls back to the
// socket's own counters, where the session runs on the bridge anyway and never stops reading.
import type { Duplex } from 'node:stream';

/** What PeerLiveness and SessionKeepalive read from a connection. */
export interface ConnectionCounters {
  /** bytes heard from the peer: read from it, or taken off our write queue by the kernel */
  readonly bytesRead: number;
  /** bytes handed to the connection towards the peer */
  readonly bytesWritten: number;
}

interface KernelHandle {
  bytesRead: number;
  bytesWritten: number;
  writeQueueSize: number;
}

interface WrappedSocket {
  _handle?: unknown;
  _parent?: unknown;
  bytesRead?: number;
  bytesWritten?: number;
}

const isKernelHandle = (h: unknown): h is KernelHandle => {
  const k = h as Partial<KernelHandle> | null | undefined;
  return (
    typeof k?.writeQueueSize === 'number' &&
    typeof k.bytesRead === 'number' &&
    typeof k.bytesWritten === 'number' &&
    (h as { constructor?: { name?: string } }).constructor?.name === 'TCP'
  );
};

/** The TCP handle under `socket` (a TLS socket's parent socket's), if there is one. */
export function kernelHandleOf(socket: Duplex): KernelHandle | undefined {
  let s = socket as WrappedSocket | undefined;
  for (let depth = 0; s && depth < 4; depth++) {
    if (isKernelHandle(s._handle)) return s._handle;
    s = s._parent as WrappedSocket | undefined;
  }
  return undefined;
}

/**
 * Counters for `socket`: from its TCP handle when it has one, else its own. bytesRead credits the
 * bytes the kernel sent between two reads of it when writes were backed up at either read (the
 * liveness checks read it every 250 ms while they wait for the peer).
 */
export function connectionCounters(socket: Duplex): ConnectionCounters {
  const fallback = socket as WrappedSocket;
  let lastSent = -1;
  let wasBackedUp = false;
  let credited = 0;
  return {
    get bytesRead(): number {
      const h = kernelHandleOf(socket);
      if (!h) return fallback.bytesRead ?? 0;
      const sent = h.bytesWritten - h.writeQueueSize;
      const backedUp = h.writeQueueSize > 0;
      if (lastSent >= 0 && (backedUp || wasBackedUp)) credited += Math.max(0, sent - lastSent);
      lastSent = sent;
      wasBackedUp = backedUp;
      return h.bytesRead + credited;
    },
    get bytesWritten(): number {
      const h = kernelHandleOf(socket);
      return h ? h.bytesWritten : (fallback.bytesWritten ?? 0);
    },
  };
}
