// The agent port before a peer has proved it is an agent. Anyone who can reach the port gets this
// far, so it is bounded on its own, separately from the agents already served:
//   - a deadline: a raw connection must finish TLS and either present its agent certificate (ALPN
//     h2) or complete the WebSocket upgrade within `deadlineMs`, whatever protocol it negotiated —
//     sockets handed to node:http with emit('connection') get none of that server's timeouts, so a
//     silent HTTP/1.1 or no-ALPN client would otherwise stay forever;
//   - a cap on such connections in total and per remote address, so strangers cannot fill the
//     connection limit and agents reconnecting during a flood still get in.
// After a WebSocket upgrade the TLS inside it has its own handshake deadline; the connection keeps
// its pre-authentication slot until that deadline has passed too. Counts and timers only; the
// server decides what a connection is.
import type { Socket } from 'node:net';
import { Counts } from './client-limits.ts';

export interface PreAuthLimits {
  /** connections not yet authenticated, at once */
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

interface Entry {
  address: string;
  timer: NodeJS.Timeout | undefined;
  holdTimer: NodeJS.Timeout | undefined;
  counted: boolean;
}

/** The key that names one TCP connection on both its raw socket and the TLS socket over it. */
export function connectionKey(socket: { remoteAddress?: string; remotePort?: number }): string {
  return `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`;
}

export class PreAuthGate {
  readonly limits: PreAuthLimits;
  private readonly perAddress = new Counts();
  private total = 0;
  private readonly entries = new Map<string, Entry>();

  constructor(limits: PreAuthLimits) {
    for (const [k, v] of Object.entries(limits)) {
      if (!Number.isFinite(v) || v < 1)
        throw new RangeError(`pre-authentication limit ${k} must be at least 1`);
    }
    this.limits = limits;
  }

  /** Connections holding a pre-authentication slot now. */
  get size(): number {
    return this.total;
  }

  /**
   * A raw connection arrived. Returns false when it is over a limit (the caller closes it);
   * otherwise it is closed unless `settle` is called for it within the deadline.
   */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? '';
    if (this.total >= this.limits.maxConnections) return false;
    if (!this.perAddress.tryAdd(address, this.limits.maxConnectionsPerAddress)) return false;
    this.total++;
    const key = connectionKey(socket);
    const entry: Entry = { address, timer: undefined, holdTimer: undefined, counted: true };
    entry.timer = setTimeout(() => socket.destroy(), this.limits.deadlineMs);
    entry.timer.unref();
    this.entries.set(key, entry);
    socket.once('close', () => {
      this.release(entry);
      if (entry.timer) clearTimeout(entry.timer);
      if (entry.holdTimer) clearTimeout(entry.holdTimer);
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return true;
  }

  /**
   * The connection with `key` got past the first stage: its deadline stops. Its slot is freed now
   * (an agent was identified or refused) or after `holdMs` (a further bounded handshake follows).
   */
  settle(key: string, holdMs = 0): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    if (holdMs <= 0) {
      this.release(entry);
      return;
    }
    if (entry.holdTimer) return;
    entry.holdTimer = setTimeout(() => this.release(entry), holdMs);
    entry.holdTimer.unref();
  }

  private release(entry: Entry): void {
    if (!entry.counted) return;
    entry.counted = false;
    this.total--;
    this.perAddress.remove(entry.address);
  }
}
