// Half-open tunnel streams: once one side of a CONNECT stream has ended (we sent END_STREAM, or
// the peer did), the stream lives only for traffic in the other direction. If that direction stays
// silent for halfOpenTimeoutMs, the stream is reset, so a target or a client that never ends its
// side (or vanished without a FIN) does not hold a stream, a socket and their buffers forever.
// Both ends of the tunnel use it on every CONNECT stream they serve; resetting one end closes the
// other (RST_STREAM), so the hub alone already frees both.
import { constants, type Http2Stream } from 'node:http2';

/** Which side ended first, for logs: `local` (we sent END_STREAM) or `remote` (the peer did). */
export type HalfClosedSide = 'local' | 'remote';

/**
 * Arms an inactivity timer on `stream` once it is half-closed: after `timeoutMs` without a frame
 * read or written, the stream is reset with CANCEL and `onTimeout` is told which side had ended.
 * `timeoutMs` 0 disables it. Uses the stream's own timer (no 'data' listener, so the stream's flow
 * mode and backpressure are left alone); node clears it when the stream closes.
 */
export function resetWhenHalfOpen(
  stream: Http2Stream,
  timeoutMs: number,
  onTimeout?: (side: HalfClosedSide) => void,
): void {
  if (timeoutMs <= 0) return;
  let armed = false;
  const arm = (side: HalfClosedSide): void => {
    if (armed || stream.destroyed || stream.closed) return;
    armed = true;
    stream.setTimeout(timeoutMs, () => {
      if (stream.destroyed || stream.closed) return;
      onTimeout?.(side);
      stream.close(constants.NGHTTP2_CANCEL);
    });
  };
  stream.once('finish', () => arm('local'));
  stream.once('end', () => arm('remote'));
}
