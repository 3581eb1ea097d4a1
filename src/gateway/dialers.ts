// A ClusterDialer for a gateway that runs apart from the proxy-server: every connection is an
// HTTP CONNECT on the proxy-server's frontend (the authority from tunnel/connect-authority.ts),
// authenticated with a proxy-client certificate or a hub bearer token, dialled by the one CONNECT
// client tether has (tunnel/forward-proxy.ts dialThroughProxy: the frontend is an https:// forward
// proxy whose refusals carry their own reasons). Failures come back as the same TetherError codes
// ProxyServer.dial throws (the frontend's tether-error header, else its status), so the gateway
// maps them the same way.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { TetherError, type TetherErrorCode } from '../errors.ts';
import { connectAuthority } from '../tunnel/connect-authority.ts';
import { dialThroughProxy } from '../tunnel/forward-proxy.ts';
import type { ClusterDialer } from './upstream.ts';

export { connectAuthority };

export interface ConnectFrontendDialerOptions {
  /** https://host:port of the CONNECT frontend */
  url: string;
  /** CA that verifies the frontend's serving certificate */
  caPem: string;
  certPem?: string;
  keyPem?: string;
  /** hub bearer token (Proxy-Authorization), instead of a client certificate */
  token?: string;
  /** TLS + CONNECT answer deadline (default 10 s) */
  timeoutMs?: number;
}

const codeForStatus: Record<number, TetherErrorCode> = {
  403: 'TETHER_TARGET_NOT_ALLOWED',
  407: 'TETHER_UNAUTHORIZED',
  502: 'TETHER_DIAL_FAILED',
  503: 'TETHER_NO_AGENT',
  504: 'TETHER_DIAL_TIMEOUT',
};

/** tether-error codes a CONNECT frontend answers with, taken over as they are. */
const knownCodes = new Set<string>([
  'TETHER_NO_AGENT',
  'TETHER_AGENT_UNRESPONSIVE',
  'TETHER_TARGET_NOT_ALLOWED',
  'TETHER_DIAL_FAILED',
  'TETHER_DIAL_TIMEOUT',
  'TETHER_LIMIT_EXCEEDED',
  'TETHER_PROTOCOL',
] satisfies TetherErrorCode[]);

const header = (res: IncomingMessage, name: string): string | undefined => {
  const value = res.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** The frontend's refusal as the TetherError ProxyServer.dial would have thrown. */
function frontendRefusal(res: IncomingMessage, authority: string): TetherError {
  const status = res.statusCode ?? 0;
  const reason = header(res, 'tether-reason') ?? `HTTP/1.1 ${status} ${res.statusMessage ?? ''}`.trim();
  // The frontend names the exact failure; the status alone is the fallback (older servers).
  const sent = header(res, 'tether-error');
  const code = sent && knownCodes.has(sent) ? (sent as TetherErrorCode) : codeForStatus[status];
  return new TetherError(code ?? 'TETHER_DIAL_FAILED', `CONNECT ${authority}: ${status} ${reason}`);
}

export function connectFrontendDialer(opts: ConnectFrontendDialerOptions): ClusterDialer {
  const url = new URL(opts.url);
  const frontend = new URL(`https://${url.host}`);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const clientCertificate =
    opts.certPem && opts.keyPem ? { certPem: opts.certPem, keyPem: opts.keyPem } : undefined;
  return async (cluster, target): Promise<Duplex> => {
    const authority = connectAuthority(cluster, target);
    const i = authority.lastIndexOf(':');
    try {
      return await dialThroughProxy(frontend, authority.slice(0, i), Number(authority.slice(i + 1)), {
        timeoutMs,
        proxyCa: opts.caPem,
        clientCertificate,
        proxyAuthorization: opts.token ? `Bearer ${opts.token}` : undefined,
        refusal: frontendRefusal,
        targetRole: `cluster ${cluster}`,
      });
    } catch (err) {
      throw dialError(err, authority, url.host);
    }
  };
}

/** The forward-proxy client's own failures in the codes a gateway dial reports. */
function dialError(err: unknown, authority: string, frontend: string): unknown {
  if (!(err instanceof TetherError)) return err;
  if (err.code === 'TETHER_TIMEOUT')
    return new TetherError('TETHER_DIAL_TIMEOUT', `CONNECT ${authority} via ${frontend} timed out`, {
      cause: err,
    });
  if (err.code === 'TETHER_PROXY_UNREACHABLE' || err.code === 'TETHER_PROXY_TLS')
    return new TetherError('TETHER_DIAL_FAILED', `CONNECT frontend ${frontend}: ${err.message}`, {
      cause: err,
    });
  return err;
}
