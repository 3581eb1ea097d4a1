// Per-client limits of the CONNECT frontend, so one hub client cannot starve the others (or push a
// cluster's agent into doing nothing but open and cancel streams): connections per remote address
// (counted before authentication, so floods of handshakes are bounded too), and per authenticated
// caller: open tunnels, dials waiting for an agent's answer, and a token bucket on new tunnels.
// Counts only; the frontend decides what to answer.

export interface ClientLimits {
  /** TLS connections one remote address may hold open at once (authenticated or not) */
  maxConnectionsPerAddress: number;
  /** tunnels one authenticated caller may hold open at once */
  maxTunnelsPerCaller: number;
  /** dials of one caller waiting for an agent's answer at once */
  maxPendingDialsPerCaller: number;
  /** new tunnels per second one caller may open, sustained */
  tunnelRatePerCaller: number;
  /** … and in a burst */
  tunnelBurstPerCaller: number;
}

export const defaultClientLimits: ClientLimits = {
  maxConnectionsPerAddress: 2000,
  maxTunnelsPerCaller: 1000,
  maxPendingDialsPerCaller: 100,
  tunnelRatePerCaller: 200,
  tunnelBurstPerCaller: 400,
};

/** Keyed counters that forget a key when it drops to zero (so memory follows live clients). */
export class Counts {
  private readonly byKey = new Map<string, number>();
  get(key: string): number {
    return this.byKey.get(key) ?? 0;
  }
  /** Adds one unless that would pass `max`; returns whether it did. */
  tryAdd(key: string, max: number): boolean {
    const n = this.get(key);
    if (n >= max) return false;
    this.byKey.set(key, n + 1);
    return true;
  }
  remove(key: string): void {
    const n = this.get(key) - 1;
    if (n <= 0) this.byKey.delete(key);
    else this.byKey.set(key, n);
  }
}

interface Bucket {
  tokens: number;
  at: number;
}

// Buckets of callers idle this long are full again anyway: drop them.
const BUCKET_IDLE_MS = 60_000;
const MAX_BUCKETS = 100_000;

export type LimitRefusal = { limit: keyof ClientLimits; message: string };

export class ClientLimiter {
  readonly limits: ClientLimits;
  private readonly connections = new Counts();
  private readonly tunnels = new Counts();
  private readonly pending = new Counts();
  private readonly buckets = new Map<string, Bucket>();

  constructor(limits: Partial<ClientLimits> = {}) {
    this.limits = { ...defaultClientLimits, ...limits };
    for (const [k, v] of Object.entries(this.limits)) {
      if (!Number.isFinite(v) || v < 1)
        throw new RangeError(`client limit ${k} must be at least 1 (got ${v})`);
    }
  }

  /** A new connection from `address`; returns a release function, or undefined when over the limit. */
  connection(address: string): (() => void) | undefined {
    if (!this.connections.tryAdd(address, this.limits.maxConnectionsPerAddress)) return undefined;
    return once(() => this.connections.remove(address));
  }

  /**
   * `caller` wants to open a tunnel: checks the rate, the open-tunnel and the pending-dial limits.
   * On success returns `dialed()` (call when the dial settled) and `closed()` (when the tunnel or
   * the failed attempt is over).
   */
  tunnel(caller: string): { dialed: () => void; closed: () => void } | LimitRefusal {
    const l = this.limits;
    if (this.tunnels.get(caller) >= l.maxTunnelsPerCaller)
      return {
        limit: 'maxTunnelsPerCaller',
        message: `${caller} already holds ${l.maxTunnelsPerCaller} tunnels (the per-caller limit); close some first`,
      };
    if (this.pending.get(caller) >= l.maxPendingDialsPerCaller)
      return {
        limit: 'maxPendingDialsPerCaller',
        message: `${caller} already has ${l.maxPendingDialsPerCaller} dials waiting for an agent; try again shortly`,
      };
    if (!this.takeToken(caller))
      return {
        limit: 'tunnelRatePerCaller',
        message: `${caller} opens tunnels faster than ${l.tunnelRatePerCaller}/s (burst ${l.tunnelBurstPerCaller}); slow down`,
      };
    this.tunnels.tryAdd(caller, Number.POSITIVE_INFINITY);
    this.pending.tryAdd(caller, Number.POSITIVE_INFINITY);
    const dialed = once(() => this.pending.remove(caller));
    return {
      dialed,
      closed: once(() => {
        dialed();
        this.tunnels.remove(caller);
      }),
    };
  }

  /** Dials of `caller` waiting for an agent's answer now (for metrics and tests). */
  pendingDials(caller: string): number {
    return this.pending.get(caller);
  }

  /** Tunnels `caller` holds open now. */
  openTunnels(caller: string): number {
    return this.tunnels.get(caller);
  }

  private takeToken(caller: string): boolean {
    const now = Date.now();
    const { tunnelRatePerCaller: rate, tunnelBurstPerCaller: burst } = this.limits;
    let b = this.buckets.get(caller);
    if (!b) {
      if (this.buckets.size >= MAX_BUCKETS) this.pruneBuckets(now);
      b = { tokens: burst, at: now };
      this.buckets.set(caller, b);
    }
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * rate);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  private pruneBuckets(now: number): void {
    for (const [k, b] of this.buckets) if (now - b.at > BUCKET_IDLE_MS) this.buckets.delete(k);
    // Still full of live callers: forget the oldest (they start again with a full bucket).
    while (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
