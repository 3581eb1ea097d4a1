// The hub end of one tunnel connection: an HTTP/2 *client* session over a socket the agent opened.
// Performs the hello, keeps the session alive, and opens CONNECT streams to logical targets.
// A frozen or cut-off agent sends no close: every stream open also sends a PING, and when the agent
// neither answers it nor sends a byte within unresponsiveAfterMs (peer-liveness.ts) the open fails
// with TETHER_AGENT_UNRESPONSIVE. From then on the session is `unresponsive`: its open streams are
// reset (a request on a pooled connection would otherwise wait for its headers timeout) and new
// opens fail at once (the registry routes around it), until the agent answers again or the
// keepalive drops the session. The session runs straight on the agent's TCP/TLS socket: node:http2
// then reads nothing while its own large write drains, so liveness counts the bytes the kernel
// sends as signs of life too (connection-progress.ts). A connection with no TCP socket below it
// (TLS over a WebSocket) runs on a SessionSocket (session-socket.ts) instead.
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants,
  type IncomingHttpHeaders,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import { TetherError, type TetherErrorCode } from '../errors.ts';
import { connectionCounters, kernelHandleOf } from './connection-progress.ts';
import { resetWhenHalfOpen } from './half-open.ts';
import { SessionKeepalive } from './keepalive.ts';
import { PeerLiveness } from './peer-liveness.ts';
import { HELLO_PATH, Header, http2SessionOptions, type TunnelLimits } from './protocol.ts';
import { SessionSocket } from './session-socket.ts';

export interface HubSessionOptions {
  socket: Duplex;
  limits: TunnelLimits;
  serverId: string;
  serverCount: number;
  /** who is at the other end, for error messages: "the agent agent-a of cluster cluster1" */
  peer?: string;
  onClose: (why: string) => void;
  /** the agent went silent for unresponsiveAfterMs; `resetStreams` open streams were reset */
  onUnresponsive?: (silentMs: number, resetStreams: number) => void;
}

const ignoreError = (): void => {};

/** How often a dial re-checks an agent that sends bytes but has not answered its PING yet (ms). */
const RECHECK_MS = 250;

