// Rates from the tunnel's cumulative counters: each new status of a cluster's tunnel (the gateway's
// `tunnel` subresource) against the one before gives bytes per second each way and streams opened
// per second; the open-stream count is taken as it is. Pure, so unit tests run it in Node; tunnel.ts keeps the samples since the
// page opened and plots them.

/** The part of a tunnel status the rates are made of (proxy-server/tunnel-status.ts). */
export interface TunnelCounters {
  /** ISO time the status was taken */
  time: string;
  bytesFromCluster: number;
  bytesToCluster: number;
  openStreams: number;
  /** streams opened so far (absent from an older proxy-server) */
  streamsOpened?: number;
}

export interface TunnelSample {
  /** seconds since the epoch */
  t: number;
  fromClusterPerSecond: number;
  toClusterPerSecond: number;
  /** streams opened per second */
  streamsPerSecond: number;
  openStreams: number;
}

/** Samples kept for the plot; the oldest go first (a sample every 2 s: over five hours). */
export const MAX_TUNNEL_SAMPLES = 10_000;

/**
 * The sample `next` makes after `previous`, or undefined when there is no interval to divide by
 * (the first status, or one not newer). A counter that went down (the proxy-server restarted)
 * gives no rate for that interval: 0, not a negative number.
 */
export function tunnelSample(
  previous: TunnelCounters | undefined,
  next: TunnelCounters,
): TunnelSample | undefined {
  if (!previous) return undefined;
  const t0 = Date.parse(previous.time) / 1000;
  const t1 = Date.parse(next.time) / 1000;
  if (!(t1 > t0)) return undefined;
  const rate = (a: number, b: number): number => (b >= a ? (b - a) / (t1 - t0) : 0);
  return {
    t: t1,
    fromClusterPerSecond: rate(previous.bytesFromCluster, next.bytesFromCluster),
    toClusterPerSecond: rate(previous.bytesToCluster, next.bytesToCluster),
    streamsPerSecond: rate(previous.streamsOpened ?? 0, next.streamsOpened ?? 0),
    openStreams: next.openStreams,
  };
}

/** A byte rate for people: B/s, KiB/s, MiB/s, GiB/s with three significant digits. */
export function formatRate(bytesPerSecond: number): string {
  const units = ['B/s', 'KiB/s', 'MiB/s', 'GiB/s'];
  let value = bytesPerSecond;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? Math.round(value) : value.toPrecision(3)} ${units[unit]}`;
}
