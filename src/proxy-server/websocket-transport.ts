// The proxy-server's WebSocket transport for agents behind an L7 ingress that passes only HTTP/1.1
// Upgrade (`wss://host:port/tether.v1/tunnel`, subprotocol tether.v1). On the agent port, a TLS
// connection that did not choose h2 by ALPN is served HTTP/1.1 here: only the upgrade on
// WEBSOCKET_PATH is answered (404 otherwise, within the handshake deadline). Inside the WebSocket
// the agent runs TLS again with its client certificate, so its identity holds end to end even
// where the ingress terminates the outer TLS; the inner TLS connection goes to the server's
// acceptAgent like a direct one.
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer, type TLSSocket, type Server as TlsServer } from 'node:tls';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { TUNNEL_ALPN, WEBSOCKET_PATH, WEBSOCKET_SUBPROTOCOL } from '../tunnel/protocol.ts';

export interface WebSocketTransportOptions {
  tls: { certPem: string; keyPem: string; clientCaPem: string };
  handshakeTimeoutMs: number;
  /** largest WebSocket message the agent may send */
  maxPayloadBytes: number;
  /** the outer connection upgraded: its pre-authentication slot may wait this long for the inner TLS */
  onUpgraded: (outer: TLSSocket) => void;
  /** the inner TLS connection, handshake done (its certificate not yet checked) */
  onAgent: (inner: TLSSocket) => void;
  /** the inner TLS handshake failed */
  onHandshakeError: () => void;
}

export class WebSocketTransport {
  private readonly innerTlsServer: TlsServer;
  private readonly wss: WebSocketServer;
  private readonly upgradeServer = createHttpServer();
  private readonly opts: WebSocketTransportOptions;

  constructor(opts: WebSocketTransportOptions) {
    this.opts = opts;
    this.innerTlsServer = createTlsServer({
      cert: opts.tls.certPem,
      key: opts.tls.keyPem,
      ca: opts.tls.clientCaPem,
      requestCert: true,
      rejectUnauthorized: false,
      ALPNProtocols: [TUNNEL_ALPN],
      handshakeTimeout: opts.handshakeTimeoutMs,
    });
    this.innerTlsServer.on('secureConnection', (socket: TLSSocket) => {
      socket.on('error', () => {});
      opts.onAgent(socket);
    });
    this.innerTlsServer.on('tlsClientError', (_err, socket) => {
      opts.onHandshakeError();
      socket.destroy();
    });
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: opts.maxPayloadBytes,
      perMessageDeflate: false,
      handleProtocols: (protocols) => (protocols.has(WEBSOCKET_SUBPROTOCOL) ? WEBSOCKET_SUBPROTOCOL : false),
    });
    this.upgradeServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.onUpgrade(req, socket, head),
    );
    this.upgradeServer.on('request', (_req, res) => {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('tether proxy-server: agents connect with HTTP/2 (ALPN h2) or a WebSocket upgrade\n');
    });
    this.upgradeServer.headersTimeout = opts.handshakeTimeoutMs;
    this.upgradeServer.requestTimeout = opts.handshakeTimeoutMs;
  }

  /** Serves HTTP/1.1 on a TLS connection to the agent port that did not choose h2. */
  accept(socket: TLSSocket): void {
    this.upgradeServer.emit('connection', socket);
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = req.url ?? '';
    if (!url.startsWith(WEBSOCKET_PATH)) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    this.opts.onUpgraded(socket as TLSSocket);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const stream = createWebSocketStream(ws, { allowHalfOpen: false });
      stream.on('error', () => {});
      this.innerTlsServer.emit('connection', stream);
    });
  }

  close(): void {
    this.wss.close();
  }
}
