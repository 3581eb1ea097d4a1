import { describe, expect, it } from 'vitest';
import { RestartPolicy } from '../../src/localenv/restart-policy.ts';

const S = 1000;

describe('restart policy of tether up children', () => {
  it('backs off 1 s, 2 s, 4 s … for a process that keeps crashing soon after start, capped at 30 s', () => {
    const policy = new RestartPolicy({ maxCrashes: 100 });
    const delays: number[] = [];
    let now = 0;
    for (let i = 0; i < 8; i++) {
      const started = now;
      now += 5 * S;
      const d = policy.crashed(started, now);
      if (!d.restart) throw new Error('gave up too early');
      delays.push(d.delayMs);
      now += d.delayMs;
    }
    expect(delays).toEqual([1, 2, 4, 8, 16, 30, 30, 30].map((s) => s * S));
  });

  it('a run that stayed up 60 s resets the backoff to 1 s', () => {
    const policy = new RestartPolicy();
    expect(policy.crashed(0, 1 * S)).toEqual({ restart: true, delayMs: 1 * S });
    expect(policy.crashed(2 * S, 3 * S)).toEqual({ restart: true, delayMs: 2 * S });
    expect(policy.crashed(5 * S, 6 * S)).toEqual({ restart: true, delayMs: 4 * S });
    // up for a minute: healthy again
    expect(policy.crashed(10 * S, 70 * S)).toEqual({ restart: true, delayMs: 1 * S });
  });

  it('gives up at the 5th crash within 5 minutes, naming how many and over what window', () => {
    const policy = new RestartPolicy();
    let now = 0;
    for (let i = 0; i < 4; i++) {
      now += 10 * S;
      expect(policy.crashed(now - 10 * S, now).restart).toBe(true);
    }
    expect(policy.crashed(now, now + 10 * S)).toEqual({ restart: false, crashes: 5, windowMs: 300 * S });
  });

  it('crashes older than the window are forgotten: 5 crashes spread over 10 minutes keep restarting', () => {
    const policy = new RestartPolicy();
    for (let i = 1; i <= 10; i++) {
      const now = i * 120 * S;
      expect(policy.crashed(now - 100 * S, now)).toEqual({ restart: true, delayMs: 1 * S });
    }
  });

  it('rejects limits that cannot work', () => {
    expect(() => new RestartPolicy({ firstDelayMs: 0 })).toThrow(/firstDelayMs/);
    expect(() => new RestartPolicy({ firstDelayMs: 5000, maxDelayMs: 1000 })).toThrow(/maxDelayMs/);
    expect(() => new RestartPolicy({ maxCrashes: 0 })).toThrow(/maxCrashes/);
  });
});
