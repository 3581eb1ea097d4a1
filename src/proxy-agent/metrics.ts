// Prometheus metrics of the proxy-agent (prefix tether_agent_). Created apart from the agent so a
// process (`tether agent`) can register them in its own registry before the agent first runs: the
// agent starts only once the hub has issued a certificate, but /metrics is scraped from the start.
import { Counter, Gauge, Registry } from 'prom-client';

export interface ProxyAgentMetrics {
  registry: Registry;
  connectedServers: Gauge;
  drainingTunnels: Gauge;
  handshakes: Counter<'outcome'>;
  connectErrors: Counter<'code'>;
  streams: Counter<'outcome'>;
  bytes: Counter<'direction'>;
}

/** Registers the proxy-agent metrics in `registry` (a fresh one by default). Once per registry. */
export function createProxyAgentMetrics(registry: Registry = new Registry()): ProxyAgentMetrics {
  return {
    registry,
    connectedServers: new Gauge({
      name: 'tether_agent_connected_servers',
      help: 'proxy-servers this agent holds a tunnel to',
      registers: [registry],
    }),
    drainingTunnels: new Gauge({
      name: 'tether_agent_draining_tunnels',
      help: 'Tunnels made with a replaced certificate, finishing their open streams',
      registers: [registry],
    }),
    handshakes: new Counter({
      name: 'tether_agent_tunnel_handshakes_total',
      help: 'Tunnels that completed the hello; outcome new (kept) or duplicate (a replica already held, closed)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    connectErrors: new Counter({
      name: 'tether_agent_connect_errors_total',
      help: 'Failed attempts to reach a proxy-server, by error code',
      labelNames: ['code'],
      registers: [registry],
    }),
    streams: new Counter({
      name: 'tether_agent_streams_total',
      help: 'Tunnel streams served, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    bytes: new Counter({
      name: 'tether_agent_bytes_total',
      help: 'Bytes carried between tunnel streams and targets',
      labelNames: ['direction'],
      registers: [registry],
    }),
  };
}
