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
 * mode and backpressure are left alone), and clears it when the stream closes.
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
    stream.once('close', () => clearTimeout(streamTimer(stream)));
  };
  stream.once('finish', () => arm('local'));
  stream.once('end', () => arm('remote'));
}

/**
 * The timer node keeps for `stream.setTimeout()`. Node clears it when a stream is closed, but not
 * when the stream is destroyed first (what a consumer does when its own socket closes): its
 * `setTimeout(0)` returns early on a destroyed stream. Left armed, node's timer list holds the
 * closed stream, its listeners and what they hold (the CONNECT caller's TLS socket: ≈ 7 KB a
 * tunnel in the proxy-server) until the timer runs out, timeoutMs after the stream went quiet.
 */
function streamTimer(stream: Http2Stream): NodeJS.Timeout | undefined {
  // Node keeps it under an internal symbol (`Symbol(timeout)`): find it by what it holds.
  for (const key of Object.getOwnPropertySymbols(stream)) {
    const value = (stream as unknown as Record<symbol, unknown>)[key];
    if (isNodeTimer(value)) return value;
  }
  return undefined;
}

function isNodeTimer(value: unknown): value is NodeJS.Timeout {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as NodeJS.Timeout).refresh === 'function' &&
    '_idleTimeout' in value
  );
}
