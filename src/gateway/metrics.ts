// Prometheus metrics of the gateway (prefix tether_gateway_), one registry per gateway instance.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface GatewayMetrics {
  registry: Registry;
  /** verb: GET/LIST/WATCH/POST/PUT/PATCH/DELETE/HEAD/OPTIONS/CONNECT (Upgrade); cluster '' for the API itself */
  requests: Counter<'cluster' | 'verb' | 'code'>;
  /** time to the response headers (the whole request for short ones) */
  latency: Histogram<'cluster' | 'verb'>;
  /** watches, follows and upgraded streams open right now */
  longRunning: Gauge<'cluster' | 'kind'>;
  authorizations: Counter<'decision'>;
}

export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  return {
    registry,
    requests: new Counter({
      name: 'tether_gateway_requests_total',
      help: 'Requests served by the gateway, by managed cluster, verb and HTTP status',
      labelNames: ['cluster', 'verb', 'code'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'tether_gateway_request_duration_seconds',
      help: 'Time from request to response headers, by managed cluster and verb',
      labelNames: ['cluster', 'verb'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    longRunning: new Gauge({
      name: 'tether_gateway_long_running_requests',
      help: 'Open long-running requests (kind: watch, follow, upgrade)',
      labelNames: ['cluster', 'kind'],
      registers: [registry],
    }),
    authorizations: new Counter({
      name: 'tether_gateway_authorization_decisions_total',
      help: 'SubjectAccessReview outcomes (cached or not): allowed, denied, error',
      labelNames: ['decision'],
      registers: [registry],
    }),
  };
}
