// Stream helpers the tunnel benchmarks share: the 9-byte request header the bench targets read
// ('S' send me n bytes / 'R' read n bytes, then a u64 big-endian count), waiting for 'drain',
// waiting until n bytes have been read, and timed round trips on an echoing stream.
import type { Duplex } from 'node:stream';
import { withTimeout } from './stats.ts';

/** The bench targets' request: one mode byte and the byte count as a u64. */
export function benchHeader(mode: 'S' | 'R', n: number): Buffer {
  const b = Buffer.alloc(9);
  b.write(mode, 0, 'latin1');
  b.writeBigUInt64BE(BigInt(n), 1);
  return b;
}

/** Resolves on the stream's next 'drain'; rejects when it closes first. */
export function drained(s: Duplex): Promise<void> {
  return new Promise((resolve, reject) => {
    const ok = (): void => {
      s.off('close', bad);
      resolve();
    };
    const bad = (): void => {
      s.off('drain', ok);
      reject(new Error('stream closed while writing'));
    };
    s.once('drain', ok);
    s.once('close', bad);
  });
}

/** Resolves once `n` more bytes have been read from `s`; rejects when it ends or closes first. */
export function readBytes(s: Duplex, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = 0;
    const onData = (c: Buffer): void => {
      got += c.length;
      if (got >= n) {
        cleanup();
        resolve();
      }
    };
    const onEnd = (): void => {
      cleanup();
      reject(new Error(`stream closed after ${got} of ${n} bytes`));
    };
    const cleanup = (): void => {
      s.off('data', onData);
      s.off('end', onEnd);
      s.off('close', onEnd);
    };
    s.on('data', onData);
    s.once('end', onEnd);
    s.once('close', onEnd);
  });
}

/**
 * `iterations` round trips of `req` on an echoing stream, one at a time: latencies in µs, after
 * `warmup` unmeasured ones. A round trip that takes longer than `timeoutMs` rejects. The caller
 * owns (and destroys) the stream.
 */
export async function echoRoundTrips(
  s: Duplex,
  req: Buffer,
  iterations: number,
  warmup: number,
  timeoutMs = 30_000,
): Promise<number[]> {
  let need = 0;
  let got = 0;
  let wake: (() => void) | undefined;
  const onData = (c: Buffer): void => {
    got += c.length;
    if (got >= need && wake) {
      const w = wake;
      wake = undefined;
      w();
    }
  };
  s.on('data', onData);
  s.resume();
  const lat: number[] = [];
  try {
    for (let i = 0; i < warmup + iterations; i++) {
      need += req.length;
      const answered = new Promise<void>((r) => {
        wake = r;
      });
      const t = process.hrtime.bigint();
      s.write(req);
      await withTimeout(answered, timeoutMs, 'round trip');
      if (i >= warmup) lat.push(Number(process.hrtime.bigint() - t) / 1e3);
    }
  } finally {
    s.off('data', onData);
  }
  return lat;
}
