// PING keepalive for one HTTP/2 session: a peer that stops answering is declared dead within
// pingIntervalMs + pingTimeoutMs, and the session is destroyed so reconnect logic can run. A peer
// whose bytes keep arriving is not dead, even if its PING answer is late: on a slow or saturated
// link the answer queues behind the data already in flight (tens of MiB with our windows), so the
// deadline is extended for as long as the connection reads something in each pingTimeoutMs.
// It also tells how long the peer has been silent (the age of the unanswered PING), and can send a
// PING on demand, so the hub can fail a request to a frozen or cut-off agent in seconds instead of
// waiting for the whole keepalive window (hub-session.ts).
import type { Http2Session } from 'node:http2';

export class SessionKeepalive {
  private readonly session: Http2Session;
  private readonly timeoutMs: number;
  private readonly onDead: (why: string) => void;
  private readonly timer: NodeJS.Timeout;
  private deadline: NodeJS.Timeout | undefined;
  /** when the unanswered PING was sent (Date.now()); undefined when none is outstanding */
  private outstandingSince: number | undefined;
  /** bytes read on the connection when the current deadline was armed */
  private bytesReadAtArm = 0;
  private readonly answerWaiters = new Set<() => void>();
  /** when the peer last answered a PING (Date.now()); the start time until then */
  lastAnswerAt = Date.now();
  /** called whenever a PING goes out (periodic or probe) */
  onPingSent: (() => void) | undefined;
  /** where bytes heard from the peer are counted; the session's socket unless given */
  private readonly connection: { bytesRead?: number } | undefined;

  constructor(
    session: Http2Session,
    intervalMs: number,
    timeoutMs: number,
    onDead: (why: string) => void,
    connection?: { bytesRead?: number },
  ) {
    this.session = session;
    this.connection = connection;
    this.timeoutMs = timeoutMs;
    this.onDead = onDead;
    this.timer = setInterval(() => this.ping(), intervalMs);
    this.timer.unref();
    session.once('close', () => this.stop());
  }

  /** Whether a PING is on its way and not answered yet. */
  get waiting(): boolean {
    return this.outstandingSince !== undefined;
  }

  /** How long the outstanding PING has gone unanswered (ms); 0 when none is outstanding. */
  unansweredForMs(now = Date.now()): number {
    return this.outstandingSince === undefined ? 0 : Math.max(0, now - this.outstandingSince);
  }

  /**
   * Makes sure a PING is on its way (sends one unless one is outstanding) and calls `onAnswer` when
   * the peer answers one. Returns a function that drops the callback.
   */
  probe(onAnswer: () => void): () => void {
    this.answerWaiters.add(onAnswer);
    this.ping();
    return () => this.answerWaiters.delete(onAnswer);
  }

  /** Sends a PING now unless one is outstanding. */
  ping(): void {
    const session = this.session;
    if (session.destroyed || session.closed || this.outstandingSince !== undefined) return;
    const sentAt = Date.now();
    try {
      session.ping((err) => {
        if (this.outstandingSince !== sentAt) return;
        clearTimeout(this.deadline);
        this.deadline = undefined;
        this.outstandingSince = undefined;
        if (err) {
          if (!session.destroyed) this.onDead(`PING failed: ${err.message}`);
          return;
        }
        this.lastAnswerAt = Date.now();
        const waiters = [...this.answerWaiters];
        this.answerWaiters.clear();
        for (const w of waiters) w();
      });
    } catch {
      // ping() throws when too many are outstanding or the session is closing: nothing to do here.
      return;
    }
    this.outstandingSince = sentAt;
    this.onPingSent?.();
    this.armDeadline();
  }

  private bytesRead(): number {
    try {
      return (this.connection ?? this.session.socket)?.bytesRead ?? 0;
    } catch {
      return 0;
    }
  }

  private armDeadline(): void {
    this.bytesReadAtArm = this.bytesRead();
    this.deadline = setTimeout(() => {
      if (this.outstandingSince === undefined || this.session.destroyed) return;
      // still receiving: the answer is queued behind data, not lost
      if (this.bytesRead() > this.bytesReadAtArm) {
        this.armDeadline();
        return;
      }
      this.onDead(`no PING answer and no byte received within ${this.timeoutMs} ms`);
    }, this.timeoutMs);
    this.deadline.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    clearTimeout(this.deadline);
    this.answerWaiters.clear();
  }
}

/** Starts a keepalive on `session`; returns a function that stops it. */
export function keepAlive(
  session: Http2Session,
  intervalMs: number,
  timeoutMs: number,
  onDead: (why: string) => void,
): () => void {
  const k = new SessionKeepalive(session, intervalMs, timeoutMs, onDead);
  return () => k.stop();
}
