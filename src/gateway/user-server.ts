// The user-server: OCM cluster-proxy's `cluster-proxy-addon-user` endpoint, served by the gateway
// process on a port of its own. Plain HTTPS where the first path segment names the cluster:
//   https://<user-server>/<cluster>/api/v1/namespaces  →  GET /api/v1/namespaces on <cluster>'s apiserver
// through the tunnel (endpoint ClusterProxy, the gateway's dialer), TLS verified against the
// cluster's CA (the ManagedCluster's client config), any verb, Upgrades (exec, port-forward) too.
//
// Trust: the user-server adds no rights of its own. The caller's `Authorization: Bearer` token (a
// ManagedServiceAccount token, typically) and any Impersonate-* headers go through unchanged; the
// gateway presents no client certificate and no credential upstream, so the managed cluster's
// authenticator and RBAC decide everything — a token of another cluster's ServiceAccount is
// refused there (its signing key is not that cluster's). Requests without a bearer token are
// refused here (401): the user-server never forwards anonymous requests. Only accepted
// ManagedClusters are addressable. The path is checked before anything is dialled: the cluster
// segment must be a DNS label as written (no percent-encoding), the rest may hold no `.`/`..`
// segments (also encoded), and cluster-proxy's service-proxy form (`…/services/<svc>/proxy-service/…`,
// which needs cluster-proxy's exposed-services allowlist) is refused with a clear 400 rather than
// sent to an apiserver that would answer something else.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Caller } from './front-proxy.ts';
import { identityHeaderNames } from './front-proxy.ts';
import type { HealthMonitor } from './health.ts';
import { createGatewayListener, type GatewayListener } from './listener.ts';
import type { GatewayMetrics } from './metrics.ts';
import { type ProxyContext, proxyRequest } from './proxy.ts';
import { kubeStatus, sendStatus, sendStatusOnSocket } from './status.ts';
import type { ClusterGatewayStore } from './store.ts';
import { proxyUpgrade } from './upgrade.ts';
import { type ClusterDialer, UpstreamPools } from './upstream.ts';

/** OCM's Service name and port of the user-server (cluster-proxy's constants). */
export const userServerServiceName = 'cluster-proxy-addon-user';
export const userServerPort = 9092;

export interface UserServerOptions {
  store: ClusterGatewayStore;
  dial: ClusterDialer;
  host: string;
  /** 0 = any free port */
  port: number;
  /** serving certificate (clients verify it: the MSA Secret's kubeconfig carries its CA) */
  tls: { certPem: string; keyPem: string };
  metrics: GatewayMetrics;
  health: HealthMonitor;
  /** upstream connections (= tunnel streams) per cluster (default 1024) */
  maxConnectionsPerCluster?: number;
  upstreamConnectTimeoutMs?: number;
  upstreamHeadersTimeoutMs?: number;
  log: Logger;
}

export interface UserServer {
  port: number;
  stop(): Promise<void>;
}

export type UserServerRoute =
  | { ok: true; cluster: string; path: string; query: string }
  | { ok: false; code: number; message: string };

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A path segment that means "this" or "parent", as sent or percent-encoded. */
function isDotSegment(segment: string): boolean {
  return /^(\.|%2e){1,2}$/i.test(segment);
}

/** `/<cluster>/<rest>?<query>` → the cluster and what its apiserver gets; a refusal otherwise. */
export function userServerRoute(url: string): UserServerRoute {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1);
  const fail = (message: string): UserServerRoute => ({ ok: false, code: 400, message });
  if (!path.startsWith('/')) return fail('the path must be /<cluster>/<apiserver path>');
  const slash = path.indexOf('/', 1);
  const cluster = slash < 0 ? path.slice(1) : path.slice(1, slash);
  if (!cluster) return { ok: false, code: 404, message: 'name a cluster: /<cluster>/<apiserver path>' };
  if (!dnsLabel.test(cluster))
    return fail(`"${cluster.slice(0, 80)}" is not a cluster name (a DNS label, not percent-encoded)`);
  const rest = slash < 0 ? '/' : path.slice(slash);
  const segments = rest.split('/');
  if (segments.some(isDotSegment)) return fail('the path may not contain "." or ".." segments');
  // cluster-proxy's service proxy: /api/v1/namespaces/<ns>/services/<svc>/proxy-service/<path>
  if (segments.length > 8 && segments[5] === 'services' && segments[7] === 'proxy-service')
    return fail(
      'service-proxy paths (…/services/<svc>/proxy-service/…) are not served; use the apiserver\'s own services/<svc>/proxy or "CONNECT <export>.<cluster>:<port>" on the proxy-server',
    );
  return { ok: true, cluster, path: rest, query };
}

