// The gateway: an aggregated apiserver for cluster.core.oam.dev/v1alpha1 behind the hub
// kube-apiserver. It serves only the aggregator (front-proxy client certificate), authorizes every
// caller with a SubjectAccessReview, serves discovery/OpenAPI and the clustergateways resource, and
// forwards the proxy subresource into managed clusters through `dial` (the reverse tunnel).
// Subresources: `proxy` (proxy.ts, upgrade.ts), `health` (health.ts: probes the cluster, answers the
// ClusterGateway), `tunnel` (tunnel.ts: the proxy-server's status of the cluster's tunnel — agents,
// replicas, bytes, open streams, last error — `?watch=1` streaming; from tunnel-source.ts, with the
// dialer's own proxy-client credentials). Besides the API, the fleet console's static files at
// /apis/cluster.core.oam.dev/v1alpha1/console/ (console.ts), for `kubectl proxy` users.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { errorMessage, InvalidArgumentError } from '../errors.ts';
import { type Logger, logger as makeLogger } from '../log.ts';
import {
  type AccessRequest,
  type AuthorizerOptions,
  forbiddenMessage,
  SubjectAccessReviewAuthorizer,
  verbForProxyRequest,
} from './authorizer.ts';
import { consoleRouteOf, serveConsole } from './console.ts';
import {
  apiGroupDocument,
  apiGroupList,
  apiResourceList,
  openApiV2,
  openApiV3GroupVersion,
  openApiV3GroupVersionPath,
  openApiV3Root,
} from './discovery.ts';
import {
  type Caller,
  FrontProxyAuthenticator,
  identityHeaderNames,
  type RequestHeaderConfig,
} from './front-proxy.ts';
import { HealthMonitor } from './health.ts';
import type { GatewayIdentityMode } from './identity.ts';
import { createGatewayListener, type GatewayListener } from './listener.ts';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.ts';
import { type ProxyContext, proxyRequest } from './proxy.ts';
import {
  getClusterGateway,
  listClusterGateways,
  notFound,
  type WatchLimits,
  watchClusterGateways,
} from './resources.ts';
import { selectorMatcher } from './selectors.ts';
import { kubeStatus, sendStatus, sendStatusOnSocket } from './status.ts';
import { ClusterGatewayStore } from './store.ts';
import { serveTunnel } from './tunnel.ts';
import type { TunnelStatusSource } from './tunnel-source.ts';
import { defaultCredentialNamespace, defaultGatewayMsaName, gatewayGroup, gatewayVersion } from './types.ts';
import { proxyUpgrade } from './upgrade.ts';
import { type ClusterDialer, UpstreamPools } from './upstream.ts';
import { startUserServer, type UserServer } from './user-server.ts';

export interface GatewayOptions {
  /** hub identity of the gateway: watches ManagedClusters/Secrets, creates SubjectAccessReviews */
  hubKubeConfig: KubeConfig;
  /** opens a stream to `kube-apiserver:443` inside a cluster (ProxyServer.dial, connectFrontendDialer) */
  dial: ClusterDialer;
  host: string;
  /** 0 = any free port */
  port: number;
  /** serving certificate; the APIService caBundle must verify it for `<service>.<namespace>.svc` */
  tls: { certPem: string; keyPem: string };
  /** ManagedServiceAccount whose token Secret authenticates the gateway (default tether-gateway) */
  msaName?: string;
  /** namespace of cluster-gateway credential Secrets (default open-cluster-management-credentials) */
  credentialNamespace?: string;
  /**
   * who acts on managed clusters: `impersonate` (default) the hub caller as `cluster:hub:<user>`,
   * `shared` the gateway's own credential (except where a ClusterGateway asks for impersonation)
   */
  identityMode?: GatewayIdentityMode;
  /** SubjectAccessReview cache (default: grants 10 s, denials 3 s, 10 000 decisions) */
  authorization?: AuthorizerOptions;
  /** health probe period (default 10 s) */
  healthIntervalMs?: number;
  /** upstream connections per cluster (default 1024) */
  maxConnectionsPerCluster?: number;
  /** dial + TLS handshake deadline per upstream connection (default 10 s) */
  upstreamConnectTimeoutMs?: number;
  /** upstream response headers deadline, ordinary requests (default 60 s) */
  upstreamHeadersTimeoutMs?: number;
  watch?: Partial<WatchLimits>;
  /**
   * also serve the user-server (cluster-proxy's `/<cluster>/…` endpoint, bearer tokens passed
   * through; user-server.ts) on this address; default its serving certificate is the gateway's
   */
  userServer?: { host: string; port: number; tls?: { certPem: string; keyPem: string } };
  /**
   * where the `tunnel` subresource gets tunnel status (tunnel-source.ts: the proxy-server's
   * frontend with the dialer's credentials, or an in-process ProxyServer); left out, it answers 503
   */
  tunnelStatus?: TunnelStatusSource;
  /** a `tunnel` watch ends after this long at most (default 50 s, under the apiserver's request timeout) */
  tunnelWatchSeconds?: number;
  /** informers' first sync (default 30 s) */
  startTimeoutMs?: number;
  log?: Logger;
}

