// The proxy-server's registry of connected agents: cluster → live tunnel sessions. New streams go
// to the session with the fewest open streams, so several agents of one cluster share the load and
// one dying loses only its own streams. A session whose agent has stopped answering PINGs is passed
// over while another one answers (HA agents, or a reconnected agent beside its frozen old session).
import type { HubTunnelSession } from '../tunnel/hub-session.ts';

export interface AgentConnection {
  id: number;
  cluster: string;
  agent: string;
  /** set when the agent holds the tunnel with an addon's identity (cluster-proxy) */
  addon?: string;
  remoteAddress: string;
  connectedAt: Date;
  session: HubTunnelSession;
  /** the agent's TLS connection (its byte counters feed tether_proxy_bytes_total) */
  socket: { bytesRead: number; bytesWritten: number };
}

export class AgentRegistry {
  private readonly byCluster = new Map<string, Set<AgentConnection>>();
  private nextId = 1;

  add(conn: Omit<AgentConnection, 'id'>): AgentConnection {
    const full: AgentConnection = { ...conn, id: this.nextId++ };
    let set = this.byCluster.get(conn.cluster);
    if (!set) {
      set = new Set();
      this.byCluster.set(conn.cluster, set);
    }
    set.add(full);
    return full;
  }

  remove(conn: AgentConnection): void {
    const set = this.byCluster.get(conn.cluster);
    if (!set) return;
    set.delete(conn);
    if (set.size === 0) this.byCluster.delete(conn.cluster);
  }

  /**
   * The least-loaded live session for `cluster` among those whose agent answers, else the one
   * silent for the shortest time (its dial then fails fast), or undefined when none is connected.
   * `exclude` skips sessions already tried for this dial.
   */
  pick(cluster: string, exclude?: ReadonlySet<AgentConnection>): AgentConnection | undefined {
    const set = this.byCluster.get(cluster);
    if (!set) return undefined;
    let best: AgentConnection | undefined;
    let quietest: AgentConnection | undefined;
    for (const c of set) {
      if (c.session.isClosed || exclude?.has(c)) continue;
      if (c.session.isUnresponsive) {
        if (!quietest || c.session.silentForMs() < quietest.session.silentForMs()) quietest = c;
        continue;
      }
      if (!best || c.session.openStreams < best.session.openStreams) best = c;
    }
    return best ?? quietest;
  }

  count(cluster: string): number {
    return this.byCluster.get(cluster)?.size ?? 0;
  }

  /** The live connections of one cluster (for its tunnel status). */
  of(cluster: string): AgentConnection[] {
    return [...(this.byCluster.get(cluster) ?? [])];
  }

  clusters(): string[] {
    return [...this.byCluster.keys()].sort();
  }

  all(): AgentConnection[] {
    return [...this.byCluster.values()].flatMap((s) => [...s]);
  }
}
