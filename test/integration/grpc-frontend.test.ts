// konnectivity's gRPC ProxyService on the proxy-server's frontend port, driven by a gRPC client
// built from the published protocol (@grpc/grpc-js + test/fixtures/konnectivity/client.proto)
// through a real proxy-server and proxy-agent on loopback to a TCP echo target: dials authorized per
// cluster like CONNECT, bytes intact, CLOSE_REQ / CLOSE_RSP both ways, calls independent of each
// other, bad input ending only its own call. Where a test needs bytes grpc-js would never send, it
// speaks HTTP/2 itself with hand-built frames (never tether's encoder).
import { randomBytes } from 'node:crypto';
import { type ClientHttp2Session, type ClientHttp2Stream, connect as h2connect } from 'node:http2';
import { type Duplex, duplexPair } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type { ConnectFrontend, ConnectFrontendOptions } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  connectionOn,
  dialOn,
  KonnectivityClient,
  type KonnectivityClientOptions,
  type ProxyCall,
  type WirePacket,
} from '../fixtures/konnectivity-client.ts';
import {
  echoTunnel,
  type HubPki,
  http1Connect,
  roundTrip,
  sha256,
  startFrontend,
} from './tunnel-fixtures.ts';

let pki: HubPki;
let server: ProxyServer;
let hubService: KeyPairPem;
let stopTunnel: () => Promise<void>;
/** what the running test started (frontends, clients, sessions), undone after it whatever happened */
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  const tunnel = await echoTunnel();
  ({ pki, server } = tunnel);
  stopTunnel = tunnel.stop;
  hubService = await pki.proxyClientCert('grpc-svc');
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await stopTunnel?.();
});

const frontend = (overrides: Partial<ConnectFrontendOptions> = {}): Promise<ConnectFrontend> =>
  startFrontend(pki, server, cleanups, overrides);

function client(f: ConnectFrontend, o: Partial<KonnectivityClientOptions> = {}): KonnectivityClient {
  const c = new KonnectivityClient({
    address: `127.0.0.1:${f.port}`,
    caPem: pki.ca.certPem,
    serverName: 'localhost',
    certPem: hubService.certPem,
    keyPem: hubService.keyPem,
    ...o,
  });
  cleanups.push(() => c.close());
  return c;
}

/** A call of `c` that is cancelled at cleanup if the test left it open. */
function openCall(c: KonnectivityClient): ProxyCall {
  const call = c.call();
  cleanups.push(() => call.cancel());
  return call;
}

/** Every packet `call` receives from now on. */
function record(call: ProxyCall): WirePacket[] {
  const seen: WirePacket[] = [];
  call.on('data', (p: WirePacket) => seen.push(p));
  return seen;
}

/** The next packet on `call` matching `match` (listen before writing what it answers). */
function nextPacket(
  call: ProxyCall,
  match: (p: WirePacket) => boolean,
  timeoutMs = 5000,
): Promise<WirePacket> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      call.off('data', on);
      reject(new Error(`no matching packet within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (p: WirePacket): void => {
      if (!match(p)) return;
      clearTimeout(timer);
      call.off('data', on);
      resolve(p);
    };
    call.on('data', on);
  });
}

/** How a call ended: its gRPC status code and details. */
function callStatus(call: ProxyCall): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => call.once('status', (s) => resolve({ code: s.code, details: s.details })));
}

const dialRsp = (random: string) => (p: WirePacket) =>
  p.type === 'DIAL_RSP' && p.dialResponse?.random === random;
const closeRsp = (connectID: string) => (p: WirePacket) =>
  p.type === 'CLOSE_RSP' && p.closeResponse?.connectID === connectID;

/** A plain HTTP/2 connection to the frontend with the hub service's certificate. */
function h2Session(f: ConnectFrontend): ClientHttp2Session {
  const session = h2connect(`https://localhost:${f.port}`, {
    ca: pki.ca.certPem,
    cert: hubService.certPem,
    key: hubService.keyPem,
  });
  session.on('error', () => {});
  cleanups.push(() => {
    session.destroy();
  });
  return session;
}

/**
 * A gRPC call spoken by hand: the stream; its grpc-status once the frontend ended the call (from the
 * trailers, or a trailers-only answer); and how the stream closed.
 */
