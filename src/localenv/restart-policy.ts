// When to restart a crashed child of `tether up`, and when to give up: pure bookkeeping over crash
// times, no timers or processes (the supervisor owns those). Backoff starts at 1 s and doubles to
// 30 s; a run that stayed up long enough counts as healthy and resets it; too many crashes within a
// window means the process cannot run here, and restarting it forever would only hide that.

export interface RestartLimits {
  /** delay before the first restart after a healthy run (ms) */
  firstDelayMs: number;
  /** the backoff never grows beyond this (ms) */
  maxDelayMs: number;
  /** a run that lasted at least this long resets the backoff (ms) */
  stableAfterMs: number;
  /** this many crashes within `crashWindowMs` → give up */
  maxCrashes: number;
  crashWindowMs: number;
}

export const DEFAULT_RESTART_LIMITS: RestartLimits = {
  firstDelayMs: 1_000,
  maxDelayMs: 30_000,
  stableAfterMs: 60_000,
  maxCrashes: 5,
  crashWindowMs: 5 * 60_000,
};

export type RestartDecision =
  | { restart: true; delayMs: number }
  | { restart: false; crashes: number; windowMs: number };

/** The restart bookkeeping of one supervised process. */
export class RestartPolicy {
  private readonly limits: RestartLimits;
  private crashTimes: number[] = [];
  private nextDelayMs: number;

  constructor(limits: Partial<RestartLimits> = {}) {
    this.limits = { ...DEFAULT_RESTART_LIMITS, ...limits };
    if (this.limits.firstDelayMs <= 0 || this.limits.maxDelayMs < this.limits.firstDelayMs) {
      throw new RangeError('restart limits: need 0 < firstDelayMs <= maxDelayMs');
    }
    if (!Number.isInteger(this.limits.maxCrashes) || this.limits.maxCrashes < 1) {
      throw new RangeError('restart limits: maxCrashes must be a positive integer');
    }
    this.nextDelayMs = this.limits.firstDelayMs;
  }

  /** Records a crash at `now` of a run that started at `startedAt` (ms timestamps) and decides. */
  crashed(startedAt: number, now: number): RestartDecision {
    const { maxCrashes, crashWindowMs, stableAfterMs, firstDelayMs, maxDelayMs } = this.limits;
    this.crashTimes = [...this.crashTimes.filter((t) => now - t < crashWindowMs), now];
    if (this.crashTimes.length >= maxCrashes) {
      return { restart: false, crashes: this.crashTimes.length, windowMs: crashWindowMs };
    }
    if (now - startedAt >= stableAfterMs) this.nextDelayMs = firstDelayMs;
    const delayMs = this.nextDelayMs;
    this.nextDelayMs = Math.min(this.nextDelayMs * 2, maxDelayMs);
    return { restart: true, delayMs };
  }
}
