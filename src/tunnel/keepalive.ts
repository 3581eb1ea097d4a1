// PING keepalive for one HTTP/2 session: a peer that stops answering is declared dead within
// pingIntervalMs + pingTimeoutMs, and the session is destroyed so reconnect logic can run.
import type { Http2Session } from 'node:http2';

export function keepAlive(
  session: Http2Session,
  intervalMs: number,
  timeoutMs: number,
  onDead: (why: string) => void,
): () => void {
  let waiting: NodeJS.Timeout | undefined;
  const timer = setInterval(() => {
    if (session.destroyed || session.closed || waiting) return;
    waiting = setTimeout(() => {
      onDead(`no PING answer within ${timeoutMs} ms`);
    }, timeoutMs);
    waiting.unref();
    try {
      session.ping((err) => {
        clearTimeout(waiting);
        waiting = undefined;
        if (err && !session.destroyed) onDead(`PING failed: ${err.message}`);
      });
    } catch {
      // ping() throws when too many are outstanding or the session is closing: nothing to do here.
    }
  }, intervalMs);
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    clearTimeout(waiting);
  };
  session.once('close', stop);
  return stop;
}
