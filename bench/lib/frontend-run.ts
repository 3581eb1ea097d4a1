// What the CONNECT-frontend scenarios of the tunnel benchmark share (frontend-scenarios.ts sets it
// up; frontend-latency.ts and the bulk and idle groups use it): the paths measured side by side,
// how their CPU is read, the sizes of a full or quick run, and the verdict helpers.
import { loadavg } from 'node:os';
import type { Endpoint, RemoteFrontendClient } from './frontend-client.ts';
import type { FrontendContext } from './frontend-scenarios.ts';
import type { Konnectivity } from './konnectivity.ts';
import { round } from './stats.ts';

/**
 * direct TLS (the baseline), tether's CONNECT frontend over HTTP/1.1 (one TLS connection per
 * tunnel) and over HTTP/2 (`h2`: every tunnel a stream of one TLS connection), tether's gRPC
 * frontend (`grpc`: konnectivity's ProxyService, a call per tunnel on one channel, from a grpc-js
 * client), konnectivity's HTTP-CONNECT frontend (with --anp)
 */
export type Side = 'direct' | 'frontend' | 'h2' | 'grpc' | 'anp';

/** Repeats of every measurement, interleaved across the sides. */
export const REPEATS = 3;

export interface Sizes {
  bulkTotal: number;
  rrIterations: number;
  rrWarmup: number;
  connectLatency: number;
  connectRate: number;
  rateOpeners: number;
  idle: number;
}

/** One run of the frontend scenarios: the context, the client process, and the paths. */
export interface FrontendRun {
  ctx: FrontendContext;
  sizes: Sizes;
  client: RemoteFrontendClient;
  paths: Record<'bulk' | 'echo', Record<Side, Endpoint>>;
  /** the paths measured, interleaved */
  sides: Side[];
  /** the sides in the order of repeat r: each repeat starts one later */
  order: (r: number) => Side[];
  /** CPU (µs) of the proxy side ("hub") and the cluster side of a path so far */
  cpu: (k: Side) => Promise<{ hub: number; agent: number }>;
  anp: Konnectivity | undefined;
}

export const la = (): number => round(loadavg()[0] ?? 0);
export const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');
