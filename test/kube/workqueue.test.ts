import { afterEach, describe, expect, it, vi } from 'vitest';
import { WorkQueue } from '../../src/kube/workqueue.ts';

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const queues: WorkQueue[] = [];
function track(queue: WorkQueue): WorkQueue {
  queues.push(queue);
  return queue;
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(queues.splice(0).map((q) => q.shutdown()));
});

describe('WorkQueue', () => {
  it('runs a key added many times while waiting only once', async () => {
    const calls: string[] = [];
    const queue = track(
      new WorkQueue(async (key) => {
        calls.push(key);
      }),
    );
    queue.add('ns/a');
    queue.add('ns/a');
    queue.add('ns/b');
    queue.add('ns/a');
    expect(queue.length).toBe(2);
    queue.start();
    await vi.waitFor(() => expect(queue.isIdle()).toBe(true), { timeout: 2000 });
    expect(calls).toEqual(['ns/a', 'ns/b']);
  });

  it('never hands a key being reconciled to a second worker, and runs it once more afterwards', async () => {
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    let calls = 0;
    const queue = track(
      new WorkQueue(
        async () => {
          calls++;
          running++;
          maxRunning = Math.max(maxRunning, running);
          if (calls === 1) await gate.promise;
          running--;
        },
        { workers: 4 },
      ),
    );
    queue.start();
    queue.add('a');
    await vi.waitFor(() => expect(calls).toBe(1), { timeout: 2000 });
    queue.add('a');
    queue.add('a');
    queue.add('a');
    // Idle workers are free, yet none may take "a" while the first run is in flight.
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(1);
    gate.resolve();
    await vi.waitFor(() => expect(queue.isIdle()).toBe(true), { timeout: 2000 });
    expect(calls).toBe(2);
    expect(maxRunning).toBe(1);
  });

  it('runs different keys in parallel up to the worker count', async () => {
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    const queue = track(
      new WorkQueue(
        async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          await gate.promise;
          running--;
        },
        { workers: 2 },
      ),
    );
    for (const key of ['a', 'b', 'c']) queue.add(key);
    queue.start();
    await vi.waitFor(() => expect(running).toBe(2), { timeout: 2000 });
    gate.resolve();
    await vi.waitFor(() => expect(queue.isIdle()).toBe(true), { timeout: 2000 });
    expect(maxRunning).toBe(2);
  });

  it('doubles the backoff per failure up to the cap, and forget resets it', () => {
    const queue = track(new WorkQueue(async () => {}, { baseDelayMs: 5, maxDelayMs: 40 }));
    const delays = Array.from({ length: 6 }, () => queue.addRateLimited('a'));
    expect(delays).toEqual([5, 10, 20, 40, 40, 40]);
    expect(queue.requeues('a')).toBe(6);
    expect(queue.addRateLimited('b')).toBe(5);
    queue.forget('a');
    expect(queue.requeues('a')).toBe(0);
    expect(queue.addRateLimited('a')).toBe(5);
  });

  it('retries a failing reconcile after growing delays and resets the backoff on success', async () => {
    vi.useFakeTimers();
    const times: number[] = [];
    const start = Date.now();
    const queue = track(
      new WorkQueue(
        async () => {
          times.push(Date.now() - start);
          if (times.length < 5) throw new Error('apiserver said no');
        },
        { baseDelayMs: 100, maxDelayMs: 400 },
      ),
    );
    queue.start();
    queue.add('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(times).toEqual([0]);
    await vi.advanceTimersByTimeAsync(99);
    expect(times).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(times).toEqual([0, 100]);
    await vi.advanceTimersByTimeAsync(200 + 400 + 400);
    expect(times).toEqual([0, 100, 300, 700, 1100]);
    expect(queue.requeues('a')).toBe(0);
  });

  it('requeues after the delay reconcile asks for', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const queue = track(
      new WorkQueue(async () => {
        calls++;
        return calls === 1 ? { requeueAfterMs: 1000 } : undefined;
      }),
    );
    queue.start();
    queue.add('a');
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(5000);
    expect(calls).toBe(2);
  });

  it('addAfter waits, and the earliest of two scheduled adds wins', async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    const queue = track(
      new WorkQueue(async () => {
        calls.push(Date.now());
      }),
    );
    const start = Date.now();
    queue.start();
    queue.addAfter('a', 500);
    queue.addAfter('a', 200);
    queue.addAfter('a', 800);
    await vi.advanceTimersByTimeAsync(199);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((t) => t - start)).toEqual([200]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(1);
  });

  it('refuses new keys beyond maxLength', () => {
    const queue = track(new WorkQueue(async () => {}, { maxLength: 2 }));
    expect(queue.add('a')).toBe(true);
    expect(queue.add('b')).toBe(true);
    expect(queue.add('a')).toBe(true);
    expect(queue.add('c')).toBe(false);
    expect(queue.addAfter('d', 10)).toBe(false);
    expect(queue.length).toBe(2);
  });

  it('shutdown waits for running reconciles, drops waiting keys and refuses new ones', async () => {
    const gate = deferred();
    const calls: string[] = [];
    const queue = new WorkQueue(async (key) => {
      calls.push(key);
      await gate.promise;
    });
    queue.start();
    queue.add('a');
    await vi.waitFor(() => expect(calls).toEqual(['a']), { timeout: 2000 });
    queue.add('b');
    queue.addAfter('c', 10);
    let done = false;
    const shutdown = queue.shutdown().then(() => {
      done = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    gate.resolve();
    await shutdown;
    expect(calls).toEqual(['a']);
    expect(queue.add('d')).toBe(false);
    expect(queue.isIdle()).toBe(true);
  });
});

describe('WorkQueue.retryBackedOff', () => {
  it('runs keys waiting out a failure backoff now, with the backoff reset, and leaves requeueAfter keys alone', async () => {
    vi.useFakeTimers();
    const calls: string[] = [];
    let hubDown = true;
    const queue = track(
      new WorkQueue(
        async (key) => {
          calls.push(key);
          if (key === 'status' && hubDown) throw new Error('connect ECONNREFUSED');
          if (key === 'periodic') return { requeueAfterMs: 60_000 };
        },
        { baseDelayMs: 1_000, maxDelayMs: 30_000 },
      ),
    );
    queue.start();
    queue.add('status');
    queue.add('periodic');
    // Five failures: the next try is 16 s away.
    await vi.advanceTimersByTimeAsync(1_000 + 2_000 + 4_000 + 8_000);
    expect(calls.filter((k) => k === 'status')).toHaveLength(5);
    expect(queue.requeues('status')).toBe(5);
    hubDown = false;
    expect(queue.retryBackedOff()).toBe(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.filter((k) => k === 'status')).toHaveLength(6);
    expect(queue.requeues('status')).toBe(0);
    expect(calls.filter((k) => k === 'periodic')).toHaveLength(1);
    expect(queue.retryBackedOff()).toBe(0);
  });
});
