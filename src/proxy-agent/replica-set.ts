// Which proxy-server replicas the agent holds a tunnel to, and whether an address should be dialled
// again. Pure bookkeeping (no sockets) so the policy is unit-tested on its own:
// - every configured address keeps one tunnel (an address with none reconnects);
// - one tunnel per replica, by server id: a second tunnel to a held id is a duplicate;
// - an address is dialled for *more* replicas only when the addresses alone cannot cover the
//   replica count the servers advertise (one address in front of N replicas, e.g. a load balancer
//   or one DNS name), and only while fewer than that many distinct ids are held.
// With one address per replica the agent therefore never dials an address it already holds.

export interface HeldTunnel {
  /** the configured address the tunnel was dialled through */
  address: string;
  /** the replica's id from the hello */
  serverId: string;
}

/** What an address loop should do next. */
export type DialNeed =
  /** the address holds no tunnel: reconnect (outage backoff) */
  | 'reconnect'
  /** the address holds a tunnel but replicas are missing behind it: look for one (slower backoff) */
  | 'seek-replica'
  /** nothing to do until a tunnel closes or the replica count changes */
  | 'none';

/** Replica count a proxy-server may advertise (the hello's server count is clamped to this too). */
export const MAX_SERVER_COUNT = 64;

export class ReplicaSet<T extends HeldTunnel> {
  private readonly held = new Map<string, T>();
  private advertised = 1;
  private readonly addressCount: number;

  /** `addressCount`: how many distinct addresses the agent is configured with. */
  constructor(addressCount: number) {
    this.addressCount = addressCount;
  }

  /** The replica count the newest hello advertised (1 until the first hello). */
  get serverCount(): number {
    return this.advertised;
  }

  set serverCount(n: number) {
    this.advertised = Math.min(Math.max(Math.floor(n) || 1, 1), MAX_SERVER_COUNT);
  }

  get size(): number {
    return this.held.size;
  }

  has(serverId: string): boolean {
    return this.held.has(serverId);
  }

  ids(): string[] {
    return [...this.held.keys()].sort();
  }

  tunnels(): T[] {
    return [...this.held.values()];
  }

  /** Holds `t` unless its replica is already held; returns false for a duplicate. */
  add(t: T): boolean {
    if (this.held.has(t.serverId)) return false;
    this.held.set(t.serverId, t);
    return true;
  }

  /** Forgets `t` if it is still the tunnel held for its replica; returns whether it was. */
  remove(t: T): boolean {
    if (this.held.get(t.serverId) !== t) return false;
    this.held.delete(t.serverId);
    return true;
  }

  /** Forgets every tunnel and returns them (certificate rotation: they are drained, not held). */
  takeAll(): T[] {
    const all = [...this.held.values()];
    this.held.clear();
    return all;
  }

  viaAddress(address: string): number {
    let n = 0;
    for (const t of this.held.values()) if (t.address === address) n++;
    return n;
  }

  dialNeed(address: string): DialNeed {
    if (this.viaAddress(address) === 0) return 'reconnect';
    if (this.addressCount >= this.advertised) return 'none';
    return this.held.size < this.advertised ? 'seek-replica' : 'none';
  }
}