function rawCall(
  session: ClientHttp2Session,
  path = '/ProxyService/Proxy',
): {
  req: ClientHttp2Stream;
  ended: Promise<{ status: string; message: string }>;
  closed: Promise<number | undefined>;
} {
  const req = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  req.on('error', () => {});
  req.resume();
  const ended = new Promise<{ status: string; message: string }>((resolve) => {
    const end = (h: Record<string, unknown>): void =>
      resolve({
        status: String(h['grpc-status'] ?? ''),
        message: decodeURIComponent(String(h['grpc-message'] ?? '')),
      });
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) end(h);
    });
    req.on('trailers', end);
    req.on('close', () => end({}));
  });
  const closed = new Promise<number | undefined>((resolve) => req.on('close', () => resolve(req.rstCode)));
  return { req, ended, closed };
}

// Hand-built protobuf and gRPC framing (the published field numbers), for what grpc-js would not send.
function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
/** gRPC message: flag 0, 4-byte big-endian length, message. */
const frame = (message: Buffer): Buffer => Buffer.concat([Buffer.from([0]), u32(message.length), message]);
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
/** Packet{dialRequest(2){protocol(1) "tcp", address(2), random(3) 42}}, type DIAL_REQ (0) left out */
function dialReqMessage(address: string): Buffer {
  const inner = Buffer.concat([
    Buffer.from([0x0a, 3]),
    Buffer.from('tcp'),
    Buffer.from([0x12, address.length]),
    Buffer.from(address),
    Buffer.from([0x18, 42]),
  ]);
  return Buffer.concat([Buffer.from([0x12, inner.length]), inner]);
}
/** Packet{type(1) DATA(4), data(4){data(3) bytes}}: no connectID, which the server skips */
function anonymousDataMessage(bytes: Buffer): Buffer {
  const inner = Buffer.concat([Buffer.from([0x1a]), varint(bytes.length), bytes]);
  return Buffer.concat([Buffer.from([0x08, 4, 0x22]), varint(inner.length), inner]);
}

/**
 * A frontend whose dials return in-memory targets (each reads what it gets); `far` holds their
 * other ends, so a test can close a target itself.
 */
async function frontendWithHeldTargets(): Promise<{ f: ConnectFrontend; far: Duplex[] }> {
  const far: Duplex[] = [];
  const f = await frontend({
    dial: async () => {
      const [near, other] = duplexPair();
      other.resume();
      far.push(other);
      return near;
    },
  });
  return { f, far };
}

