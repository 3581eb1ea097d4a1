// The retry delay shared by every client of one apiserver while that server cannot be reached.
//
// Pure state, no timers: callers report failures and successes, and ask how long to wait. When a
// connection drops, every informer on that server fails at about the same moment; counting each
// of those as one more failure would push the delay to its cap after a single outage second. So
// the failure count steps up at most once per current delay ("one round"), however many clients
// fail in that round, and any success resets it for all of them.

export interface BackoffLimits {
  /** delay after the first failed round (ms) */
  baseMs: number;
  /** the delay never grows beyond this (ms) */
  maxMs: number;
}

export class ServerBackoff {
  private rounds = 0;
  private lastStepAt = 0;
  private readonly limits: BackoffLimits;
  private readonly now: () => number;

  constructor(limits: BackoffLimits, now: () => number = Date.now) {
    if (!(limits.baseMs > 0) || !(limits.maxMs >= limits.baseMs)) {
      throw new RangeError('server backoff needs 0 < baseMs ≤ maxMs');
    }
    this.limits = limits;
    this.now = now;
  }

  /** Failed rounds in a row since the last success. */
  get failedRounds(): number {
    return this.rounds;
  }

  /** A client failed to reach the server; returns the delay (ms, no jitter) before it retries. */
  fail(): number {
    const t = this.now();
    if (this.rounds === 0 || t - this.lastStepAt >= this.delayFor(this.rounds)) {
      this.rounds++;
      this.lastStepAt = t;
    }
    return this.delayFor(this.rounds);
  }

  /** Some request to the server succeeded: the next failure starts again at baseMs. */
  reset(): void {
    this.rounds = 0;
  }

  /** The delay after `rounds` failed rounds: baseMs doubling per round, capped at maxMs. */
  delayFor(rounds: number): number {
    if (rounds <= 0) return 0;
    return Math.min(this.limits.baseMs * 2 ** Math.min(rounds - 1, 40), this.limits.maxMs);
  }
}

/** `ms` spread over ±`fraction` so clients that failed together do not retry together. */
export function withJitter(ms: number, fraction = 0.2, random: () => number = Math.random): number {
  return Math.round(ms * (1 - fraction + random() * 2 * fraction));
}
