// When the PING keepalive declares a tunnel session dead: a PING unanswered for pingTimeoutMs *and*
// no byte received in that time. A peer whose answer is late because it queues behind data on a
// saturated link (bytes keep arriving) keeps its session; one that falls silent is dropped.
import type { Http2Session } from 'node:http2';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionKeepalive } from '../../src/tunnel/keepalive.ts';

afterEach(() => {
  vi.useRealTimers();
});

/** A session whose PINGs are never answered (the answer is stuck or lost) and whose socket we drive. */
function session() {
  const socket = { bytesRead: 0 };
  const s = {
    destroyed: false,
    closed: false,
    socket,
    ping: (_cb: (err: Error | null) => void) => true,
    once: () => s,
  };
  return { s: s as unknown as Http2Session, socket };
}

describe('SessionKeepalive', () => {
  it('keeps a session whose PING answer is late while its bytes keep arriving, then drops it once they stop', () => {
    vi.useFakeTimers();
    const { s, socket } = session();
    const dead: string[] = [];
    const k = new SessionKeepalive(s, 10_000, 20_000, (why) => dead.push(why));
    k.ping();
    // a saturated link: 60 s of data, no PING answer
    for (let t = 0; t < 60_000; t += 1000) {
      socket.bytesRead += 64 * 1024;
      vi.advanceTimersByTime(1000);
    }
    expect(dead).toEqual([]);
    expect(k.unansweredForMs()).toBeGreaterThanOrEqual(60_000);
    // then silence: dead within one more timeout
    vi.advanceTimersByTime(40_000);
    expect(dead).toEqual(['no PING answer and no byte received within 20000 ms']);
    k.stop();
  });

  it('drops a silent session pingTimeoutMs after its PING', () => {
    vi.useFakeTimers();
    const { s } = session();
    const dead: string[] = [];
    const k = new SessionKeepalive(s, 10_000, 20_000, (why) => dead.push(why));
    k.ping();
    vi.advanceTimersByTime(19_999);
    expect(dead).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(dead).toHaveLength(1);
    k.stop();
  });
});
