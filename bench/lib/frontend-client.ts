// The hub service of the frontend scenarios, in a process of its own: TLS clients that reach a
// target either directly (the baseline: TLS straight to the cluster process's listener) or through
// the proxy-server's CONNECT frontend (`CONNECT <export>.<cluster>:<port>`, then the same bytes).
// Keeping the clients out of the hub process means the hub's CPU and memory figures are the
// proxy-server's alone, as a separate hub service would see them. Every latency is taken here,
// so both paths are timed by the same clock and the same event loop.
//
// `fork('bench/lib/frontend-client.ts')`, then IPC calls { id, method, args } answered with
// { id, result } or { id, error } (the same shape as cluster-peer.ts). RemoteFrontendClient is
// the parent's handle.
import { type ChildProcess, fork } from 'node:child_process';
import { type ClientHttp2Session, connect as h2Connect } from 'node:http2';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { KonnectivityClient } from '../../test/fixtures/konnectivity-client.ts';
import { gc } from './stats.ts';
import { benchHeader, drained, echoRoundTrips, readBytes } from './stream-io.ts';

/** Where a connection goes: the direct listener, or the frontend plus the CONNECT authority. */
export interface Endpoint {
  port: number;
  /** CONNECT authority (`<export>.<cluster>:<port>`); absent = direct TLS */
  authority?: string;
  /** which certificate this path presents: the direct listener and the frontend trust different CAs */
  identity: 'direct' | 'frontend';
  /** CONNECT as a stream of one shared HTTP/2 connection (ALPN h2) instead of a TLS connection each */
  h2?: boolean;
  /** konnectivity's gRPC ProxyService instead of CONNECT: a call per tunnel on one shared channel */
  grpc?: boolean;
}

export interface ClientTls {
  caPem: string;
  direct: { certPem: string; keyPem: string };
  frontend: { certPem: string; keyPem: string };
}

export interface ConnectRrResult {
  /** microseconds from connect() to the 1 KiB echo read back, one per connection */
  latencies: number[];
  /** wall time of the whole run, ms */
  ms: number;
  /** connections whose TLS session was resumed */
  resumed: number;
  /** negotiated cipher of the last connection */
  cipher: string;
  /** this (client) process's CPU time during the run, µs */
  cpuMicros: number;
}

export interface ClientStats {
  rss: number;
  heapUsed: number;
  cpuMicros: number;
}

const REQUEST = Buffer.alloc(1024, 0x61);
const CHUNK = Buffer.alloc(256 * 1024, 0x5a);
const noop = (): void => {};

/**
 * Ends a tunnel as its client would: a TLS connection is destroyed; an HTTP/2 stream is ended
 * (END_STREAM, the frontend ends its side once the target has), not reset, since a connection
 * resetting streams faster than nghttp2's rapid-reset defence allows (a burst of 1 000, 33/s) is
 * closed by the server.
 */
function closeTunnel(s: Duplex): void {
  if ('rstCode' in s) s.end();
  else s.destroy();
}

export class FrontendClient {
  /** one secure context per identity, built once (as a pooled client does): not per connection */
  private contexts: Record<'direct' | 'frontend', SecureContext> | undefined;
  /** the last TLS session per port, when resumption is on */
  private readonly sessions = new Map<number, Buffer>();
  private readonly idle: Duplex[] = [];
  /** one HTTP/2 connection per frontend port, shared by every h2 tunnel (as a pooled client does) */
  private readonly h2Sessions = new Map<number, ClientHttp2Session>();
  /** one gRPC channel per frontend port (grpc-js, built from the published protocol) */
  private readonly grpcClients = new Map<number, KonnectivityClient>();
  private tls: ClientTls | undefined;

  async init(tls: ClientTls): Promise<void> {
    this.tls = tls;
    const ctx = (id: { certPem: string; keyPem: string }): SecureContext =>
      createSecureContext({ ca: tls.caPem, cert: id.certPem, key: id.keyPem });
    this.contexts = { direct: ctx(tls.direct), frontend: ctx(tls.frontend) };
  }

  private h2Session(ep: Endpoint): Promise<ClientHttp2Session> {
    const known = this.h2Sessions.get(ep.port);
    if (known && !known.destroyed && !known.closed) return Promise.resolve(known);
    const contexts = this.contexts;
    if (!contexts) throw new Error('init() first');
    const session = h2Connect(`https://localhost:${ep.port}`, { secureContext: contexts[ep.identity] });
    session.on('error', noop);
    // the frontend closes a connection that carried no tunnel for a while: open a new one then
    session.once('goaway', () => {
      if (this.h2Sessions.get(ep.port) === session) this.h2Sessions.delete(ep.port);
    });
    this.h2Sessions.set(ep.port, session);
    return new Promise((resolve, reject) => {
      session.once('remoteSettings', () => resolve(session));
      session.once('error', reject);
    });
  }

