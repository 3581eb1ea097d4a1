// The tether tunnel protocol, shared by proxy-server (hub) and proxy-agent (managed cluster).
//
// The agent dials the hub (TLS, mTLS, ALPN "h2"; or a WebSocket). On that one connection the roles
// reverse: the hub runs an HTTP/2 *client* session, the agent an HTTP/2 *server* session. Each
// tunnelled TCP connection is one HTTP/2 CONNECT stream whose :authority names a *logical* target
// (`kube-apiserver:443`, or `<export-name>:<port>`); the agent maps it to a real address from its
// own configuration and refuses anything else. Every stream has its own flow-control window, so a
// slow reader holds back only its own stream.
//
// The first request on a session is the hello: POST /tether.v1/hello from hub to agent, carrying
// the server's id and the replica count; the agent answers with its id. Errors on a CONNECT stream
// come back as an HTTP status plus `tether-error` (a TETHER_* code) and `tether-reason` headers.

export const TUNNEL_ALPN = 'h2';
export const HELLO_PATH = '/tether.v1/hello';
export const WEBSOCKET_PATH = '/tether.v1/tunnel';
export const WEBSOCKET_SUBPROTOCOL = 'tether.v1';

/** The logical target name of the managed cluster's kube-apiserver. */
export const KUBE_APISERVER_TARGET = 'kube-apiserver';

export const Header = {
  serverId: 'tether-server-id',
  serverCount: 'tether-server-count',
  agentId: 'tether-agent-id',
  error: 'tether-error',
  reason: 'tether-reason',
} as const;

/** Limits a peer can push against; every one is explicit and overridable. */
export interface TunnelLimits {
  /** per-stream HTTP/2 flow-control window (bytes) */
  streamWindowBytes: number;
  /** connection-level flow-control window (bytes) */
  sessionWindowBytes: number;
  /**
   * bytes a session may have queued towards the peer before its writes wait for the connection to
   * drain (session-socket.ts). Above the peer's connection window, so that a session that honours
   * the windows is never held up writing and so never stops reading: with two sessions each
   * waiting for the other to read, the tunnel would stop as a whole.
   */
  maxUnsentBytes: number;
  /** largest HTTP/2 DATA frame we accept (bytes) */
  maxFrameBytes: number;
  /** concurrent streams per session */
  maxConcurrentStreams: number;
  /** nghttp2 session memory cap (MB) */
  maxSessionMemoryMb: number;
  /** header block size cap (bytes) */
  maxHeaderListBytes: number;
  /** PING every … (ms) */
  pingIntervalMs: number;
  /** a peer that does not answer a PING within … is dead (ms) */
  pingTimeoutMs: number;
  /**
   * hub: an agent that neither answers a PING nor sends a byte for this long is unresponsive (a
   * PING goes with every stream open and with requests on open streams): its open streams are
   * reset, opens fail with TETHER_AGENT_UNRESPONSIVE and new streams avoid the session until it
   * answers again, well before the keepalive drops it (ms)
   */
  unresponsiveAfterMs: number;
  /**
   * a stream half-closed in one direction is reset after this long without traffic in the other
   * (ms; 0 = never): a target or client that never ends its side does not hold a stream forever
   */
  halfOpenTimeoutMs: number;
  /** deadline for the agent to connect to a target and answer a CONNECT (ms) */
  dialTimeoutMs: number;
  /** deadline for TLS handshake + hello (ms) */
  handshakeTimeoutMs: number;
}

export const defaultTunnelLimits: TunnelLimits = {
  streamWindowBytes: 2 * 1024 * 1024,
  sessionWindowBytes: 64 * 1024 * 1024,
  maxUnsentBytes: 128 * 1024 * 1024,
  maxFrameBytes: 1024 * 1024 - 1,
  maxConcurrentStreams: 20_000,
  maxSessionMemoryMb: 512,
  maxHeaderListBytes: 16 * 1024,
  pingIntervalMs: 10_000,
  pingTimeoutMs: 20_000,
  unresponsiveAfterMs: 5_000,
  halfOpenTimeoutMs: 60_000,
  dialTimeoutMs: 10_000,
  handshakeTimeoutMs: 10_000,
};

const TARGET_RE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?):(\d{1,5})$/;

/** Parses a logical target `name:port`; undefined when it is not one. */
export function parseTarget(authority: string): { name: string; port: number } | undefined {
  const m = TARGET_RE.exec(authority);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  return { name: m[1] as string, port };
}

/** Status code and tether-error code for each failure a CONNECT stream can report. */
export const DialFailure = {
  notAllowed: { status: 403, code: 'TETHER_TARGET_NOT_ALLOWED' },
  badTarget: { status: 400, code: 'TETHER_PROTOCOL' },
  refused: { status: 502, code: 'TETHER_DIAL_FAILED' },
  timeout: { status: 504, code: 'TETHER_DIAL_TIMEOUT' },
} as const;

/** HTTP/2 session settings both ends use, from the limits (windows, frames, streams, headers). */
export function http2SessionOptions(l: TunnelLimits) {
  return {
    settings: {
      enablePush: false,
      initialWindowSize: l.streamWindowBytes,
      maxFrameSize: l.maxFrameBytes,
      maxConcurrentStreams: l.maxConcurrentStreams,
      maxHeaderListSize: l.maxHeaderListBytes,
    },
    maxSessionMemory: l.maxSessionMemoryMb,
    peerMaxConcurrentStreams: l.maxConcurrentStreams,
    maxHeaderListPairs: 64,
  };
}