export interface Gateway {
  port: number;
  /** the user-server's port, when one was asked for */
  userServerPort?: number;
  registry: Registry;
  metrics: GatewayMetrics;
  store: ClusterGatewayStore;
  stop(): Promise<void>;
}

const apiPrefix = `/apis/${gatewayGroup}/${gatewayVersion}`;

interface Route {
  kind: 'list' | 'watch' | 'get' | 'health' | 'tunnel' | 'proxy';
  name?: string;
  /** proxy: the upstream path (raw, as received), always starting with '/' */
  rest?: string;
}

/** Maps a request path under /apis/cluster.core.oam.dev/v1alpha1 to what it addresses. */
export function routeOf(path: string, query: URLSearchParams): Route | undefined {
  if (!path.startsWith(`${apiPrefix}/`)) return undefined;
  const rest = path.slice(apiPrefix.length + 1);
  const parts = rest.split('/');
  if (parts[0] === 'watch' && parts[1] === 'clustergateways' && parts.length <= 3) {
    return { kind: 'watch', name: parts[2] ? decodeURIComponent(parts[2]) : undefined };
  }
  if (parts[0] !== 'clustergateways') return undefined;
  if (parts.length === 1 || (parts.length === 2 && parts[1] === '')) {
    return { kind: /^(true|1)$/.test(query.get('watch') ?? '') ? 'watch' : 'list' };
  }
  const name = decodeURIComponent(parts[1] ?? '');
  if (!name) return undefined;
  if (parts.length === 2) return { kind: 'get', name };
  if (parts[2] === 'health' && parts.length === 3) return { kind: 'health', name };
  if (parts[2] === 'tunnel' && parts.length === 3) return { kind: 'tunnel', name };
  if (parts[2] === 'proxy') {
    const prefix = `clustergateways/${parts[1]}/proxy`;
    const after = rest.slice(prefix.length);
    return { kind: 'proxy', name, rest: after.startsWith('/') ? after : `/${after}` };
  }
  return undefined;
}

function sendBody(res: ServerResponse, body: string, etag: string, req: IncomingMessage): void {
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, { etag }).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), etag });
  res.end(body);
}

