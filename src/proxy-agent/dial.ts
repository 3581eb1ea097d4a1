// How the proxy-agent reaches one proxy-server address: TLS (ALPN h2) directly or through an HTTP
// CONNECT forward proxy, or TLS inside a WebSocket for paths where only HTTP/1.1 Upgrade passes.
// Returns the authenticated TLS socket; the HTTP/2 session on top is agent-session.ts's business.
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { createWebSocketStream, WebSocket } from 'ws';
import { TetherError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { describeProxy, dialThroughProxy, proxyForUrl } from '../tunnel/forward-proxy.ts';
import { TUNNEL_ALPN, WEBSOCKET_SUBPROTOCOL } from '../tunnel/protocol.ts';

/** The agent's client certificate and the CA that verifies proxy-servers. */
export interface AgentTls {
  certPem: string;
  keyPem: string;
  hubCaPem: string;
  serverName?: string;
}

export interface TunnelDialerOptions {
  /** read at every dial, so a rotated certificate is used from the next dial on */
  tls: () => AgentTls;
  proxyUrl?: string;
  proxyCaPem?: string | string[];
  env?: Record<string, string | undefined>;
  handshakeTimeoutMs: number;
  log: Logger;
}

/** Opens the TLS connection to a proxy-server address (`host:port` or `wss://…`). */
export async function dialProxyServer(address: string, opts: TunnelDialerOptions): Promise<TLSSocket> {
  return address.startsWith('wss://') || address.startsWith('ws://')
    ? dialWebSocket(address, opts)
    : dialTls(address, opts);
}

function tlsOptions(t: AgentTls): ConnectionOptions {
  return {
    ca: t.hubCaPem,
    cert: t.certPem,
    key: t.keyPem,
    ALPNProtocols: [TUNNEL_ALPN],
    rejectUnauthorized: true,
  };
}

async function rawSocket(
  host: string,
  port: number,
  scheme: 'https' | 'http',
  opts: TunnelDialerOptions,
): Promise<Duplex | undefined> {
  const proxy = proxyForUrl(`${scheme}://${host}:${port}`, {
    proxyUrl: opts.proxyUrl,
    env: opts.env ?? process.env,
  });
  if (!proxy) return undefined;
  opts.log.debug({ proxy: describeProxy(proxy) }, 'dialling through forward proxy');
  return dialThroughProxy(proxy, host, port, {
    timeoutMs: opts.handshakeTimeoutMs,
    proxyCa: opts.proxyCaPem,
    targetRole: `the proxy-server at ${host}:${port}`,
  });
}

async function dialTls(address: string, opts: TunnelDialerOptions): Promise<TLSSocket> {
  const idx = address.lastIndexOf(':');
  const host = address.slice(0, idx).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(idx + 1));
  if (!host || !Number.isInteger(port))
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `proxy-server address must be host:port, got "${address}"`,
    );
  const viaProxy = await rawSocket(host, port, 'https', opts);
  const tls = opts.tls();
  const servername = tls.serverName ?? host;
  return handshake(
    tlsConnect({
      ...tlsOptions(tls),
      ...(viaProxy ? { socket: viaProxy } : { host, port }),
      servername: isIp(servername) ? undefined : servername,
      host,
    }),
    address,
    opts.handshakeTimeoutMs,
  );
}

function handshake(socket: TLSSocket, address: string, timeoutMs: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new TetherError('TETHER_TIMEOUT', `TLS handshake with ${address} timed out`));
    }, timeoutMs);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      if (socket.alpnProtocol !== TUNNEL_ALPN) {
        socket.destroy();
        reject(
          new TetherError(
            'TETHER_PROTOCOL',
            `${address} is not a tether proxy-server (ALPN ${String(socket.alpnProtocol)})`,
          ),
        );
        return;
      }
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(
        new TetherError('TETHER_DIAL_FAILED', `cannot connect to proxy-server ${address}: ${err.message}`),
      );
    });
  });
}

async function dialWebSocket(address: string, opts: TunnelDialerOptions): Promise<TLSSocket> {
  const url = new URL(address);
  const port = Number(url.port) || (url.protocol === 'wss:' ? 443 : 80);
  const viaProxy = await rawSocket(url.hostname, port, url.protocol === 'wss:' ? 'https' : 'http', opts);
  const tls = opts.tls();
  const hubCa = tls.hubCaPem;
  let agent: HttpsAgent | undefined;
  if (viaProxy) {
    agent = new HttpsAgent({ keepAlive: false });
    agent.createConnection = (() =>
      url.protocol === 'wss:'
        ? tlsConnect({ socket: viaProxy, servername: url.hostname, ca: hubCa })
        : viaProxy) as unknown as typeof agent.createConnection;
  }
  const ws = new WebSocket(url, WEBSOCKET_SUBPROTOCOL, {
    ca: hubCa,
    agent,
    perMessageDeflate: false,
    maxPayload: 4 * 1024 * 1024,
    handshakeTimeout: opts.handshakeTimeoutMs,
    ...(viaProxy && url.protocol === 'ws:' ? { createConnection: () => viaProxy as Socket } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => {
      reject(
        new TetherError(
          'TETHER_PROTOCOL',
          `${address} answered the WebSocket upgrade with ${res.statusCode}`,
        ),
      );
      ws.terminate();
    });
    ws.once('error', (err) =>
      reject(new TetherError('TETHER_DIAL_FAILED', `WebSocket to ${address} failed: ${err.message}`)),
    );
  });
  const stream = createWebSocketStream(ws, { allowHalfOpen: false });
  stream.on('error', () => {});
  const servername = tls.serverName ?? url.hostname;
  return handshake(
    // host: what the proxy-server certificate is checked against (Node assumes localhost otherwise).
    tlsConnect({
      ...tlsOptions(tls),
      socket: stream,
      host: url.hostname,
      servername: isIp(servername) ? undefined : servername,
    }),
    address,
    opts.handshakeTimeoutMs,
  );
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}
