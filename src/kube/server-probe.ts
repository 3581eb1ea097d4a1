// One cheap request to an apiserver, to learn whether it can be reached again after an outage.
//
// GET /readyz goes through client-node's own request path (the kubeconfig's credentials, proxy-url
// and TLS settings, the pooled dispatcher of dispatcher.ts), so it travels exactly the way the
// informers' requests do. /readyz (like /version, /healthz, /livez) is readable by every
// authenticated identity in kube's default RBAC (system:public-info-viewer), so restricted agents
// may probe too; a 401 or 403 still proves the server itself answered.
import './dispatcher.ts';
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';

/** The path probed, relative to the kubeconfig's server URL. */
export const PROBE_PATH = '/readyz';

/** A probe answer is a few bytes ("ok"); a longer body is not read (the connection is dropped). */
const MAX_PROBE_BODY_BYTES = 64 * 1024;

/**
 * True when the server behind `kc` answered /readyz itself: ready (2xx) or refusing this identity
 * (401/403). False for 5xx (not ready yet, or a proxy answering for a server it cannot reach).
 * Throws when there was no answer at all (connection refused or reset, timeout, proxy failure).
 */
export async function probeServer(kc: KubeConfig, signal: AbortSignal): Promise<boolean> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster to probe');
  const ctx = new RequestContext(`${cluster.server.replace(/\/+$/, '')}${PROBE_PATH}`, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  const response = await fetch(ctx.getUrl(), {
    method: 'GET',
    headers: ctx.getHeaders(),
    dispatcher: ctx.getDispatcher(),
    signal,
  });
  // Read the (tiny) body so the connection goes back to the pool; never a large one.
  const length = Number(response.headers.get('content-length') ?? MAX_PROBE_BODY_BYTES + 1);
  if (length <= MAX_PROBE_BODY_BYTES) await response.arrayBuffer().catch(() => {});
  else await response.body?.cancel().catch(() => {});
  return response.status < 500;
}
