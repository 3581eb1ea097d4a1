// The one HTTP CONNECT forward-proxy dialer of tether: which proxy a target goes through (an
// explicit proxy URL, else the environment as src/proxy-env.ts reads it) and a raw tunnelled socket
// through it.
// The tunnel is opaque: callers run TLS to the real destination inside it, so the proxy never sees
// or terminates that TLS. Owns no connections after it hands the socket over. Credentials from the
// proxy URL go into Proxy-Authorization only, never into an error message or log line.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type Socket } from 'node:net';
import { TetherError } from '../errors.ts';
import { describeProxy, type ProxyEnv, proxyFromEnv } from '../proxy-env.ts';

export { describeProxy };

/** How long the whole dial (TCP, TLS to an https proxy, CONNECT answer) may take by default. */
export const DEFAULT_PROXY_DIAL_TIMEOUT_MS = 10_000;
/** Largest CONNECT response header we parse (node's own default, made explicit). */
export const PROXY_RESPONSE_MAX_HEADER_BYTES = 16 * 1024;

/** Parses a proxy setting the way curl and Go do: a missing scheme means http://. */
function parseProxyUrl(raw: string, source: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new TetherError('TETHER_INVALID_ARGUMENT', `${source} "${describeProxy(raw)}" is not a valid URL`);
  }
  checkProxyProtocol(url, source);
  return url;
}

function checkProxyProtocol(url: URL, source: string): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `${source} ${describeProxy(url)}: only http:// and https:// forward proxies (HTTP CONNECT) are supported`,
    );
  }
  if (!url.hostname)
    throw new TetherError('TETHER_INVALID_ARGUMENT', `${source} ${describeProxy(url)} has no host`);
}

