// Keyed work queue for controllers (the client-go workqueue contract): a key waits at most once
// however often it is added; a key being reconciled is never handed to a second worker (added
// again meanwhile, it runs once more when the first run ends); failures come back after a per-key
// exponential backoff; reconcile may ask to run again after a delay. Keys are strings such as
// "namespace/name"; the queue knows nothing about what they mean.
import { errorMessage } from '../errors.ts';
import { type Logger, logger } from '../log.ts';
import { type WorkQueueObserver, workQueueObserver } from './controller-metrics.ts';

/** What reconcile may return besides nothing: when to look at the key again. */
export interface ReconcileResult {
  requeueAfterMs?: number;
}
// biome-ignore lint/suspicious/noConfusingVoidType: a reconcile that returns nothing is `async (key) => {}`
export type ReconcileFunc = (key: string) => Promise<void | ReconcileResult>;

export interface WorkQueueOptions {
  /** for logs */
  name?: string;
  /** concurrent reconciles of different keys (default 1) */
  workers?: number;
  /** first retry delay after a failure (default 5 ms); doubles per consecutive failure */
  baseDelayMs?: number;
  /** retry delay cap (default 60 s) */
  maxDelayMs?: number;
  /** keys waiting or scheduled, beyond which new keys are dropped with a warning (default 100 000) */
  maxLength?: number;
  log?: Logger;
  /** report adds, retries, reconciles and depth to the process's controller metrics under `name`
   * (default: true when a name is given) */
  metrics?: boolean;
}

interface Delayed {
  at: number;
  timer: NodeJS.Timeout;
}

export class WorkQueue {
  private readonly reconcile: ReconcileFunc;
  private readonly workerCount: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxLength: number;
  private readonly log: Logger;
  /** keys ready to run, in order; each is also in `dirty` */
  private readonly queue: string[] = [];
  /** keys waiting to run (queued, or re-added while processing) */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, Delayed>();
  private readonly failures = new Map<string, number>();
  private readonly waiters: Array<() => void> = [];
  private workers: Promise<void>[] = [];
  private shuttingDown = false;
  private droppedWarned = false;
  private readonly observer: (WorkQueueObserver & { release(): void }) | undefined;

  constructor(reconcile: ReconcileFunc, options: WorkQueueOptions = {}) {
    this.reconcile = reconcile;
    this.workerCount = options.workers ?? 1;
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.maxLength = options.maxLength ?? 100_000;
    this.log = options.log ?? logger('workqueue', { queue: options.name ?? 'default' });
    this.observer =
      options.name !== undefined && options.metrics !== false
        ? workQueueObserver(options.name, () => this.dirty.size)
        : undefined;
    if (!Number.isInteger(this.workerCount) || this.workerCount < 1)
      throw new RangeError('workers must be ≥ 1');
    if (this.baseDelayMs <= 0 || this.maxDelayMs < this.baseDelayMs) {
      throw new RangeError('need 0 < baseDelayMs ≤ maxDelayMs');
    }
  }

  /** Start the workers; keys added before are kept and run now. */
  start(): void {
    if (this.workers.length > 0 || this.shuttingDown) return;
    for (let i = 0; i < this.workerCount; i++) this.workers.push(this.work());
  }

  /** Queue `key` unless it is already waiting. False when the queue is full or shut down. */
  add(key: string): boolean {
    if (this.shuttingDown) return false;
    if (this.dirty.has(key)) return true;
    if (!this.delayed.has(key) && this.dirty.size + this.delayed.size >= this.maxLength)
      return this.dropped(key);
    this.dirty.add(key);
    this.observer?.added();
    if (!this.processing.has(key)) {
      this.queue.push(key);
      this.waiters.shift()?.();
    }
    return true;
  }

  /** Queue `key` after `delayMs`; an earlier scheduled add of the same key wins. */
  addAfter(key: string, delayMs: number): boolean {
    if (this.shuttingDown) return false;
    if (delayMs <= 0) return this.add(key);
    const at = Date.now() + delayMs;
    const existing = this.delayed.get(key);
    if (existing) {
      if (existing.at <= at) return true;
      clearTimeout(existing.timer);
    } else if (this.dirty.size + this.delayed.size >= this.maxLength) {
      return this.dropped(key);
    }
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, { at, timer });
    return true;
  }

  /** Queue `key` after its backoff (base · 2^failures, capped); returns the delay used. */
  addRateLimited(key: string): number {
    this.observer?.retried();
    const delay = this.nextDelay(key);
    this.addAfter(key, delay);
    return delay;
  }

  /** The delay addRateLimited would use now for `key`, counting one more failure. */
  private nextDelay(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    return Math.min(this.baseDelayMs * 2 ** Math.min(failures, 52), this.maxDelayMs);
  }

  /**
   * Run now every key waiting out a failure backoff (addRateLimited), with its backoff reset: for
   * when what made them fail is over (their apiserver is reachable again). Returns how many.
   */
  retryBackedOff(): number {
    let count = 0;
    for (const [key, { timer }] of [...this.delayed]) {
      if (!this.failures.has(key)) continue;
      clearTimeout(timer);
      this.delayed.delete(key);
      this.failures.delete(key);
      this.add(key);
      count++;
    }
    return count;
  }

  /** Reset the backoff of `key` (after it succeeded). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Consecutive failures recorded for `key`. */
  requeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Keys waiting to run (not counting scheduled ones). */
  get length(): number {
    return this.dirty.size;
  }

  /** Nothing waiting, scheduled or running. */
  isIdle(): boolean {
    return this.dirty.size === 0 && this.processing.size === 0 && this.delayed.size === 0;
  }

  /** Stop taking keys, drop waiting and scheduled ones, and wait for running reconciles to end. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.queue.length = 0;
    this.dirty.clear();
    for (const wake of this.waiters.splice(0)) wake();
    await Promise.all(this.workers);
    this.observer?.release();
  }

  private dropped(key: string): boolean {
    if (!this.droppedWarned) {
      this.droppedWarned = true;
      this.log.warn({ key, maxLength: this.maxLength }, 'work queue full: dropping keys until it drains');
    }
    return false;
  }

  private async next(): Promise<string | undefined> {
    for (;;) {
      if (this.shuttingDown) return undefined;
      const key = this.queue.shift();
      if (key !== undefined) {
        this.dirty.delete(key);
        if (this.dirty.size === 0) this.droppedWarned = false;
        return key;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.next();
      if (key === undefined) return;
      this.processing.add(key);
      this.observer?.active(1);
      const started = performance.now();
      try {
        const result = await this.reconcile(key);
        this.forget(key);
        const requeue = result?.requeueAfterMs !== undefined;
        this.observer?.reconciled(
          (performance.now() - started) / 1000,
          requeue ? 'requeue_after' : 'success',
        );
        if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
      } catch (err) {
        this.observer?.reconciled((performance.now() - started) / 1000, 'error');
        const delayMs = this.shuttingDown ? 0 : this.addRateLimited(key);
        this.log.warn({ key, err: errorMessage(err), retryInMs: delayMs }, 'reconcile failed');
      } finally {
        this.observer?.active(-1);
        this.processing.delete(key);
        if (this.dirty.has(key)) {
          this.queue.push(key);
          this.waiters.shift()?.();
        }
      }
    }
  }
}
