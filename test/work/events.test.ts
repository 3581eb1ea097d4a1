// The work agent's event spam filter: library-go's recorder lets an agent that applies hundreds of
// works at once write a burst of events and then one a second, not one per work.
import { describe, expect, it } from 'vitest';
import { EventSpamFilter, eventBurst, eventRefillPerSecond } from '../../src/work/agent/events.ts';

describe('EventSpamFilter', () => {
  it('lets a burst through, then refills at its rate, never above the burst', () => {
    const t0 = 1_000_000;
    const filter = new EventSpamFilter(eventBurst, eventRefillPerSecond, t0);
    const allowed = Array.from({ length: 500 }, () => filter.allow(t0)).filter(Boolean).length;
    expect(allowed).toBe(60);
    expect(filter.allow(t0 + 500)).toBe(false);
    expect(filter.allow(t0 + 1_000)).toBe(true);
    expect(filter.allow(t0 + 1_000)).toBe(false);
    // An hour idle refills to the burst, not beyond.
    const later = t0 + 3_600_000;
    expect(Array.from({ length: 100 }, () => filter.allow(later)).filter(Boolean).length).toBe(60);
  });
});
