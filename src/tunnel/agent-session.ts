// The agent end of tunnel connections: one HTTP/2 *server* (node:http2, no listener) onto which every
// socket the agent dialled to a proxy-server is attached. Answers the hello and serves CONNECT
// streams by dialling the target the resolver allows; anything else is refused on that stream only.
import {
  createServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { coalesceWrites } from './coalesce.ts';
import { resetWhenHalfOpen } from './half-open.ts';
import { keepAlive } from './keepalive.ts';
import {
  DialFailure,
  HELLO_PATH,
  Header,
  http2SessionOptions,
  parseTarget,
  type TunnelLimits,
} from './protocol.ts';
import { SessionSocket } from './session-socket.ts';

/** Where a logical target really is; undefined means "not allowed". */
export type TargetResolver = (name: string, port: number) => { host: string; port: number } | undefined;

export interface AgentSessionEvents {
  /** a CONNECT stream was served (or refused); for metrics and logs */
  onStream?: (e: {
    target: string;
    outcome: 'connected' | 'refused' | 'failed' | 'timeout';
    reason?: string;
  }) => void;
  onBytes?: (direction: 'to-target' | 'from-target', n: number) => void;
}

export interface AttachedSession {
  session: Http2Session;
  serverId: string;
  serverCount: number;
  closed: Promise<string>;
}

/**
 * nghttp2's rapid-reset protection (CVE-2023-44487) guards an HTTP/2 *server* against clients that
 * cancel streams: after a burst of 1000 RST_STREAM frames, refilled at 33/s, it closes the whole
 * session. Here the agent is the server and the hub the client, and every hub-side cancellation —
 * a CONNECT-frontend client that goes away, a dial timeout, a destroy() in the gateway — is one
 * RST_STREAM. With the default, one busy hub client cut a cluster's tunnel for everyone (issue 10,
 * finding 7). The hub is the peer this session authenticated (its certificate verified against
 * the hub CA); what hub clients can make it do is bounded by the CONNECT frontend's per-client
 * limits, so the agent takes any number of resets.
 */
export const HUB_RESETS_UNLIMITED = { streamResetBurst: 0xffff_ffff, streamResetRate: 0xffff_ffff } as const;

function headerValue(h: IncomingHttpHeaders, name: string): string {
  const v = h[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

export class AgentTunnelServer {
  private readonly server: Http2Server;
  private readonly limits: TunnelLimits;
  private readonly resolve: TargetResolver;
  private readonly agentId: string;
  private readonly events: AgentSessionEvents;
  private readonly helloWaiters = new Map<
    Http2Session,
    (h: { serverId: string; serverCount: number }) => void
  >();

  constructor(opts: {
    limits: TunnelLimits;
    resolveTarget: TargetResolver;
    agentId: string;
    events?: AgentSessionEvents;
  }) {
    this.limits = opts.limits;
    this.resolve = opts.resolveTarget;
    this.agentId = opts.agentId;
    this.events = opts.events ?? {};
    const l = opts.limits;
    this.server = createServer({ ...http2SessionOptions(l), ...HUB_RESETS_UNLIMITED });
    this.server.on('session', (session) => {
      session.on('error', () => {});
      try {
        session.setLocalWindowSize(l.sessionWindowBytes);
      } catch {}
    });
    this.server.on('stream', (stream, headers) => this.onStream(stream, headers));
    this.server.on('sessionError', () => {});
  }

  /**
   * Runs the HTTP/2 server side over `socket` and waits for the hub's hello. Rejects if the hello
   * does not arrive within the handshake timeout.
   */
  attach(socket: Duplex): Promise<AttachedSession> {
    return new Promise((resolve, reject) => {
      let session: Http2Session | undefined;
      const onSession = (s: Http2Session): void => {
        session = s;
      };
      this.server.once('session', onSession);
      // The agent's session must never stop reading the hub while its own writes wait (session-socket.ts).
      this.server.emit(
        'connection',
        new SessionSocket(socket, { maxUnsentBytes: this.limits.maxUnsentBytes }),
      );
      this.server.off('session', onSession);
      if (!session) {
        socket.destroy();
        reject(new Error('HTTP/2 session did not start on the tunnel socket'));
        return;
      }
      const s = session;
      const closed = new Promise<string>((done) => {
        s.once('close', () => done('session closed'));
        s.once('goaway', () => done('proxy-server sent GOAWAY'));
      });
      const timer = setTimeout(() => {
        this.helloWaiters.delete(s);
        s.destroy();
        reject(new Error(`proxy-server sent no hello within ${this.limits.handshakeTimeoutMs} ms`));
      }, this.limits.handshakeTimeoutMs);
      s.once('close', () => {
        clearTimeout(timer);
        if (this.helloWaiters.delete(s)) reject(new Error('tunnel closed before the hello'));
      });
      this.helloWaiters.set(s, (h) => {
        clearTimeout(timer);
        keepAlive(s, this.limits.pingIntervalMs, this.limits.pingTimeoutMs, () => s.destroy());
        resolve({ session: s, ...h, closed });
      });
    });
  }

  private onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => {});
    const method = headers[':method'];
    if (method === 'POST' && headers[':path'] === HELLO_PATH) {
      const waiter = this.helloWaiters.get(stream.session as Http2Session);
      const serverId = headerValue(headers, Header.serverId).slice(0, 253);
      const serverCount = Math.min(Math.max(Number(headerValue(headers, Header.serverCount)) || 1, 1), 64);
      stream.respond({ ':status': 200, [Header.agentId]: this.agentId }, { endStream: true });
      if (waiter && stream.session) {
        this.helloWaiters.delete(stream.session as Http2Session);
        waiter({ serverId, serverCount });
      }
      return;
    }
    if (method !== 'CONNECT') {
      stream.respond(
        { ':status': 405, [Header.error]: 'TETHER_PROTOCOL', [Header.reason]: 'only CONNECT is served' },
        { endStream: true },
      );
      return;
    }
    const authority = headerValue(headers, ':authority');
    const parsed = parseTarget(authority);
    if (!parsed) {
      this.refuse(
        stream,
        DialFailure.badTarget,
        `"${authority.slice(0, 100)}" is not a target (want name:port)`,
        authority,
      );
      return;
    }
    const target = this.resolve(parsed.name, parsed.port);
    if (!target) {
      this.refuse(
        stream,
        DialFailure.notAllowed,
        `target ${authority} is not exported by this agent (kube-apiserver:443 and the agent's --export entries only)`,
        authority,
      );
      return;
    }
    this.dial(stream, authority, target);
  }

  private refuse(
    stream: ServerHttp2Stream,
    failure: { status: number; code: string },
    reason: string,
    target: string,
  ): void {
    if (!stream.headersSent && !stream.destroyed) {
      stream.respond(
        { ':status': failure.status, [Header.error]: failure.code, [Header.reason]: reason },
        { endStream: true },
      );
    }
    const outcome =
      failure.status === 403 || failure.status === 400
        ? 'refused'
        : failure.status === 504
          ? 'timeout'
          : 'failed';
    this.events.onStream?.({ target, outcome, reason });
  }

  private dial(stream: ServerHttp2Stream, authority: string, target: { host: string; port: number }): void {
    const socket: Socket = netConnect({ host: target.host, port: target.port, allowHalfOpen: true });
    socket.setNoDelay(true);
    const timer = setTimeout(() => {
      socket.destroy();
      this.refuse(
        stream,
        DialFailure.timeout,
        `connecting to ${authority} timed out after ${this.limits.dialTimeoutMs} ms`,
        authority,
      );
    }, this.limits.dialTimeoutMs);
    const onEarlyError = (err: Error): void => {
      clearTimeout(timer);
      this.refuse(
        stream,
        DialFailure.refused,
        `connecting to ${authority} failed: ${err.message}`,
        authority,
      );
    };
    socket.once('error', onEarlyError);
    stream.once('close', () => {
      clearTimeout(timer);
      socket.destroy();
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', onEarlyError);
      socket.on('error', () => stream.destroy());
      if (stream.destroyed) {
        socket.destroy();
        return;
      }
      stream.respond({ ':status': 200 });
      // The hub resets half-open streams too; this covers a hub that does not (older, or 0).
      resetWhenHalfOpen(stream, this.limits.halfOpenTimeoutMs);
      this.events.onStream?.({ target: authority, outcome: 'connected' });
      if (this.events.onBytes) {
        const onBytes = this.events.onBytes;
        stream.on('data', (c: Buffer) => onBytes('to-target', c.length));
        socket.on('data', (c: Buffer) => onBytes('from-target', c.length));
      }
      coalesceWrites(stream, socket);
      stream.pipe(socket);
      socket.pipe(stream);
      socket.once('close', () => {
        if (!stream.destroyed && !stream.writableEnded) stream.end();
      });
    });
  }

  /** Closes every attached session. */
  close(): void {
    this.server.close();
  }
}
