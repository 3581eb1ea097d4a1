// How many bytes a relay queues towards a tunnel stream before it stops reading its source.
//
// Used by both CONNECT frontends (HTTP/1.1 and HTTP/2). A relay pipes the caller's socket (or
// HTTP/2 stream) into the tunnel stream, and pipe() stops reading the caller whenever a write
// returns false: once the stream holds its high-water mark. For an HTTP/2 stream that mark is
// Node's default, 64 KiB, and one read of a TLS socket delivers four 16 KiB records in one tick,
// so every read filled it: the caller's socket was paused and resumed once per 64 KiB (4 096
// times for 256 MiB), and each pause stops and restarts the socket's reading in libuv. With a
// higher mark a busy stream pauses only when its writes really back up.
//
// Node has no option for it (http2's session.request() builds the stream with default options),
// so the mark is set on the stream's writable state, where Node's streams keep it;
// test/tunnel/relay-buffer.test.ts checks that Node still honours it.
import type { Writable } from 'node:stream';

/**
 * Bytes queued towards one tunnel stream before the relay stops reading its caller: measured on
 * the CONNECT frontend (bench/tunnel.ts, frontend-bulk-*) against the 64 KiB default, alternately,
 * 3 runs each: one connection 356–381 → 397–416 MB/s, hub 2.21–2.31 → 2.05–2.24 CPU s/GiB. It is
 * also what a caller whose tunnel the cluster stopped reading can leave queued on the hub, beside
 * the stream's flow-control window.
 */
export const RELAY_BUFFER_BYTES = 256 * 1024;

/** Raises `stream`'s high-water mark for writes to `bytes` (never lowers it). */
export function setRelayBuffer(stream: Writable, bytes = RELAY_BUFFER_BYTES): void {
  const state = (stream as unknown as { _writableState?: { highWaterMark?: unknown } })._writableState;
  if (state && typeof state.highWaterMark === 'number' && state.highWaterMark < bytes)
    state.highWaterMark = bytes;
}
