// Prometheus metrics of the proxy-server (prefix tether_proxy_). One registry per server instance so
// tests and multiple replicas in one process do not collide.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface ProxyServerMetrics {
  registry: Registry;
  connectedAgents: Gauge<'cluster'>;
  openStreams: Gauge<'cluster'>;
  bytes: Counter<'cluster' | 'direction'>;
  dialSeconds: Histogram<'cluster' | 'outcome'>;
  errors: Counter<'code'>;
}

/** Bytes on one cluster's tunnel connections so far (TLS socket counters, framing included). */
export interface TunnelBytes {
  cluster: string;
  fromCluster: number;
  toCluster: number;
}

/**
 * `bytesSource` is read at scrape time: counting per stream would need a listener or wrapper on
 * every stream (memory per idle stream, and a 'data' listener would switch streams to flowing).
 */
export function createProxyServerMetrics(bytesSource: () => TunnelBytes[] = () => []): ProxyServerMetrics {
  const registry = new Registry();
  return {
    registry,
    connectedAgents: new Gauge({
      name: 'tether_proxy_connected_agents',
      help: 'Agents holding a tunnel to this proxy-server, per managed cluster',
      labelNames: ['cluster'],
      registers: [registry],
    }),
    openStreams: new Gauge({
      name: 'tether_proxy_open_streams',
      help: 'Tunnel streams currently open, per managed cluster',
      labelNames: ['cluster'],
      registers: [registry],
    }),
    bytes: new Counter({
      name: 'tether_proxy_bytes_total',
      help: 'Bytes carried by agent tunnels (TLS payload, HTTP/2 framing included); direction is to_cluster or from_cluster',
      labelNames: ['cluster', 'direction'],
      registers: [registry],
      collect() {
        this.reset();
        for (const b of bytesSource()) {
          this.inc({ cluster: b.cluster, direction: 'from_cluster' }, b.fromCluster);
          this.inc({ cluster: b.cluster, direction: 'to_cluster' }, b.toCluster);
        }
      },
    }),
    dialSeconds: new Histogram({
      name: 'tether_proxy_dial_duration_seconds',
      help: 'Time from dial request to an established tunnel stream (or failure)',
      labelNames: ['cluster', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    errors: new Counter({
      name: 'tether_proxy_errors_total',
      help: 'Failed dials and rejected connections by error code',
      labelNames: ['code'],
      registers: [registry],
    }),
  };
}
