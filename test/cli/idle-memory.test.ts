// The idle trim's second trigger: an idle process whose heap grew by heapGrowthBytes since the last
// trim gets the memory-pressure GC, and the garbage that grew it is gone afterwards. The production
// thresholds are pinned here too.
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import {
  IDLE_CHECK_INTERVAL_MS,
  IDLE_CPU_SHARE,
  TRIM_HEAP_GROWTH_ABOVE_BYTES,
  TRIM_NEW_SPACE_ABOVE_BYTES,
  trimMemoryWhenIdle,
} from '../../src/cli/idle-memory.ts';
import { pollUntil } from '../../src/wait.ts';

describe('idle memory trim', () => {
  it('collects an idle heap that grew by the threshold since the last trim, and the garbage goes', async () => {
    const trims: string[] = [];
    let usedBefore = 0;
    const stop = trimMemoryWhenIdle({
      intervalMs: 50,
      idleCpuShare: 1, // every period counts as idle: the test's own allocations would not
      newSpaceBytes: Number.MAX_SAFE_INTEGER, // only the heap-growth trigger
      heapGrowthBytes: 8 * 1024 * 1024,
      onTrim: (_before, _after, reason) => trims.push(reason),
    });
    try {
      await new Promise((r) => setTimeout(r, 120)); // the first check sets the floor
      // ~20 MB of objects that outlive a few scavenges (so they reach the old generation), dropped in
      // the same tick: no check runs in between, the next one sees the grown heap
      let keep: unknown[][] = [];
      for (let i = 0; i < 40; i++) keep.push(Array.from({ length: 25_000 }, (_, j) => ({ j })));
      usedBefore = v8.getHeapStatistics().used_heap_size;
      keep = [];
      await pollUntil(async () => trims.includes('heap-growth'), {
        timeoutMs: 5_000,
        intervalMs: 20,
        description: 'the heap-growth trim',
      });
      expect(keep).toEqual([]);
      expect(v8.getHeapStatistics().used_heap_size).toBeLessThan(usedBefore - 8 * 1024 * 1024);
    } finally {
      stop();
    }
  });

  it('production thresholds', () => {
    expect(IDLE_CHECK_INTERVAL_MS).toBe(2_000);
    expect(IDLE_CPU_SHARE).toBe(0.02);
    expect(TRIM_NEW_SPACE_ABOVE_BYTES).toBe(4 * 1024 * 1024);
    expect(TRIM_HEAP_GROWTH_ABOVE_BYTES).toBe(6 * 1024 * 1024);
  });
});