function defaultPort(protocol: string): number {
  return protocol === 'https:' || protocol === 'wss:' ? 443 : 80;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * The forward proxy to use for `target`, or undefined for a direct connection. An explicit
 * `proxyUrl` (kubeconfig `proxy-url`, a flag) wins and ignores NO_PROXY, as in client-go; otherwise
 * the environment decides through proxyFromEnv (src/proxy-env.ts), the same resolution every API
 * client uses. Throws TETHER_INVALID_ARGUMENT for proxies that are not http:// or https://
 * (socks5:// is not supported by the tunnel).
 */
export function proxyForUrl(
  target: URL | string,
  opts: { proxyUrl?: string; env?: ProxyEnv } = {},
): URL | undefined {
  if (opts.proxyUrl?.trim()) return parseProxyUrl(opts.proxyUrl.trim(), 'proxy URL');
  const fromEnv = proxyFromEnv(target, opts.env ?? process.env);
  return fromEnv === undefined ? undefined : parseProxyUrl(fromEnv, 'proxy from the environment');
}

export interface DialThroughProxyOptions {
  /** deadline for the whole dial (ms); default 10 s */
  timeoutMs?: number;
  /** PEM bundle that signs an https:// proxy's certificate (default: the system roots) */
  proxyCa?: string | string[];
  signal?: AbortSignal;
  /**
   * What listens at host:port, for error messages ("the proxy-server"); default "the server at
   * host:port".
   */
  targetRole?: string;
  /** client certificate for TLS to an https:// proxy (the proxy-server's CONNECT frontend) */
  clientCertificate?: { certPem: string; keyPem: string };
  /** Proxy-Authorization value (e.g. `Bearer <token>`); default: Basic from the proxy URL's userinfo */
  proxyAuthorization?: string;
  /**
   * For a non-2xx answer: the error to fail with instead of the TETHER_PROXY_* mapping below (a
   * proxy that names its failure in headers, as the proxy-server's frontend does); undefined keeps
   * the mapping.
   */
  refusal?: (res: IncomingMessage, authority: string) => Error | undefined;
}

function proxyAuthorization(proxy: URL): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  let user: string;
  let pass: string;
  try {
    user = decodeURIComponent(proxy.username);
    pass = decodeURIComponent(proxy.password);
  } catch {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `credentials in proxy URL ${describeProxy(proxy)} are not valid percent-encoding`,
    );
  }
  return `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
}

/** Longest piece of a proxy's answer quoted in an error message. */
const PROXY_QUOTE_MAX_CHARS = 200;

/**
 * The proxy's own words for a failed CONNECT, for an error message: its status line, and squid's
 * `X-Squid-Error` (e.g. `ERR_CONNECT_FAIL 111`) when it sent one. Anything but printable ASCII becomes a space.
 */
function proxySaid(res: IncomingMessage): string {
  const clean = (v: string): string =>
    v
      .replace(/[^ -~]/g, ' ')
      .trim()
      .slice(0, PROXY_QUOTE_MAX_CHARS);
  const line = clean(`${res.statusCode ?? 0} ${res.statusMessage ?? ''}`);
  const squid = res.headers['x-squid-error'];
  const detail = typeof squid === 'string' && squid.trim() ? `, ${clean(squid)}` : '';
  return `the proxy said ${line}${detail}`;
}

const TLS_ERROR = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_|HOSTNAME|ALTNAME|EPROTO/i;

/**
 * Opens a tunnel to host:port through `proxy` with HTTP CONNECT and resolves with the raw socket
 * (a TLSSocket to the proxy when the proxy is https://). Basic credentials come from the proxy URL
 * userinfo. Fails with TETHER_PROXY_UNREACHABLE (no connection to the proxy), TETHER_PROXY_TLS
 * (TLS to an https proxy failed), TETHER_PROXY_AUTH (407), TETHER_PROXY_UPSTREAM_FAILED (502, 503,
 * 504: the proxy could not reach host:port), TETHER_PROXY_REFUSED (any other
 * non-2xx), TETHER_PROTOCOL (not an HTTP answer, or headers over PROXY_RESPONSE_MAX_HEADER_BYTES)
 * or TETHER_TIMEOUT; an abort rejects with the signal's reason.
 */
export function dialThroughProxy(
  proxy: URL,
  host: string,
  port: number,
  opts: DialThroughProxyOptions = {},
): Promise<Socket> {
  checkProxyProtocol(proxy, 'proxy URL');
  const bareHost = stripBrackets(host);
  if (!/^[A-Za-z0-9._:%-]+$/.test(bareHost)) {
    throw new TetherError('TETHER_INVALID_ARGUMENT', `cannot CONNECT to host "${host}"`);
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new TetherError('TETHER_INVALID_ARGUMENT', `cannot CONNECT to port ${port}`);
  }
  const authority = `${isIP(bareHost) === 6 ? `[${bareHost}]` : bareHost}:${port}`;
  const auth = opts.proxyAuthorization ?? proxyAuthorization(proxy);
  const name = describeProxy(proxy);
  const secure = proxy.protocol === 'https:';
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROXY_DIAL_TIMEOUT_MS;
  const signal = opts.signal;
  signal?.throwIfAborted();

  return new Promise<Socket>((resolve, reject) => {
    let settled = false;
    let phase: 'connecting to' | 'waiting for the CONNECT answer from' = 'connecting to';
    let tcpConnected = false;
    const req = (secure ? httpsRequest : httpRequest)({
      host: stripBrackets(proxy.hostname),
      port: proxy.port ? Number(proxy.port) : defaultPort(proxy.protocol),
      method: 'CONNECT',
      path: authority,
      headers: { host: authority, ...(auth ? { 'proxy-authorization': auth } : {}) },
      agent: false,
      maxHeaderSize: PROXY_RESPONSE_MAX_HEADER_BYTES,
      // The proxy's TLS identity is its own host, not the CONNECT target node derives from Host.
      ...(secure ? { servername: isIP(stripBrackets(proxy.hostname)) ? '' : proxy.hostname } : {}),
      ...(secure && opts.proxyCa ? { ca: opts.proxyCa } : {}),
      ...(secure && opts.clientCertificate
        ? { cert: opts.clientCertificate.certPem, key: opts.clientCertificate.keyPem }
        : {}),
    });

    const finish = (err: Error | undefined, socket?: Socket): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        socket?.destroy();
        req.destroy();
        reject(err);
      } else if (socket) {
        resolve(socket);
      }
    };
    const onAbort = (): void =>
      finish(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      finish(
        new TetherError(
          'TETHER_TIMEOUT',
          `timed out after ${timeoutMs} ms ${phase} forward proxy ${name} (CONNECT ${authority})`,
        ),
      );
    }, timeoutMs);

    req.on('socket', (socket: Socket) => {
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        phase = 'waiting for the CONNECT answer from';
      });
      socket.once('connect', () => {
        tcpConnected = true;
      });
    });

    req.on('connect', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        if (head.length > 0) socket.unshift(head);
        finish(undefined, socket);
        return;
      }
      const own = opts.refusal?.(res, authority);
      if (own) {
        finish(own, socket);
        return;
      }
      const reason = res.statusMessage ? ` ${res.statusMessage}` : '';
      // 403/407 are the proxy's own rules; 502/503/504 mean it tried and could not reach the target.
      if (status === 407) {
        finish(
          new TetherError(
            'TETHER_PROXY_AUTH',
            auth
              ? `forward proxy ${name} rejected the credentials in the proxy URL (407${reason}): check the user name and password`
              : `forward proxy ${name} requires authentication (407${reason}): put user:password in the proxy URL`,
          ),
          socket,
        );
        return;
      }
      if (status === 502 || status === 503 || status === 504) {
        finish(
          new TetherError(
            'TETHER_PROXY_UPSTREAM_FAILED',
            `the forward proxy ${name} could not reach ${authority} (${proxySaid(res)}); is ${opts.targetRole ?? `the server at ${authority}`} running and reachable from the proxy?`,
          ),
          socket,
        );
        return;
      }
      finish(
        new TetherError(
          'TETHER_PROXY_REFUSED',
          `forward proxy ${name} refused CONNECT ${authority} (${proxySaid(res)}); check the proxy's access rules for this destination`,
        ),
        socket,
      );
    });

    req.on('error', (err: NodeJS.ErrnoException) => {
      // OpenSSL messages span lines and name source files; one line is enough for a log
      const detail = `${err.code ? `${err.code}: ` : ''}${err.message}`.replace(/\s+/g, ' ').trim();
      if (
        secure &&
        tcpConnected &&
        phase === 'connecting to' &&
        /wrong.version.number|packet.length/i.test(detail)
      ) {
        finish(
          new TetherError(
            'TETHER_PROXY_TLS',
            `forward proxy ${name} does not speak TLS (${detail}): use an http:// proxy URL for a plain proxy`,
            { cause: err },
          ),
        );
      } else if (secure && tcpConnected && phase === 'connecting to' && TLS_ERROR.test(detail)) {
        finish(
          new TetherError(
            'TETHER_PROXY_TLS',
            `TLS to forward proxy ${name} failed (${detail}): check the proxy CA bundle (proxyCa) matches the proxy's certificate`,
            { cause: err },
          ),
        );
      } else if (err.code === 'HPE_HEADER_OVERFLOW') {
        finish(
          new TetherError(
            'TETHER_PROTOCOL',
            `forward proxy ${name} sent a CONNECT response header over ${PROXY_RESPONSE_MAX_HEADER_BYTES} bytes`,
            { cause: err },
          ),
        );
      } else if (err.code?.startsWith('HPE_')) {
        finish(
          new TetherError(
            'TETHER_PROTOCOL',
            `forward proxy ${name} did not answer CONNECT with HTTP (${detail}): is the proxy URL's scheme (http/https) right?`,
            { cause: err },
          ),
        );
      } else if (tcpConnected) {
        finish(
          new TetherError(
            'TETHER_PROXY_UNREACHABLE',
            `forward proxy ${name} closed the connection before answering CONNECT ${authority} (${detail}): is the proxy URL's scheme (http/https) right?`,
            { cause: err },
          ),
        );
      } else {
        finish(
          new TetherError(
            'TETHER_PROXY_UNREACHABLE',
            `cannot reach forward proxy ${name} (${detail}): check the proxy URL and that the proxy is running`,
            { cause: err },
          ),
        );
      }
    });

    req.end();
  });
}