/** Whether the request carries a bearer token (the only credential passed through). */
export function hasBearerToken(req: IncomingMessage): boolean {
  const value = req.headers.authorization;
  return typeof value === 'string' && /^Bearer\s+\S+$/i.test(value);
}

/** Nobody: the user-server impersonates no one (the passthrough context never reads it). */
const nobody: Caller = Object.freeze({ user: '', groups: [], extra: {} }) as Caller;

export async function startUserServer(o: UserServerOptions): Promise<UserServer> {
  const log = o.log.child({ component: 'user-server' });
  // Pools of their own: their TLS contexts carry the cluster CA and never the gateway's certificate.
  const pools = new UpstreamPools({
    dial: o.dial,
    maxConnectionsPerCluster: o.maxConnectionsPerCluster,
    connectTimeoutMs: o.upstreamConnectTimeoutMs,
    headersTimeoutMs: o.upstreamHeadersTimeoutMs,
    log,
  });
  const ctx: ProxyContext = {
    pools,
    health: o.health,
    metrics: o.metrics,
    identityMode: 'shared',
    // X-Remote-* mean nothing to an apiserver without a front-proxy certificate; dropped anyway
    identity: identityHeaderNames(undefined),
    passthrough: true,
    log,
  };
  const count = (code: number, verb: string): void => {
    o.metrics.requests.inc({ cluster: '', verb, code: String(code) });
  };

  /** The route and upstream of a request, or undefined after answering the refusal with `fail`. */
  const admit = (req: IncomingMessage, verb: string, fail: (s: ReturnType<typeof kubeStatus>) => void) => {
    const url = req.url ?? '/';
    if (url === '/healthz' || url === '/readyz' || url === '/livez') return 'health' as const;
    const route = userServerRoute(url);
    if (!route.ok) {
      count(route.code, verb);
      fail(kubeStatus(route.code, route.message));
      return undefined;
    }
    if (!hasBearerToken(req)) {
      count(401, verb);
      fail(
        kubeStatus(
          401,
          'Unauthorized: send the managed cluster credential as "Authorization: Bearer <token>" (it is passed through; anonymous requests are not)',
        ),
      );
      return undefined;
    }
    const up = o.store.apiserverUpstream(route.cluster);
    if (!up) {
      count(404, verb);
      fail(
        kubeStatus(404, `cluster "${route.cluster}" is not an accepted ManagedCluster`, {
          name: route.cluster,
          kind: 'managedclusters',
        }),
      );
      return undefined;
    }
    return { route, up };
  };

  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const admitted = admit(req, req.method ?? 'GET', (s) => sendStatus(res, s));
    if (admitted === 'health') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (!admitted) {
      req.resume();
      return;
    }
    const { route, up } = admitted;
    await proxyRequest(ctx, req, res, up, nobody, route.path, route.query);
  };

  const onUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const admitted = admit(req, 'CONNECT', (s) => sendStatusOnSocket(socket, s));
    if (admitted === 'health') return sendStatusOnSocket(socket, kubeStatus(400, 'not an upgrade path'));
    if (!admitted) return;
    const { route, up } = admitted;
    await proxyUpgrade(ctx, req, socket, head, up, nobody, route.path, route.query);
  };

  const listener: GatewayListener = createGatewayListener({
    tls: o.tls,
    onRequest: (req, res) => {
      onRequest(req, res).catch((err: unknown) => {
        log.error({ err: errorMessage(err), url: req.url }, 'user-server request failed');
        sendStatus(res, kubeStatus(500, `internal error: ${errorMessage(err)}`));
      });
    },
    onUpgrade: (req, socket, head) => {
      onUpgrade(req, socket, head).catch((err: unknown) => {
        log.error({ err: errorMessage(err), url: req.url }, 'user-server upgrade failed');
        sendStatusOnSocket(socket, kubeStatus(500, `internal error: ${errorMessage(err)}`));
      });
    },
    log,
  });
  const unsubscribe = o.store.subscribe(o.store.resourceVersion, (e) => {
    if (e.type === 'DELETED') pools.forget(e.object.metadata.name ?? '');
  });
  let port: number;
  try {
    port = await listener.listen(o.port, o.host);
  } catch (err) {
    if (unsubscribe !== 'expired') unsubscribe.unsubscribe();
    await pools.close();
    throw err;
  }
  log.info({ host: o.host, port }, 'user-server serving (bearer tokens passed through to managed clusters)');
  return {
    port,
    async stop() {
      if (unsubscribe !== 'expired') unsubscribe.unsubscribe();
      await Promise.all([listener.close(), pools.close()]);
    },
  };
}