  /** One tunnel as a CONNECT stream of the port's HTTP/2 connection; resolves on its 200, paused. */
  private async openH2(ep: Endpoint): Promise<Duplex> {
    const session = await this.h2Session(ep);
    const stream = session.request({ ':method': 'CONNECT', ':authority': ep.authority ?? '' });
    return new Promise((resolve, reject) => {
      stream.once('error', reject);
      stream.once('response', (h) => {
        stream.off('error', reject);
        stream.pause();
        if (h[':status'] !== 200) {
          stream.destroy();
          reject(new Error(`CONNECT ${ep.authority} over h2: ${h[':status']}`));
          return;
        }
        resolve(stream);
      });
    });
  }

  /** One tunnel as a `Proxy` call: DIAL_REQ, DIAL_RSP, then DATA; paused. */
  private async openGrpc(ep: Endpoint): Promise<Duplex> {
    let c = this.grpcClients.get(ep.port);
    if (!c) {
      if (!this.tls) throw new Error('init() first');
      c = new KonnectivityClient({
        address: `127.0.0.1:${ep.port}`,
        caPem: this.tls.caPem,
        certPem: this.tls.frontend.certPem,
        keyPem: this.tls.frontend.keyPem,
        serverName: 'localhost',
      });
      this.grpcClients.set(ep.port, c);
    }
    const conn = await c.dial(ep.authority ?? '');
    conn.pause();
    return conn;
  }

  /** Opens one connection: TLS, then (through the frontend) CONNECT and its 200; paused through the frontend. */
  private open(ep: Endpoint, resume: boolean): Promise<Duplex> {
    if (ep.h2) return this.openH2(ep);
    if (ep.grpc) return this.openGrpc(ep);
    const contexts = this.contexts;
    if (!contexts) throw new Error('init() first');
    return new Promise((resolve, reject) => {
      const session = resume ? this.sessions.get(ep.port) : undefined;
      const s = tlsConnect({
        host: '127.0.0.1',
        port: ep.port,
        servername: 'localhost',
        secureContext: contexts[ep.identity],
        ...(session ? { session } : {}),
      });
      s.setNoDelay(true);
      if (resume) s.on('session', (b: Buffer) => this.sessions.set(ep.port, b));
      s.once('error', reject);
      s.once('secureConnect', () => {
        if (!ep.authority) {
          s.off('error', reject);
          resolve(s);
          return;
        }
        s.write(`CONNECT ${ep.authority} HTTP/1.1\r\nhost: ${ep.authority}\r\n\r\n`);
        let head = '';
        const onData = (c: Buffer): void => {
          head += c.toString('latin1');
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) {
            if (head.length > 8192) s.destroy(new Error('CONNECT answer too long'));
            return;
          }
          s.off('data', onData);
          s.off('error', reject);
          s.pause();
          if (!head.startsWith('HTTP/1.1 200')) {
            s.destroy();
            reject(new Error(`CONNECT ${ep.authority}: ${head.split('\r\n')[0]}`));
            return;
          }
          if (end + 4 < head.length) s.unshift(Buffer.from(head.slice(end + 4), 'latin1'));
          resolve(s);
        };
        s.on('data', onData);
      });
    });
  }

  /** `streams` connections each send `perStream` bytes to the bulk sink; wall time and own CPU. */
  async bulk(ep: Endpoint, streams: number, perStream: number): Promise<{ ms: number; cpuMicros: number }> {
    const ss = await Promise.all(Array.from({ length: streams }, () => this.open(ep, true)));
    for (const s of ss) s.on('error', noop);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      ss.map(async (s) => {
        const ack = readBytes(s, 1);
        s.resume();
        s.write(benchHeader('S', perStream));
        let sent = 0;
        while (sent < perStream) {
          const n = Math.min(CHUNK.length, perStream - sent);
          sent += n;
          if (!s.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) await drained(s);
        }
        await ack;
      }),
    );
    const ms = performance.now() - t0;
    const c = process.cpuUsage(c0);
    for (const s of ss) closeTunnel(s);
    return { ms, cpuMicros: c.user + c.system };
  }

  /** 1 KiB round trips on one open connection; latencies in µs after `warmup`. */
  async rr(ep: Endpoint, iterations: number, warmup: number): Promise<number[]> {
    const s = await this.open(ep, true);
    s.on('error', noop);
    try {
      return await echoRoundTrips(s, REQUEST, iterations, warmup);
    } finally {
      closeTunnel(s);
    }
  }

  /**
   * `n` new connections, `concurrency` at a time: connect (TLS, CONNECT), write 1 KiB, read it
   * back, close. With `resume`, every connection offers the last session ticket of that port.
   */
  async connectRr(ep: Endpoint, n: number, concurrency: number, resume: boolean): Promise<ConnectRrResult> {
    const latencies: number[] = [];
    let resumed = 0;
    let cipher = '';
    let next = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++;
          const t = process.hrtime.bigint();
          const s = await this.open(ep, resume);
          s.on('error', noop);
          const echoed = readBytes(s, REQUEST.length);
          s.resume();
          s.write(REQUEST);
          await echoed;
          latencies.push(Number(process.hrtime.bigint() - t) / 1e3);
          const tls = s as Partial<TLSSocket>;
          if (tls.isSessionReused?.()) resumed++;
          cipher = tls.getCipher?.().standardName ?? 'h2 stream';
          closeTunnel(s);
        }
      }),
    );
    const ms = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { latencies, ms, resumed, cipher, cpuMicros: c.user + c.system };
  }

  /** Opens `n` connections (`concurrency` at a time) and keeps them open, idle. */
  async openIdle(ep: Endpoint, n: number, concurrency: number): Promise<{ ms: number }> {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++;
          const s = await this.open(ep, true);
          s.on('error', noop);
          this.idle.push(s);
        }
      }),
    );
    return { ms: performance.now() - t0 };
  }

  async closeIdle(): Promise<void> {
    for (const s of this.idle.splice(0)) closeTunnel(s);
  }

  async stats(gcFirst: boolean): Promise<ClientStats> {
    if (gcFirst) gc();
    const m = process.memoryUsage();
    const c = process.cpuUsage();
    return { rss: m.rss, heapUsed: m.heapUsed, cpuMicros: c.user + c.system };
  }

  async shutdown(): Promise<void> {
    await this.closeIdle();
    for (const session of this.h2Sessions.values()) session.destroy();
    this.h2Sessions.clear();
  }
}

