// Polling with a deadline: the one way tether (and its tests) wait for something to become true.

import { TimeoutError } from './errors.ts';

export interface PollOptions {
  /** give up after this long (ms) */
  timeoutMs: number;
  /** pause between attempts (ms); default 200 */
  intervalMs?: number;
  /** what we are waiting for, quoted in the timeout error */
  description: string;
  /** aborts the wait early */
  signal?: AbortSignal;
}

/**
 * Calls `check` until it returns a value other than undefined/false, and returns that value.
 * Errors thrown by `check` count as "not yet"; the last one is quoted if the deadline passes.
 */
export async function pollUntil<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  opts: PollOptions,
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  const interval = opts.intervalMs ?? 200;
  let lastError: unknown;
  for (;;) {
    opts.signal?.throwIfAborted();
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new TimeoutError(`timed out after ${opts.timeoutMs} ms waiting for ${opts.description}${why}`);
    }
    await new Promise((r) => setTimeout(r, Math.min(interval, Math.max(0, deadline - Date.now()))));
  }
}
