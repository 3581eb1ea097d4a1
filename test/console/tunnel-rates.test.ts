// Rates the console's tunnel plot shows, from the proxy-server's cumulative counters.
import { describe, expect, it } from 'vitest';
import { formatRate, tunnelSample } from '../../src/console/ui/tunnel-rates.ts';

const at = (seconds: number, from: number, to: number, streams = 0, opened = 0) => ({
  time: new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString(),
  bytesFromCluster: from,
  bytesToCluster: to,
  openStreams: streams,
  streamsOpened: opened,
});

describe('tunnel rates', () => {
  it('divides the counters’ growth (bytes, streams opened) by the time between two statuses', () => {
    expect(tunnelSample(at(0, 1000, 500, 0, 10), at(2, 5096, 2548, 3, 15))).toMatchObject({
      fromClusterPerSecond: 2048,
      toClusterPerSecond: 1024,
      streamsPerSecond: 2.5,
      openStreams: 3,
    });
  });

  it('makes no sample from the first status or one not newer', () => {
    expect(tunnelSample(undefined, at(2, 10, 10))).toBeUndefined();
    expect(tunnelSample(at(2, 10, 10), at(2, 20, 20))).toBeUndefined();
  });

  it('a counter that went down (the proxy-server restarted) is a rate of 0, never negative', () => {
    expect(tunnelSample(at(0, 10_000, 10_000), at(2, 100, 20_000))).toMatchObject({
      fromClusterPerSecond: 0,
      toClusterPerSecond: 5_000,
    });
  });

  it('formats rates with binary units', () => {
    expect(formatRate(0)).toBe('0 B/s');
    expect(formatRate(512)).toBe('512 B/s');
    expect(formatRate(1536)).toBe('1.50 KiB/s');
    expect(formatRate(3 * 1024 * 1024)).toBe('3.00 MiB/s');
  });
});
