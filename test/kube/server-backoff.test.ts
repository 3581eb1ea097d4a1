import { describe, expect, it } from 'vitest';
import { ServerBackoff, withJitter } from '../../src/kube/server-backoff.ts';

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('ServerBackoff', () => {
  it('counts the clients failing together as one round, and doubles once per round up to the cap', () => {
    const c = clock();
    const b = new ServerBackoff({ baseMs: 500, maxMs: 4_000 }, c.now);
    // Ten informers losing their connections at the same moment: still the first round.
    for (let i = 0; i < 10; i++) expect(b.fail()).toBe(500);
    expect(b.failedRounds).toBe(1);
    c.advance(500);
    expect(b.fail()).toBe(1_000);
    c.advance(999);
    expect(b.fail()).toBe(1_000);
    c.advance(1);
    expect(b.fail()).toBe(2_000);
    c.advance(2_000);
    expect(b.fail()).toBe(4_000);
    c.advance(4_000);
    expect(b.fail()).toBe(4_000);
    expect(b.failedRounds).toBe(5);
  });

  it('starts again at the base delay after any success', () => {
    const c = clock();
    const b = new ServerBackoff({ baseMs: 500, maxMs: 30_000 }, c.now);
    for (let i = 0; i < 6; i++) {
      b.fail();
      c.advance(30_000);
    }
    expect(b.fail()).toBe(30_000);
    b.reset();
    expect(b.failedRounds).toBe(0);
    expect(b.fail()).toBe(500);
  });

  it('refuses limits that make no sense', () => {
    expect(() => new ServerBackoff({ baseMs: 0, maxMs: 10 })).toThrow(RangeError);
    expect(() => new ServerBackoff({ baseMs: 100, maxMs: 10 })).toThrow(RangeError);
  });
});

describe('withJitter', () => {
  it('spreads a delay over ±20 %', () => {
    expect(withJitter(1_000, 0.2, () => 0)).toBe(800);
    expect(withJitter(1_000, 0.2, () => 0.5)).toBe(1_000);
    expect(withJitter(1_000, 0.2, () => 0.999_999)).toBe(1_200);
  });
});