describe('gRPC frontend (konnectivity ProxyService)', () => {
  it('dials <cluster>:443 with a proxy-client certificate and carries the bytes intact, on a call per connection', async () => {
    const f = await frontend();
    const c = client(f);
    const payloads = [randomBytes(1), randomBytes(256 * 1024), randomBytes(3 * 1024 * 1024 + 7)];
    const conns = await Promise.all(payloads.map(() => c.dial('cluster1:443')));
    const results = await Promise.all(conns.map((conn, i) => roundTrip(conn, payloads[i] as Buffer)));
    expect(results.map((r) => r.sha)).toEqual(payloads.map(sha256));
    // cluster-proxy's second name for the apiserver dials the same target
    const alias = await c.dial('cluster1.open-cluster-management-agent-addon:443');
    expect((await roundTrip(alias, Buffer.from('alias'))).bytes).toBe(5);
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: "the caller's tunnels released once the connections closed",
    });
  });

  it('refuses a cluster the caller may not reach, a malformed address and udp — with DIAL_RSP errors, the call usable', async () => {
    const f = await frontend();
    const call = openCall(client(f));
    await expect(dialOn(call, 'cluster2:443')).rejects.toThrow(
      /403 Forbidden: .*may not get managedclusters\/proxy for cluster2/,
    );
    await expect(dialOn(call, 'not-an-address')).rejects.toThrow(/400/);
    const udp = nextPacket(call, dialRsp('5'));
    call.write({ type: 'DIAL_REQ', dialRequest: { protocol: 'udp', address: 'cluster1:443', random: '5' } });
    expect((await udp).dialResponse?.error).toMatch(/protocol "udp" is not served; only tcp/);
    // the same call still dials what is allowed
    const id = await dialOn(call, 'cluster1:443');
    const conn = connectionOn(call, id, () => call.end());
    expect((await roundTrip(conn, Buffer.from('still usable'))).bytes).toBe(12);
  });

  it('refuses a caller with no certificate and no token, and an agent certificate even where the frontend trusts the agent CA', async () => {
    const f = await frontend();
    const anonymous = client(f, { certPem: undefined, keyPem: undefined });
    await expect(anonymous.dial('cluster1:443')).rejects.toThrow(
      /407 .*proxy-client certificate or a hub bearer token/,
    );
    const agent = await pki.agentCert('cluster1', 'agent-1');
    // an agent certificate does not verify against the proxy-client CA: no credential at all
    await expect(
      client(f, { certPem: agent.certPem, keyPem: agent.keyPem }).dial('cluster1:443'),
    ).rejects.toThrow(/407/);
    // a frontend misconfigured to trust the agent CA still refuses the managed-cluster identity
    const misconfigured = await frontend({
      tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.ca.certPem },
    });
    await expect(
      client(misconfigured, { certPem: agent.certPem, keyPem: agent.keyPem }).dial('cluster1:443'),
    ).rejects.toThrow(/403 .*managed-cluster identity/);
    expect(misconfigured.limiter.openTunnels('system:open-cluster-management:cluster1:agent-1')).toBe(0);
  });

  it('takes a hub bearer token from the call metadata (TokenReview), refusing a managed-cluster identity', async () => {
    const f = await frontend({
      authenticateToken: async (token) =>
        token === 'svc-token'
          ? { user: 'system:serviceaccount:hub:svc', groups: [] }
          : token === 'agent-token'
            ? {
                user: 'system:open-cluster-management:cluster1:agent',
                groups: ['system:open-cluster-management:cluster1'],
              }
            : undefined,
    });
    const noCert = { certPem: undefined, keyPem: undefined };
    const ok = await client(f, { ...noCert, authorization: 'Bearer svc-token' }).dial('cluster1:443');
    expect((await roundTrip(ok, Buffer.from('token'))).bytes).toBe(5);
    await expect(
      client(f, { ...noCert, authorization: 'Bearer agent-token' }).dial('cluster1:443'),
    ).rejects.toThrow(/403 .*managed-cluster identity/);
    await expect(
      client(f, { ...noCert, authorization: 'Bearer wrong' }).dial('cluster1:443'),
    ).rejects.toThrow(/407/);
  });

  it('carries several connections on one call, each echoing on its own; the call ends OK once the client ends it', async () => {
    const f = await frontend();
    const call = openCall(client(f));
    const ids = await Promise.all([dialOn(call, 'cluster1:443'), dialOn(call, 'cluster1:443')]);
    expect(new Set(ids).size).toBe(2);
    const [a, b] = ids.map((id) => connectionOn(call, id)) as [Duplex, Duplex];
    const [pa, pb] = [randomBytes(300_000), randomBytes(50_000)];
    const [ra, rb] = await Promise.all([roundTrip(a, pa), roundTrip(b, pb)]);
    expect([ra.sha, rb.sha]).toEqual([sha256(pa), sha256(pb)]);
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: 'both targets closed after CLOSE_REQ',
    });
    const status = callStatus(call);
    call.end();
    expect((await status).code).toBe(0);
  });

  it('CLOSE_REQ closes that target and is answered CLOSE_RSP; an unknown connectID gets CLOSE_RSP with an error; at most maxConnectionsPerCall', async () => {
    const f = await frontend({ grpc: { maxConnectionsPerCall: 2 } });
    const call = openCall(client(f));
    const [first, second] = await Promise.all([dialOn(call, 'cluster1:443'), dialOn(call, 'cluster1:443')]);
    await expect(dialOn(call, 'cluster1:443')).rejects.toThrow(/at most 2 connections per call/);
    expect(f.limiter.openTunnels('grpc-svc')).toBe(2);

    const closed = nextPacket(call, closeRsp(first as string));
    call.write({ type: 'CLOSE_REQ', closeRequest: { connectID: first } });
    expect((await closed).closeResponse?.error ?? '').toBe('');
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 1, {
      timeoutMs: 5000,
      description: 'the first target closed',
    });

    const unknown = nextPacket(call, closeRsp('999'));
    call.write({ type: 'CLOSE_REQ', closeRequest: { connectID: '999' } });
    expect((await unknown).closeResponse?.error).toMatch(/no connection 999/);
    const unknownData = nextPacket(call, closeRsp('998'));
    call.write({ type: 'DATA', data: { connectID: '998', data: Buffer.from('x') } });
    expect((await unknownData).closeResponse?.error).toMatch(/no connection 998/);

    // the freed slot dials again; the second connection was never disturbed
    const third = await dialOn(call, 'cluster1:443');
    const [r2, r3] = await Promise.all([
      roundTrip(connectionOn(call, second as string), Buffer.from('second')),
      roundTrip(connectionOn(call, third), Buffer.from('third')),
    ]);
    expect([r2.bytes, r3.bytes]).toEqual([6, 5]);
  });

  it('reports a target that closes with CLOSE_RSP', async () => {
    const { f, far } = await frontendWithHeldTargets();
    const call = openCall(client(f));
    const id = await dialOn(call, 'cluster1:443');
    const closed = nextPacket(call, closeRsp(id));
    // the target sends FIN (the echo target would only after ours)
    far[0]?.end();
    expect((await closed).closeResponse?.error ?? '').toBe('');
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: 'the tunnel released',
    });
  });

  it('DIAL_CLS abandons a pending dial (its target closed, no DIAL_RSP); pending dials are bounded; DRAIN is ignored', async () => {
    const gates: Array<{ target: string; release: () => void; far?: Duplex }> = [];
    const f = await frontend({
      grpc: { maxPendingDialsPerCall: 2 },
      dial: (_cluster, target) =>
        new Promise<Duplex>((resolve) => {
          const gate: (typeof gates)[number] = {
            target,
            release: () => {
              const [near, far] = duplexPair();
              far.resume();
              gate.far = far;
              resolve(near);
            },
          };
          gates.push(gate);
        }),
    });
    cleanups.push(() => {
      for (const g of gates) g.far?.destroy();
    });
    const call = openCall(client(f));
    const seen = record(call);
    call.write({
      type: 'DIAL_REQ',
      dialRequest: { protocol: 'tcp', address: 'a.cluster1:1001', random: '11' },
    });
    call.write({
      type: 'DIAL_REQ',
      dialRequest: { protocol: 'tcp', address: 'b.cluster1:1002', random: '22' },
    });
    await pollUntil(() => gates.length === 2, { timeoutMs: 5000, description: 'both dials pending' });
    const third = nextPacket(call, dialRsp('33'));
    call.write({
      type: 'DIAL_REQ',
      dialRequest: { protocol: 'tcp', address: 'c.cluster1:1003', random: '33' },
    });
    expect((await third).dialResponse?.error).toMatch(/at most 2 dials may be pending/);

    call.write({ type: 'DIAL_CLS', closeDial: { random: '11' } });
    call.write({ type: 'DRAIN', drain: {} });
    // packets are handled in order: once this is answered, DIAL_CLS and DRAIN were handled
    const fence = nextPacket(call, closeRsp('777'));
    call.write({ type: 'CLOSE_REQ', closeRequest: { connectID: '777' } });
    await fence;

    const dialed = nextPacket(call, dialRsp('22'));
    for (const g of gates) g.release();
    const connectID = (await dialed).dialResponse?.connectID as string;
    expect(connectID).toMatch(/^[1-9]\d*$/);
    const cancelled = gates.find((g) => g.target === 'a:1001');
    await pollUntil(() => cancelled?.far?.readableEnded, {
      timeoutMs: 5000,
      description: "the cancelled dial's target closed",
    });
    expect(seen.filter((p) => p.type === 'DIAL_RSP' && p.dialResponse?.random === '11')).toEqual([]);

    // the dial that was not cancelled carries bytes
    const target = gates.find((g) => g.target === 'b:1002')?.far as Duplex;
    const got = new Promise<string>((resolve) => target.once('data', (d: Buffer) => resolve(d.toString())));
    call.write({ type: 'DATA', data: { connectID, data: Buffer.from('after drain') } });
    expect(await got).toBe('after drain');
  });

  it('a cancelled call closes its target connections', async () => {
    const { f, far } = await frontendWithHeldTargets();
    const call = openCall(client(f));
    await Promise.all([dialOn(call, 'cluster1:443'), dialOn(call, 'cluster1:443')]);
    expect(f.limiter.openTunnels('grpc-svc')).toBe(2);
    call.cancel();
    await pollUntil(() => far.length === 2 && far.every((s) => s.readableEnded), {
      timeoutMs: 5000,
      description: "the cancelled call's targets closed",
    });
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: "the cancelled call's tunnels released",
    });
  });

  it('a call whose reader stalls does not hold back a connection on another call', async () => {
    const f = await frontend();
    const c = client(f);
    const stalled = await c.dial('cluster1:443');
    cleanups.push(() => {
      stalled.destroy();
    });
    // 32 MB echoed back into a reader that never reads: its call's window fills and stays full
    stalled.pause();
    stalled.write(randomBytes(32 * 1024 * 1024));
    const live = await c.dial('cluster1:443');
    const payload = randomBytes(2 * 1024 * 1024);
    expect((await roundTrip(live, payload)).sha).toBe(sha256(payload));
  });

  it('ends a call that holds no connection for idleCallMs with UNAVAILABLE, leaving a busy call alone', async () => {
    const f = await frontend({ grpc: { idleCallMs: 300 } });
    const c = client(f);
    const idle = openCall(c);
    const busy = openCall(c);
    const idleStatus = callStatus(idle);
    const conn = connectionOn(busy, await dialOn(busy, 'cluster1:443'));
    expect(await idleStatus).toMatchObject({
      code: 14,
      details: expect.stringMatching(/no connection on this call for 300 ms/),
    });
    expect((await roundTrip(conn, Buffer.from('busy'))).bytes).toBe(4);
  });

  it('ends only the offending call: a message over the limit (RESOURCE_EXHAUSTED), a compressed one, an unknown method (UNIMPLEMENTED)', async () => {
    const f = await frontend({ grpc: { maxMessageBytes: 64 * 1024 } });
    const c = client(f);
    const big = openCall(c);
    const bigStatus = callStatus(big);
    const id = await dialOn(big, 'cluster1:443');
    big.write({ type: 'DATA', data: { connectID: id, data: Buffer.alloc(100 * 1024) } });
    expect(await bigStatus).toMatchObject({
      code: 8,
      details: expect.stringMatching(/exceeds the limit of 65536/),
    });
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: "the ended call's connection closed",
    });
    // another call on the same client still works
    const ok = await c.dial('cluster1:443');
    expect((await roundTrip(ok, Buffer.from('ok'))).bytes).toBe(2);

    // raw HTTP/2: a compressed message, and a method that is not ProxyService.Proxy
    const session = h2Session(f);
    const compressed = rawCall(session);
    compressed.req.end(Buffer.from([1, 0, 0, 0, 2, 8, 0]));
    expect(await compressed.ended).toEqual({
      status: '3',
      message: expect.stringMatching(/compressed messages are not accepted/),
    });
    const health = rawCall(session, '/grpc.health.v1.Health/Check');
    health.req.end();
    expect(await health.ended).toMatchObject({
      status: '12',
      message: expect.stringMatching(/\/ProxyService\/Proxy/),
    });
  });

  it('a malformed packet ends the call with INVALID_ARGUMENT and closes its connections', async () => {
    const f = await frontend({ grpc: { endedCallGraceMs: 200 } });
    const call = rawCall(h2Session(f));
    call.req.write(frame(dialReqMessage('cluster1:443')));
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 1, {
      timeoutMs: 5000,
      description: 'the hand-built DIAL_REQ dialed',
    });
    // a dialRequest claiming 64 bytes of which one follows
    call.req.write(frame(Buffer.from([0x12, 0x40, 0x0a])));
    expect(await call.ended).toEqual({ status: '3', message: expect.stringMatching(/malformed Packet/) });
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: "the malformed call's connection closed",
    });
    // this client never ends its side: after endedCallGraceMs the frontend resets the stream
    expect(await call.closed).toBe(0);
  });

  it('bounds unfinished messages across the calls of one HTTP/2 connection (RESOURCE_EXHAUSTED), the other call unharmed', async () => {
    const f = await frontend({ grpc: { maxMessageBytes: 40_000, maxPartialBytesPerConnection: 50_000 } });
    const session = h2Session(f);
    const body = anonymousDataMessage(randomBytes(30_000));
    // two calls each send all but the last byte of a message: 2 × ~30 kB held, over 50 kB together
    const calls = [rawCall(session), rawCall(session)];
    for (const c of calls) c.req.write(frame(body).subarray(0, -1));
    const first = await Promise.race(calls.map((c, i) => c.ended.then((e) => ({ ...e, i }))));
    expect(first).toMatchObject({
      status: '8',
      message: expect.stringMatching(/unfinished messages on this connection exceed 50000 bytes/),
    });
    // the other call finishes its message (DATA without a connectID, skipped) and ends OK
    const other = calls[1 - first.i] as (typeof calls)[number];
    expect(other.req.closed).toBe(false);
    other.req.end(frame(body).subarray(-1));
    expect((await other.ended).status).toBe('0');
  });

  it('leaves HTTP/1.1 and HTTP/2 CONNECT on the same port as they were', async () => {
    const f = await frontend();
    const session = h2Session(f);
    const stream = session.request({ ':method': 'CONNECT', ':authority': 'cluster1:443' });
    stream.on('error', () => {});
    const status = await new Promise<number>((r) => stream.once('response', (h) => r(Number(h[':status']))));
    expect(status).toBe(200);
    expect((await roundTrip(stream, Buffer.from('h2'))).bytes).toBe(2);

    const s = await http1Connect(f.port, pki, hubService, cleanups);
    expect((await roundTrip(s, Buffer.from('http/1.1'))).bytes).toBe(8);
  });
});
