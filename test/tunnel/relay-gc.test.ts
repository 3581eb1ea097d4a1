// The relay collector (src/tunnel/relay-gc.ts): a young-generation collection once every
// RELAY_GC_EVERY_BYTES relayed, outside the callback that counted them, and none below that.
import { constants, type PerformanceEntry, PerformanceObserver, performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import {
  countRelayed,
  noteRelayedBytes,
  RELAY_GC_EVERY_BYTES,
  setRelayGcEveryBytes,
} from '../../src/tunnel/relay-gc.ts';

const MiB = 1024 * 1024;

/**
 * V8's young-generation collections that started while `fn` ran or in the event-loop turn after it
 * (entries are delivered later, so they are collected a little longer and filtered by start time),
 * and when `fn` returned.
 */
async function minorGcsDuring(fn: () => void): Promise<{ starts: number[]; fnReturned: number }> {
  const seen: PerformanceEntry[] = [];
  const obs = new PerformanceObserver((list) => seen.push(...list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  try {
    const t0 = performance.now();
    fn();
    const fnReturned = performance.now();
    await new Promise((r) => setImmediate(r));
    const t1 = performance.now();
    await new Promise((r) => setTimeout(r, 20));
    const starts = seen
      .filter(
        (e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR,
      )
      .map((e) => e.startTime)
      .filter((t) => t >= t0 && t <= t1);
    return { starts, fnReturned };
  } finally {
    obs.disconnect();
  }
}

describe('relay collector', () => {
  afterEach(() => setRelayGcEveryBytes(RELAY_GC_EVERY_BYTES));

  it('collects the young generation every 8 MiB relayed by default', () => {
    expect(RELAY_GC_EVERY_BYTES).toBe(8 * MiB);
  });

  it('runs one young-generation collection once the threshold is passed, after the counting callback', async () => {
    setRelayGcEveryBytes(4 * MiB);
    const { starts, fnReturned } = await minorGcsDuring(() => {
      for (let i = 0; i < 64; i++) noteRelayedBytes(MiB); // 16 thresholds' worth: still one pending at a time
    });
    expect(starts).toHaveLength(1);
    expect(starts[0]).toBeGreaterThanOrEqual(fnReturned);
  });

  it('runs none below the threshold', async () => {
    setRelayGcEveryBytes(Number.POSITIVE_INFINITY);
    const { starts } = await minorGcsDuring(() => {
      for (let i = 0; i < 64; i++) noteRelayedBytes(MiB);
    });
    expect(starts).toHaveLength(0);
  });

  it('counts what flows through a relayed stream', async () => {
    setRelayGcEveryBytes(2 * MiB);
    const a = new PassThrough();
    a.resume();
    countRelayed(a);
    const { starts } = await minorGcsDuring(() => {
      a.write(Buffer.alloc(3 * MiB));
    });
    expect(starts).toHaveLength(1);
  });
});
