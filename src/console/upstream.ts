// The console's one way to the hub: a GET to the kube-apiserver of a kubeconfig, made with that
// kubeconfig's own credentials exactly as client-node makes its requests (RequestContext +
// applySecurityAuthentication: bearer token or exec plugin in headers, client certificate, CA,
// proxy-url and tls-server-name in the pooled undici dispatcher of src/kube/dispatcher.ts). Like
// `kubectl proxy`: the console holds no credential of its own, so it can never do more than the
// viewer may. The answer comes back as a stream, unread: a watch flows through as it arrives.
import '../kube/dispatcher.ts';
import type { Readable } from 'node:stream';
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { request } from 'undici';

/** The request headers passed on from the browser; everything else (cookies, auth) is dropped. */
export const FORWARDED_REQUEST_HEADERS: readonly string[] = ['accept'];

/** The response headers passed back to the browser. */
export const FORWARDED_RESPONSE_HEADERS: readonly string[] = ['content-type', 'content-length', 'audit-id'];

/** How long the apiserver may take to send a response's headers. */
export const UPSTREAM_HEADERS_TIMEOUT_MS = 30_000;

export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: Readable;
}

/** The apiserver URL of `kc`'s current cluster, without a trailing slash. */
export function apiserverUrl(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  return cluster.server.replace(/\/+$/, '');
}

/**
 * GET `pathAndQuery` (already checked, starting with `/`) from the apiserver of `kc` as its user.
 * `watch` lifts the body timeout: a quiet watch may go minutes between events. `signal` aborts it
 * (the browser went away). Rejects only when no response arrived (connect, TLS, proxy failure).
 */
export async function getFromApiserver(
  kc: KubeConfig,
  pathAndQuery: string,
  requestHeaders: Record<string, string | string[] | undefined>,
  opts: { watch: boolean; signal: AbortSignal },
): Promise<UpstreamResponse> {
  const ctx = new RequestContext(`${apiserverUrl(kc)}${pathAndQuery}`, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  const headers: Record<string, string> = { ...ctx.getHeaders() };
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = requestHeaders[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const response = await request(ctx.getUrl(), {
    method: 'GET',
    headers,
    dispatcher: ctx.getDispatcher(),
    signal: opts.signal,
    headersTimeout: UPSTREAM_HEADERS_TIMEOUT_MS,
    ...(opts.watch ? { bodyTimeout: 0 } : {}),
  });
  const out: Record<string, string> = {};
  for (const name of FORWARDED_RESPONSE_HEADERS) {
    const value = response.headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  return { statusCode: response.statusCode, headers: out, body: response.body };
}
