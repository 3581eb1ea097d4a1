// When a tunnel peer counts as unresponsive: a PING unanswered *and* no byte read for
// unresponsiveAfterMs. A peer whose PING answer is late but whose bytes keep coming (a busy, slow
// link) is not silent.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SessionKeepalive } from '../../src/tunnel/keepalive.ts';
import { PeerLiveness } from '../../src/tunnel/peer-liveness.ts';

afterEach(() => {
  vi.useRealTimers();
});

/** The part of SessionKeepalive PeerLiveness reads: one outstanding PING sent at `sentAt`. */
function keepalive() {
  const k = {
    sentAt: undefined as number | undefined,
    onPingSent: undefined as (() => void) | undefined,
    get waiting() {
      return k.sentAt !== undefined;
    },
    unansweredForMs: (now = Date.now()) => (k.sentAt === undefined ? 0 : now - k.sentAt),
    ping() {
      if (k.sentAt !== undefined) return;
      k.sentAt = Date.now();
      k.onPingSent?.();
    },
    answer() {
      k.sentAt = undefined;
    },
    probes: 0,
  };
  return k;
}

function setup() {
  vi.useFakeTimers();
  const k = keepalive();
  const socket = { bytesRead: 0, bytesWritten: 0 };
  const episodes: number[] = [];
  const live = new PeerLiveness({
    keepalive: k as unknown as SessionKeepalive,
    socket,
    unresponsiveAfterMs: 5000,
    onUnresponsive: (ms) => episodes.push(ms),
  });
  return { k, socket, episodes, live };
}

describe('PeerLiveness', () => {
  it('is not silent while no PING is out, whatever the bytes', () => {
    const { live } = setup();
    vi.advanceTimersByTime(60_000);
    expect(live.silentForMs()).toBe(0);
    expect(live.isUnresponsive).toBe(false);
  });

  it('turns unresponsive once a PING has gone unanswered with no byte read, and reports it once', () => {
    const { k, live, episodes } = setup();
    k.ping();
    vi.advanceTimersByTime(4900);
    expect(live.isUnresponsive).toBe(false);
    vi.advanceTimersByTime(1000);
    expect(live.isUnresponsive).toBe(true);
    vi.advanceTimersByTime(5000);
    expect(episodes).toHaveLength(1);
    expect(episodes[0]).toBeGreaterThanOrEqual(5000);
    k.answer();
    vi.advanceTimersByTime(500);
    expect(live.isUnresponsive).toBe(false);
  });

  it('keeps a peer whose bytes still arrive responsive while its PING answer is late', () => {
    const { k, live, socket, episodes } = setup();
    k.ping();
    for (let i = 0; i < 40; i++) {
      socket.bytesRead += 16_384;
      vi.advanceTimersByTime(250);
    }
    expect(k.unansweredForMs()).toBeGreaterThanOrEqual(10_000);
    expect(live.isUnresponsive).toBe(false);
    expect(episodes).toHaveLength(0);
    // the bytes stop: silent from the last one on
    vi.advanceTimersByTime(5250);
    expect(live.isUnresponsive).toBe(true);
    expect(episodes).toHaveLength(1);
  });

  it('sends a PING within a second of a request written with none out, but not for its own PINGs', () => {
    const { k, socket } = setup();
    socket.bytesWritten += 40; // a PING answer
    vi.advanceTimersByTime(1000);
    expect(k.waiting).toBe(false);
    socket.bytesWritten += 600; // a request on an open stream
    vi.advanceTimersByTime(1000);
    expect(k.waiting).toBe(true);
  });
});
