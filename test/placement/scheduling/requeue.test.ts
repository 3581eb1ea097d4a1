import { describe, expect, it } from 'vitest';
import { maxRequeueMs, requeueDelayMs } from '../../../src/placement/hub/placement-controller.ts';

describe('time-based requeue of a placement', () => {
  it('runs just after the instant, at once for a past one, and at most an hour ahead', () => {
    const now = 1_000_000;
    expect(requeueDelayMs(now + 4000, now)).toBe(4050);
    expect(requeueDelayMs(now - 4000, now)).toBe(50);
    // a score valid for a year must not become a timer Node cannot hold (it would fire at once)
    expect(requeueDelayMs(now + 365 * 24 * 3600_000, now)).toBe(maxRequeueMs);
    expect(maxRequeueMs).toBeLessThan(2 ** 31 - 1);
  });
});