export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const log = opts.log ?? makeLogger('gateway');
  const metrics = createGatewayMetrics();
  let listener: GatewayListener | undefined;
  const authn = new FrontProxyAuthenticator({
    hubKubeConfig: opts.hubKubeConfig,
    log,
    onCaChange: (ca) => listener?.setClientCa(ca),
  });
  const authz = new SubjectAccessReviewAuthorizer(opts.hubKubeConfig, opts.authorization);
  const store = new ClusterGatewayStore({
    hubKubeConfig: opts.hubKubeConfig,
    msaName: opts.msaName ?? defaultGatewayMsaName,
    credentialNamespace: opts.credentialNamespace ?? defaultCredentialNamespace,
    log,
  });
  const pools = new UpstreamPools({
    dial: opts.dial,
    maxConnectionsPerCluster: opts.maxConnectionsPerCluster,
    connectTimeoutMs: opts.upstreamConnectTimeoutMs,
    headersTimeoutMs: opts.upstreamHeadersTimeoutMs,
    log,
  });
  const health = new HealthMonitor({ store, pools, intervalMs: opts.healthIntervalMs, log });
  const watchLimits: WatchLimits = {
    maxBufferedBytes: 8 * 1024 * 1024,
    bookmarkIntervalMs: 30_000,
    maxWatchSeconds: 1800,
    ...opts.watch,
  };
  const stopAll = async (): Promise<void> => {
    health.stop();
    await Promise.all([authn.stop(), store.stop(), pools.close()]);
  };
  let requestHeaders: RequestHeaderConfig;
  try {
    const timeoutMs = opts.startTimeoutMs ?? 30_000;
    [requestHeaders] = await Promise.all([authn.start(timeoutMs), store.start(timeoutMs)]);
  } catch (err) {
    await stopAll();
    throw err;
  }
  const unsubscribePools = store.subscribe(store.resourceVersion, (e) => {
    if (e.type === 'DELETED') pools.forget(e.object.metadata.name ?? '');
  });
  health.start();
  const proxyCtx: ProxyContext = {
    pools,
    health,
    metrics,
    identityMode: opts.identityMode ?? 'impersonate',
    identity: identityHeaderNames(requestHeaders),
    log,
  };

  /** Authenticates and authorizes; answers the failure itself and returns undefined. */
  const admit = async (
    req: IncomingMessage,
    access: AccessRequest | undefined,
    fail: (status: ReturnType<typeof kubeStatus>) => void,
  ): Promise<{ caller: Caller | undefined } | undefined> => {
    const result = authn.authenticate(req);
    if (!result.ok) {
      fail(kubeStatus(401, `Unauthorized: ${result.reason}`));
      return undefined;
    }
    if (!access) return { caller: result.caller };
    if (!result.caller) {
      fail(kubeStatus(401, 'Unauthorized: the front proxy named no user'));
      return undefined;
    }
    try {
      const decision = await authz.authorize(result.caller, access);
      metrics.authorizations.inc({ decision: decision.allowed ? 'allowed' : 'denied' });
      if (decision.allowed) return { caller: result.caller };
      const why = decision.reason ? `: ${decision.reason}` : '';
      fail(
        kubeStatus(403, forbiddenMessage(result.caller, access) + why, {
          name: access.name,
          group: gatewayGroup,
          kind: access.resource ?? 'clustergateways',
        }),
      );
    } catch (err) {
      metrics.authorizations.inc({ decision: 'error' });
      log.warn({ err: errorMessage(err) }, 'SubjectAccessReview failed');
      fail(kubeStatus(500, `authorization failed: ${errorMessage(err)}`));
    }
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q + 1);
    const params = new URLSearchParams(query);
    const method = req.method ?? 'GET';
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    const route = routeOf(path, params);
    const count = (code: number, verb = method): void => {
      metrics.requests.inc({ cluster: '', verb, code: String(code) });
    };
    const fail = (status: ReturnType<typeof kubeStatus>): void => {
      count(status.code);
      sendStatus(res, status);
    };
    const consoleRoute = route ? undefined : consoleRouteOf(path);
    if (consoleRoute) {
      // authenticated and authorized first, as every request here: a stranger learns nothing more
      if (!(await admit(req, consoleRoute.access, fail))) return;
      if (method !== 'GET' && method !== 'HEAD')
        return fail(kubeStatus(405, `${method} is not allowed on the console; it is read-only`));
      count(consoleRoute.file === 'missing' ? 404 : 200);
      return serveConsole(req, res, consoleRoute.file);
    }
    if (!route) {
      const docs: Record<string, { body: string; etag: string }> = {
        '/apis': { body: JSON.stringify(apiGroupList), etag: '' },
        [`/apis/${gatewayGroup}`]: { body: JSON.stringify(apiGroupDocument), etag: '' },
        [apiPrefix]: { body: JSON.stringify(apiResourceList), etag: '' },
        '/openapi/v2': openApiV2,
        '/openapi/v3': openApiV3Root,
        [`/openapi/v3/${openApiV3GroupVersionPath}`]: openApiV3GroupVersion,
      };
      const doc = docs[path.replace(/\/$/, '')];
      if (!(await admit(req, undefined, fail))) return;
      if (!doc) return fail(kubeStatus(404, `the server could not find the requested resource (${path})`));
      if (method !== 'GET' && method !== 'HEAD')
        return fail(kubeStatus(405, `${method} is not allowed on ${path}`));
      count(200);
      return sendBody(res, doc.body, doc.etag, req);
    }
    const name = route.name;
    if (route.kind === 'proxy') {
      const rest = route.rest ?? '/';
      const access: AccessRequest = {
        verb: verbForProxyRequest(method, rest, false),
        subresource: 'proxy',
        name,
      };
      const caller = (await admit(req, access, fail))?.caller;
      if (!caller) return;
      const up = store.upstream(name ?? '');
      if (!up) return fail(notFound(name ?? ''));
      return proxyRequest(proxyCtx, req, res, up, caller, rest, query, params);
    }
    if (method !== 'GET') return fail(kubeStatus(405, `${method} is not supported on clustergateways`));
    const verb = route.kind === 'health' || route.kind === 'tunnel' ? 'get' : route.kind;
    const access: AccessRequest = {
      verb,
      ...(route.kind === 'health' || route.kind === 'tunnel' ? { subresource: route.kind } : {}),
      ...(name ? { name } : {}),
    };
    if (!(await admit(req, access, fail))) return;
    if (route.kind === 'tunnel') {
      if (!store.get(name ?? '')) return fail(notFound(name ?? ''));
      const watch = /^(true|1)$/.test(params.get('watch') ?? '');
      count(200, watch ? 'WATCH' : 'GET');
      const running = watch ? metrics.longRunning.labels({ cluster: '', kind: 'watch' }) : undefined;
      running?.inc();
      try {
        return await serveTunnel(
          { source: opts.tunnelStatus, maxWatchSeconds: opts.tunnelWatchSeconds, log },
          res,
          name ?? '',
          watch,
          params,
        );
      } finally {
        running?.dec();
      }
    }
    const accept = req.headers.accept;
    let matches: ReturnType<typeof selectorMatcher>;
    try {
      const fieldSelector = [
        params.get('fieldSelector'),
        name && route.kind === 'watch' ? `metadata.name=${name}` : '',
      ]
        .filter(Boolean)
        .join(',');
      const selectorParams = new URLSearchParams(params);
      selectorParams.set('fieldSelector', fieldSelector);
      matches = selectorMatcher(selectorParams);
    } catch (err) {
      if (err instanceof InvalidArgumentError) return fail(kubeStatus(400, err.message));
      throw err;
    }
    switch (route.kind) {
      case 'list':
        count(200, 'LIST');
        return listClusterGateways(store, res, matches, accept, params);
      case 'get':
        if (store.get(name ?? '')) count(200);
        else count(404);
        return getClusterGateway(store, res, name ?? '', accept, params);
      case 'watch':
        count(200, 'WATCH');
        return watchClusterGateways(store, res, matches, accept, params, watchLimits, () => {
          const g = metrics.longRunning.labels({ cluster: '', kind: 'watch' });
          g.inc();
          return () => g.dec();
        });
      case 'health': {
        if (!store.get(name ?? '')) return fail(notFound(name ?? ''));
        await health.probe(name ?? '');
        count(200);
        return getClusterGateway(store, res, name ?? '', accept, params);
      }
    }
  };

  const handleUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q + 1);
    const route = routeOf(path, new URLSearchParams(query));
    const fail = (status: ReturnType<typeof kubeStatus>): void => {
      metrics.requests.inc({ cluster: '', verb: 'CONNECT', code: String(status.code) });
      sendStatusOnSocket(socket, status);
    };
    if (route?.kind !== 'proxy')
      return fail(kubeStatus(400, `${path} cannot be upgraded; only clustergateways/<name>/proxy`));
    const access: AccessRequest = {
      verb: verbForProxyRequest(req.method ?? 'GET', route.rest ?? '/', true),
      subresource: 'proxy',
      name: route.name,
    };
    const caller = (await admit(req, access, fail))?.caller;
    if (!caller) return;
    const up = store.upstream(route.name ?? '');
    if (!up) return fail(notFound(route.name ?? ''));
    return proxyUpgrade(proxyCtx, req, socket, head, up, caller, route.rest ?? '/', query);
  };

  // HTTP/2 for the aggregator (one connection for all its requests and watches, see http.ts),
  // HTTP/1.1 for Upgrades and other clients, on one port (listener.ts).
  const listening = createGatewayListener({
    tls: opts.tls,
    clientCaPem: requestHeaders.clientCaPem,
    onRequest: (req, res) => {
      handle(req, res).catch((err: unknown) => {
        log.error({ err: errorMessage(err), url: req.url }, 'request failed');
        sendStatus(res, kubeStatus(500, `internal error: ${errorMessage(err)}`));
      });
    },
    onUpgrade: (req, socket, head) => {
      handleUpgrade(req, socket, head).catch((err: unknown) => {
        log.error({ err: errorMessage(err), url: req.url }, 'upgrade failed');
        sendStatusOnSocket(socket, kubeStatus(500, `internal error: ${errorMessage(err)}`));
      });
    },
    log,
  });
  listener = listening;
  let port: number;
  try {
    port = await listening.listen(opts.port, opts.host);
  } catch (err) {
    await stopAll();
    throw err;
  }
  let userServer: UserServer | undefined;
  if (opts.userServer) {
    try {
      userServer = await startUserServer({
        store,
        dial: opts.dial,
        host: opts.userServer.host,
        port: opts.userServer.port,
        tls: opts.userServer.tls ?? opts.tls,
        metrics,
        health,
        maxConnectionsPerCluster: opts.maxConnectionsPerCluster,
        upstreamConnectTimeoutMs: opts.upstreamConnectTimeoutMs,
        upstreamHeadersTimeoutMs: opts.upstreamHeadersTimeoutMs,
        log,
      });
    } catch (err) {
      await listening.close();
      await stopAll();
      throw err;
    }
  }
  log.info(
    { host: opts.host, port, clusters: store.names().length, identityMode: proxyCtx.identityMode },
    'gateway serving',
  );
  if (proxyCtx.identityMode === 'shared') {
    log.warn(
      'shared identity: every caller the hub lets through acts as the gateway credential on managed clusters ' +
        '(except where a ClusterGateway asks for impersonation); their RBAC cannot tell callers apart',
    );
  }
  return {
    port,
    ...(userServer ? { userServerPort: userServer.port } : {}),
    registry: metrics.registry,
    metrics,
    store,
    async stop() {
      const closed = listening.close();
      await userServer?.stop();
      if (unsubscribePools !== 'expired') unsubscribePools.unsubscribe();
      await stopAll();
      await closed;
    },
  };
}