function headerString(h: IncomingHttpHeaders, name: string): string {
  const v = h[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

export class HubTunnelSession {
  readonly session: ClientHttp2Session;
  agentId = '';
  private closed = false;
  openStreams = 0;
  private readonly limits: TunnelLimits;
  private readonly onClose: (why: string) => void;
  private readonly keepalive: SessionKeepalive;
  private readonly liveness: PeerLiveness;
  private readonly peer: string;
  /** CONNECT streams the agent accepted and that are still open */
  private readonly established = new Set<ClientHttp2Stream>();

  constructor(opts: HubSessionOptions) {
    this.limits = opts.limits;
    this.onClose = opts.onClose;
    this.peer = opts.peer ?? 'the agent';
    const l = opts.limits;
    // No JS stream bridge where the kernel socket is reachable: the bridge costs CPU per byte, and
    // the agent's session always reads, so the two ends cannot wait on each other's writes
    // (session-socket.ts). While the hub's own write drains it reads nothing; the kernel's send
    // counters still show the agent taking our bytes (connection-progress.ts).
    const connection: Duplex = kernelHandleOf(opts.socket)
      ? opts.socket
      : new SessionSocket(opts.socket, { maxUnsentBytes: l.maxUnsentBytes });
    const counters = connectionCounters(opts.socket);
    this.session = connect('http://agent.tether.invalid', {
      createConnection: () => connection,
      ...http2SessionOptions(l),
    });
    this.session.on('connect', () => {
      try {
        this.session.setLocalWindowSize(l.sessionWindowBytes);
      } catch {}
    });
    this.session.on('error', () => {});
    this.session.on('close', () => this.finish('session closed'));
    this.session.on('goaway', () => this.finish('agent sent GOAWAY'));
    this.keepalive = new SessionKeepalive(
      this.session,
      l.pingIntervalMs,
      l.pingTimeoutMs,
      (why) => {
        this.finish(why);
        this.session.destroy();
      },
      counters,
    );
    this.liveness = new PeerLiveness({
      keepalive: this.keepalive,
      socket: counters,
      unresponsiveAfterMs: l.unresponsiveAfterMs,
      onUnresponsive: (silentMs) => {
        const streams = [...this.established];
        // CANCEL, not an error: consumers see the stream close (no 'error' event to handle).
        for (const st of streams) st.close(constants.NGHTTP2_CANCEL);
        opts.onUnresponsive?.(silentMs, streams.length);
      },
    });
    this.session.once('close', () => this.liveness.stop());
    this.serverId = opts.serverId;
    this.serverCount = opts.serverCount;
  }

  private readonly serverId: string;
  private readonly serverCount: number;

  get isClosed(): boolean {
    return this.closed;
  }

  /** The agent has been silent for unresponsiveAfterMs or longer: new streams fail at once. */
  get isUnresponsive(): boolean {
    return this.liveness.isUnresponsive;
  }

  /** How long the agent has been silent: no PING answer, no byte (ms; 0 with no PING out). */
  silentForMs(): number {
    return this.liveness.silentForMs();
  }

  private unresponsiveError(silentMs: number): TetherError {
    const l = this.limits;
    const dropAfter = ((l.pingIntervalMs + l.pingTimeoutMs) / 1000).toFixed(0);
    return new TetherError(
      'TETHER_AGENT_UNRESPONSIVE',
      `${this.peer} has not answered for ${(silentMs / 1000).toFixed(1)} s (frozen, overloaded or cut off ` +
        `without a close); requests to it fail until it answers again, and its tunnel is dropped within ` +
        `${dropAfter} s of its last answer so that it can reconnect`,
    );
  }

  private finish(why: string): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(why);
  }

  /** Sends the hello; resolves with the agent id the agent reports. */
  hello(): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = this.session.request(
        {
          ':method': 'POST',
          ':path': HELLO_PATH,
          [Header.serverId]: this.serverId,
          [Header.serverCount]: String(this.serverCount),
        },
        { endStream: true },
      );
      const timer = setTimeout(() => {
        req.close(constants.NGHTTP2_CANCEL);
        reject(
          new TetherError(
            'TETHER_TIMEOUT',
            `agent did not answer the hello within ${this.limits.handshakeTimeoutMs} ms`,
          ),
        );
      }, this.limits.handshakeTimeoutMs);
      req.on('response', (h) => {
        clearTimeout(timer);
        req.resume();
        if (h[':status'] !== 200) {
          reject(new TetherError('TETHER_PROTOCOL', `agent refused the hello with status ${h[':status']}`));
          return;
        }
        this.agentId = headerString(h, Header.agentId).slice(0, 253);
        resolve(this.agentId);
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(new TetherError('TETHER_PROTOCOL', `hello failed: ${err.message}`));
      });
    });
  }

  /**
   * Opens a CONNECT stream to `target` (`name:port`). Resolves with the stream once the agent has
   * connected to the target; rejects with a coded error otherwise (refused, timeout, not allowed).
   */
  openStream(target: string, timeoutMs: number): Promise<ClientHttp2Stream> {
    if (this.closed)
      return Promise.reject(new TetherError('TETHER_NO_AGENT', `the tunnel to ${this.peer} is closed`));
    if (this.isUnresponsive) return Promise.reject(this.unresponsiveError(this.silentForMs()));
    let req: ClientHttp2Stream;
    try {
      req = this.session.request({ ':method': 'CONNECT', ':authority': target }, { endStream: false });
    } catch (err) {
      return Promise.reject(
        new TetherError('TETHER_NO_AGENT', `cannot open a tunnel stream: ${(err as Error).message}`),
      );
    }
    this.track(req);
    return new Promise((resolve, reject) => this.awaitAnswer(req, target, timeoutMs, resolve, reject));
  }

  /** Counts `req` while it is open (a scope of its own: an open stream keeps only this alive). */
  private track(req: ClientHttp2Stream): void {
    this.openStreams++;
    req.once('close', () => {
      this.openStreams--;
      this.established.delete(req);
    });
  }

  /**
   * Settles a dial on the agent's answer, the dial timeout, the agent's silence or the stream's
   * end. Every listener and timer here is dropped once it settles, so an established stream does
   * not keep this bookkeeping alive.
   */
  private awaitAnswer(
    req: ClientHttp2Stream,
    target: string,
    timeoutMs: number,
    resolve: (s: ClientHttp2Stream) => void,
    reject: (err: TetherError) => void,
  ): void {
    let settled = false;
    let answered = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      clearTimeout(answerTimer);
      dropProbe();
      req.off('response', onResponse);
      req.off('error', onError);
      req.off('close', onClose);
      // errors after this are for the stream's consumer; none may go unhandled meanwhile
      req.on('error', ignoreError);
      return true;
    };
    const timer = setTimeout(() => {
      if (!settle()) return;
      req.close(constants.NGHTTP2_CANCEL);
      reject(new TetherError('TETHER_DIAL_TIMEOUT', `dial ${target} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    // A live agent answers the PING in milliseconds even while its dial to the target is slow;
    // neither an answer nor a byte within unresponsiveAfterMs means the agent itself is not there.
    const openedAt = Date.now();
    const dropProbe = this.keepalive.probe(() => {
      answered = true;
    });
    const checkAnswer = (): void => {
      if (answered || this.keepalive.lastAnswerAt >= openedAt || settled) return;
      if (!this.liveness.isUnresponsive) {
        // bytes still arrive, the PING answer is just late (a busy link): look again shortly
        answerTimer = setTimeout(checkAnswer, RECHECK_MS);
        return;
      }
      if (!settle()) return;
      req.close(constants.NGHTTP2_CANCEL);
      reject(this.unresponsiveError(this.silentForMs()));
    };
    let answerTimer = setTimeout(checkAnswer, this.limits.unresponsiveAfterMs);
    const onResponse = (h: IncomingHttpHeaders): void => {
      if (!settle()) return;
      const status = Number(h[':status']);
      if (status === 200) {
        resetWhenHalfOpen(req, this.limits.halfOpenTimeoutMs);
        this.established.add(req);
        resolve(req);
        return;
      }
      const code = (headerString(h, Header.error) || 'TETHER_DIAL_FAILED') as TetherErrorCode;
      const reason = headerString(h, Header.reason) || `agent answered ${status}`;
      // The agent ended its side with the answer; ending ours closes the stream without a reset.
      req.resume();
      req.end();
      reject(new TetherError(code.startsWith('TETHER_') ? code : 'TETHER_DIAL_FAILED', reason));
    };
    const onError = (err: Error): void => {
      if (!settle()) return;
      reject(new TetherError('TETHER_DIAL_FAILED', `tunnel stream to ${target} failed: ${err.message}`));
    };
    // A session torn down under a pending dial closes the stream without an error: fail fast.
    const onClose = (): void => {
      if (!settle()) return;
      reject(
        new TetherError('TETHER_NO_AGENT', `the tunnel to ${this.peer} closed while dialling ${target}`),
      );
    };
    req.once('response', onResponse);
    req.once('error', onError);
    req.once('close', onClose);
  }

  /** Stops new streams and closes once open ones finish (or after graceMs). */
  drain(graceMs: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.session.destroyed) {
        resolve();
        return;
      }
      const timer = setTimeout(() => {
        this.session.destroy();
      }, graceMs);
      timer.unref();
      this.session.close(() => {
        clearTimeout(timer);
        resolve();
      });
      this.session.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  destroy(): void {
    this.session.destroy();
  }
}
