// The agent port before a peer has proved it is an agent. Anyone who can reach the port gets this
// far, so it is bounded on its own, separately from the agents already served:
//   - a deadline: a raw connection must finish TLS and either present its agent certificate (ALPN
//     h2) or complete the WebSocket upgrade within `deadlineMs`, whatever protocol it negotiated —
//     sockets handed to node:http with emit('connection') get none of that server's timeouts, so a
//     silent HTTP/1.1 or no-ALPN client would otherwise stay forever;
//   - a cap on such connections in total and per remote address, so strangers cannot fill the
//     connection limit;
//   - at a cap the newcomer is not refused: the connection that has waited longest (in total, or
//     from that address) is closed to make room. Before TLS nobody can tell an agent from a
//     stranger, so refusing newcomers would let a flood from many addresses (or from behind the
//     forward proxy the agents share) lock agents out for as long as it lasts. An agent finishes its
//     handshake in milliseconds while a slow-loris stranger waits for its deadline, so the oldest is
//     the one to drop: an agent is starved only by a flood that opens a whole cap of connections
//     within one agent handshake.
// After a WebSocket upgrade, the TLS inside it has its own handshake deadline. Such connections
// move to a second pool with the same caps for that long; it does not evict (an agent that is
// already through its inner handshake cannot be told apart here, and must not be dropped), so a
// full second pool refuses further upgrades until a slot frees. Counts and timers only; the server
// decides what a connection is.
import type { Socket } from 'node:net';
import { Counts } from './client-limits.ts';

export interface PreAuthLimits {
  /** connections not yet authenticated, at once (and, separately, upgraded WebSockets in their inner handshake) */
  maxConnections: number;
  /** … from one remote address */
  maxConnectionsPerAddress: number;
  /** from TCP accept to an agent certificate or a completed WebSocket upgrade */
  deadlineMs: number;
}

export const defaultPreAuthLimits: Omit<PreAuthLimits, 'deadlineMs'> = {
  maxConnections: 1000,
  maxConnectionsPerAddress: 100,
};

/** Connections counted in total and per address. */
class Pool {
  readonly perAddress = new Counts();
  total = 0;
  add(address: string): void {
    this.perAddress.tryAdd(address, Number.POSITIVE_INFINITY);
    this.total++;
  }
  remove(address: string): void {
    this.perAddress.remove(address);
    this.total--;
  }
}

interface Entry {
  key: string;
  socket: Socket;
  address: string;
  timer: NodeJS.Timeout | undefined;
  /** the pool holding its slot, if any */
  pool: Pool | undefined;
}

/** The key that names one TCP connection on both its raw socket and the TLS socket over it. */
export function connectionKey(socket: { remoteAddress?: string; remotePort?: number }): string {
  return `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`;
}

export class PreAuthGate {
  readonly limits: PreAuthLimits;
  private readonly waiting = new Pool();
  private readonly upgraded = new Pool();
  private readonly entries = new Map<string, Entry>();
  /** entries in the waiting pool, oldest first (a Map keeps insertion order) */
  private readonly queue = new Map<string, Entry>();
  private evictedCount = 0;

  constructor(limits: PreAuthLimits) {
    for (const [k, v] of Object.entries(limits)) {
      if (!Number.isFinite(v) || v < 1)
        throw new RangeError(`pre-authentication limit ${k} must be at least 1`);
    }
    this.limits = limits;
  }

  /** Connections holding a pre-authentication slot now (both pools). */
  get size(): number {
    return this.waiting.total + this.upgraded.total;
  }

  /** Waiting connections closed so far to make room for newer ones. */
  get evicted(): number {
    return this.evictedCount;
  }

  /**
   * A raw connection arrived. It gets a slot — at a cap, the oldest waiting connection (from its
   * address, or in total) is closed to make room — and is closed unless `settle` is called for it
   * within the deadline. Returns false only for a socket that is already closed.
   */
  admit(socket: Socket): boolean {
    if (socket.destroyed) return false;
    const address = socket.remoteAddress ?? '';
    const key = connectionKey(socket);
    const { maxConnections, maxConnectionsPerAddress } = this.limits;
    if (this.waiting.perAddress.get(address) >= maxConnectionsPerAddress) this.evictOldest(address);
    if (this.waiting.total >= maxConnections) this.evictOldest();
    const entry: Entry = { key, socket, address, timer: undefined, pool: this.waiting };
    this.waiting.add(address);
    this.queue.set(key, entry);
    this.entries.set(key, entry);
    entry.timer = setTimeout(() => socket.destroy(), this.limits.deadlineMs);
    entry.timer.unref();
    socket.once('close', () => {
      this.release(entry);
      if (entry.timer) clearTimeout(entry.timer);
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return true;
  }

  /**
   * The connection with `key` got past the first stage: its deadline stops and its waiting slot is
   * freed. With `holdMs` (a WebSocket upgrade: a bounded inner handshake follows) it holds an
   * upgraded slot for that long instead — or, with that pool full, it is closed.
   */
  settle(key: string, holdMs = 0): void {
    const entry = this.entries.get(key);
    if (!entry || entry.pool !== this.waiting) return;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    this.release(entry);
    if (holdMs <= 0) return;
    const { maxConnections, maxConnectionsPerAddress } = this.limits;
    if (
      this.upgraded.total >= maxConnections ||
      this.upgraded.perAddress.get(entry.address) >= maxConnectionsPerAddress
    ) {
      entry.socket.destroy();
      return;
    }
    entry.pool = this.upgraded;
    this.upgraded.add(entry.address);
    entry.timer = setTimeout(() => this.release(entry), holdMs);
    entry.timer.unref();
  }

  /** Closes the connection that has waited longest (from `address`, when given). */
  private evictOldest(address?: string): void {
    for (const entry of this.queue.values()) {
      if (address !== undefined && entry.address !== address) continue;
      this.release(entry);
      entry.socket.destroy();
      this.evictedCount++;
      return;
    }
  }

  private release(entry: Entry): void {
    if (!entry.pool) return;
    entry.pool.remove(entry.address);
    entry.pool = undefined;
    if (this.queue.get(entry.key) === entry) this.queue.delete(entry.key);
  }
}
