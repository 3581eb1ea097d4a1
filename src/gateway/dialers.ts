// A ClusterDialer for a gateway that runs apart from the proxy-server: every connection is an
// HTTP CONNECT on the proxy-server's frontend (`<cluster>:443`, `<export>.<cluster>:<port>`),
// authenticated with a proxy-client certificate or a hub bearer token. Failures come back as the
// same TetherError codes ProxyServer.dial throws (the frontend's tether-error header, else its
// status), so the gateway maps them the same way.
import type { Duplex } from 'node:stream';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { TetherError, type TetherErrorCode } from '../errors.ts';
import { KUBE_APISERVER_TARGET } from '../tunnel/protocol.ts';
import type { ClusterDialer } from './upstream.ts';

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
  /** largest CONNECT response head accepted (default 16 KiB) */
  maxHeadBytes?: number;
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

/** `kube-apiserver:443` → `<cluster>:443`; `<name>:<port>` → `<name>.<cluster>:<port>`. */
export function connectAuthority(cluster: string, target: string): string {
  const i = target.lastIndexOf(':');
  const name = target.slice(0, i);
  const port = target.slice(i + 1);
  return name === KUBE_APISERVER_TARGET ? `${cluster}:${port}` : `${name}.${cluster}:${port}`;
}

export function connectFrontendDialer(opts: ConnectFrontendDialerOptions): ClusterDialer {
  const url = new URL(opts.url);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxHead = opts.maxHeadBytes ?? 16 * 1024;
  return (cluster, target) =>
    new Promise<Duplex>((resolve, reject) => {
      const authority = connectAuthority(cluster, target);
      const socket: TLSSocket = tlsConnect({
        host: url.hostname,
        port: Number(url.port) || 443,
        servername: /^[\d.]+$|:/.test(url.hostname) ? undefined : url.hostname,
        ca: opts.caPem,
        cert: opts.certPem,
        key: opts.keyPem,
        ALPNProtocols: ['http/1.1'],
      });
      let buf = Buffer.alloc(0);
      const fail = (err: TetherError): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      const timer = setTimeout(
        () => fail(new TetherError('TETHER_DIAL_TIMEOUT', `CONNECT ${authority} via ${url.host} timed out`)),
        timeoutMs,
      );
      socket.once('error', (err) =>
        fail(
          new TetherError('TETHER_DIAL_FAILED', `CONNECT frontend ${url.host}: ${err.message}`, {
            cause: err,
          }),
        ),
      );
      socket.once('secureConnect', () => {
        const auth = opts.token ? `Proxy-Authorization: Bearer ${opts.token}\r\n` : '';
        socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
      });
      const onData = (chunk: Buffer): void => {
        buf = Buffer.concat([buf, chunk]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) {
          if (buf.length > maxHead)
            fail(new TetherError('TETHER_PROTOCOL', 'CONNECT response head too large'));
          return;
        }
        socket.off('data', onData);
        socket.pause();
        clearTimeout(timer);
        const head = buf.subarray(0, end).toString('latin1');
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
        if (status !== 200) {
          const reason = /\r\ntether-reason: ([^\r\n]*)/i.exec(head)?.[1] ?? head.split('\r\n')[0] ?? '';
          // The frontend names the exact failure; the status alone is the fallback (older servers).
          const sent = /\r\ntether-error: (TETHER_[A-Z_]{1,40})\r\n/i.exec(`${head}\r\n`)?.[1];
          const code = sent && knownCodes.has(sent) ? (sent as TetherErrorCode) : codeForStatus[status];
          fail(new TetherError(code ?? 'TETHER_DIAL_FAILED', `CONNECT ${authority}: ${status} ${reason}`));
          return;
        }
        socket.removeAllListeners('error');
        socket.on('error', () => {});
        const rest = buf.subarray(end + 4);
        if (rest.length > 0) socket.unshift(rest);
        resolve(socket);
      };
      socket.on('data', onData);
    });
}