type Method = Exclude<keyof FrontendClient, 'constructor'>;
interface Call {
  id: number;
  method: Method;
  args: unknown[];
}
type Reply = { id: number; result?: unknown; error?: string } | { ready: true };

/** The parent's handle on a FrontendClient in a child process. */
export class RemoteFrontendClient {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly ready: Promise<void>;
  private readonly exited: Promise<void>;

  constructor(execArgv: string[] = []) {
    this.child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--expose-gc', ...execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, TETHER_BENCH_FRONTEND_CLIENT: '1' },
    });
    this.exited = new Promise((r) => this.child.once('exit', () => r()));
    this.ready = new Promise((resolve, reject) => {
      this.child.once('exit', (code, signal) => {
        const err = new Error(`frontend client exited (code ${code}, signal ${signal})`);
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
      this.child.on('message', (m: Reply) => {
        if ('ready' in m) {
          resolve();
          return;
        }
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        if (m.error !== undefined) p.reject(new Error(`frontend client: ${m.error}`));
        else p.resolve(m.result);
      });
    });
  }

  private async call<T>(method: Method, ...args: unknown[]): Promise<T> {
    await this.ready;
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, method, args } satisfies Call);
    });
  }

  init(tls: ClientTls): Promise<void> {
    return this.call('init', tls);
  }
  bulk(ep: Endpoint, streams: number, perStream: number): Promise<{ ms: number; cpuMicros: number }> {
    return this.call('bulk', ep, streams, perStream);
  }
  rr(ep: Endpoint, iterations: number, warmup: number): Promise<number[]> {
    return this.call('rr', ep, iterations, warmup);
  }
  connectRr(ep: Endpoint, n: number, concurrency: number, resume: boolean): Promise<ConnectRrResult> {
    return this.call('connectRr', ep, n, concurrency, resume);
  }
  openIdle(ep: Endpoint, n: number, concurrency: number): Promise<{ ms: number }> {
    return this.call('openIdle', ep, n, concurrency);
  }
  closeIdle(): Promise<void> {
    return this.call('closeIdle');
  }
  stats(gcFirst: boolean): Promise<ClientStats> {
    return this.call('stats', gcFirst);
  }
  async shutdown(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    await this.call('shutdown').catch(() => {});
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(killer);
  }
}

function serve(): void {
  const side = new FrontendClient();
  let exiting = false;
  process.on('message', (m: Call) => {
    const fn = side[m.method] as (...a: unknown[]) => Promise<unknown>;
    fn.apply(side, m.args).then(
      (result) =>
        process.send?.({ id: m.id, result } satisfies Reply, () => {
          if (m.method === 'shutdown') process.exit(0);
        }),
      (err: Error) => process.send?.({ id: m.id, error: err.stack ?? String(err) } satisfies Reply),
    );
  });
  process.on('disconnect', () => {
    if (exiting) return;
    exiting = true;
    void side.shutdown().finally(() => process.exit(0));
  });
  process.send?.({ ready: true } satisfies Reply);
}

if (process.env.TETHER_BENCH_FRONTEND_CLIENT && process.send) serve();
