// konnectivity's gRPC ProxyService on the proxy-server's frontend port, driven by a gRPC client
// built from the published protocol (@grpc/grpc-js + test/fixtures/konnectivity/client.proto)
// through a real proxy-server and proxy-agent on loopback to a TCP echo target: dials authorized per
// cluster like CONNECT, bytes intact, CLOSE_REQ / CLOSE_RSP both ways, calls independent of each
// other, bad input ending only its own call.
import { randomBytes } from 'node:crypto';
import { type ClientHttp2Session, connect as h2connect } from 'node:http2';
import { type Duplex, duplexPair } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type { ConnectFrontend, ConnectFrontendOptions } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  connectionOn,
  dialOn,
  KonnectivityClient,
  type KonnectivityClientOptions,
  type WirePacket,
} from '../fixtures/konnectivity-client.ts';
import { echoTunnel, type HubPki, roundTrip, sha256, startFrontend } from './tunnel-fixtures.ts';

let pki: HubPki;
let server: ProxyServer;
let hubService: KeyPairPem;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  const tunnel = await echoTunnel();
  ({ pki, server } = tunnel);
  hubService = await pki.proxyClientCert('grpc-svc');
  return tunnel.stop;
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
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

/** The next packet on `call` matching `match`. */
function nextPacket(
  call: ReturnType<KonnectivityClient['call']>,
  match: (p: WirePacket) => boolean,
  timeoutMs = 5000,
): Promise<WirePacket> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no such packet in time')), timeoutMs);
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
function callStatus(
  call: ReturnType<KonnectivityClient['call']>,
): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => call.once('status', (s) => resolve({ code: s.code, details: s.details })));
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

  it('refuses a cluster the caller may not reach, a caller without credentials and an agent certificate — with DIAL_RSP errors, the call usable', async () => {
    const f = await frontend();
    const call = client(f).call();
    await expect(dialOn(call, 'cluster2:443')).rejects.toThrow(
      /403 .*may not get managedclusters\/proxy for cluster2/,
    );
    await expect(dialOn(call, 'not-an-address')).rejects.toThrow(/400/);
    // the same call still dials what is allowed
    const id = await dialOn(call, 'cluster1:443');
    const conn = connectionOn(call, id, () => call.end());
    expect((await roundTrip(conn, Buffer.from('still usable'))).bytes).toBe(12);

    const anonymous = client(f, { certPem: undefined, keyPem: undefined });
    await expect(anonymous.dial('cluster1:443')).rejects.toThrow(
      /407 .*proxy-client certificate or a hub bearer token/,
    );

    const agent = await pki.agentCert('cluster1', 'agent-1');
    // an agent certificate does not even verify against the proxy-client CA
    await expect(
      client(f, { certPem: agent.certPem, keyPem: agent.keyPem }).dial('cluster1:443'),
    ).rejects.toThrow(/407/);
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

  it('carries several connections on one call; CLOSE_REQ is answered CLOSE_RSP and the target closes', async () => {
    const f = await frontend();
    const call = client(f).call();
    const ids = await Promise.all([dialOn(call, 'cluster1:443'), dialOn(call, 'cluster1:443')]);
    expect(new Set(ids).size).toBe(2);
    const [a, b] = ids.map((id) => connectionOn(call, id)) as [
      ReturnType<typeof connectionOn>,
      ReturnType<typeof connectionOn>,
    ];
    const [ra, rb] = await Promise.all([
      roundTrip(a, Buffer.alloc(100_000, 1)),
      roundTrip(b, Buffer.alloc(50_000, 2)),
    ]);
    expect([ra.sha, rb.sha]).toEqual([sha256(Buffer.alloc(100_000, 1)), sha256(Buffer.alloc(50_000, 2))]);
    // roundTrip ended both connections: CLOSE_REQ each, CLOSE_RSP each
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: 'both targets closed after CLOSE_REQ',
    });
    const status = callStatus(call);
    call.end();
    expect((await status).code).toBe(0);
  });

  it('reports a target that closes with CLOSE_RSP, and DATA for no connection with CLOSE_RSP and an error', async () => {
    // targets this test holds the far end of
    const far: Duplex[] = [];
    const f = await frontend({
      dial: async () => {
        const [near, other] = duplexPair();
        other.resume();
        far.push(other);
        return near;
      },
    });
    const call = client(f).call();
    const id = await dialOn(call, 'cluster1:443');
    const closed = nextPacket(call, (p) => p.type === 'CLOSE_RSP' && p.closeResponse?.connectID === id);
    // the target sends FIN (the echo target would only after ours)
    far[0]?.end();
    expect((await closed).closeResponse?.error ?? '').toBe('');
    const unknown = nextPacket(call, (p) => p.type === 'CLOSE_RSP' && p.closeResponse?.connectID === '999');
    call.write({ type: 'DATA', data: { connectID: '999', data: Buffer.from('x') } });
    expect((await unknown).closeResponse?.error).toMatch(/no connection 999/);
    call.end();
  });

  it('a cancelled call closes its target connections', async () => {
    const f = await frontend();
    const call = client(f).call();
    await Promise.all([dialOn(call, 'cluster1:443'), dialOn(call, 'cluster1:443')]);
    expect(f.limiter.openTunnels('grpc-svc')).toBe(2);
    call.cancel();
    await pollUntil(() => f.limiter.openTunnels('grpc-svc') === 0, {
      timeoutMs: 5000,
      description: "the cancelled call's connections closed",
    });
  });

  it('a call whose reader stalls does not hold back a connection on another call', async () => {
    const f = await frontend();
    const c = client(f);
    const stalled = await c.dial('cluster1:443');
    // 32 MB echoed back into a reader that never reads: its call's window fills and stays full
    stalled.pause();
    stalled.write(randomBytes(32 * 1024 * 1024));
    const live = await c.dial('cluster1:443');
    const payload = randomBytes(2 * 1024 * 1024);
    expect((await roundTrip(live, payload)).sha).toBe(sha256(payload));
    stalled.destroy();
  });

  it('ends only the offending call: a message over the limit (RESOURCE_EXHAUSTED), a compressed one, an unknown method (UNIMPLEMENTED)', async () => {
    const f = await frontend({ grpc: { maxMessageBytes: 64 * 1024 } });
    const c = client(f);
    const big = c.call();
    const bigStatus = callStatus(big);
    const id = await dialOn(big, 'cluster1:443');
    big.write({ type: 'DATA', data: { connectID: id, data: Buffer.alloc(100 * 1024) } });
    expect(await bigStatus).toMatchObject({
      code: 8,
      details: expect.stringMatching(/exceeds the limit of 65536/),
    });
    // another call on the same client still works
    const ok = await c.dial('cluster1:443');
    expect((await roundTrip(ok, Buffer.from('ok'))).bytes).toBe(2);

    // raw HTTP/2: a compressed message, and a method that is not ProxyService.Proxy
    const session = h2Session(f);
    const trailersOf = (path: string, body?: Buffer) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const req = session.request({
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        req.on('error', () => {});
        let got: Record<string, unknown> = {};
        req.on('response', (h) => {
          if (h['grpc-status'] !== undefined) got = h as Record<string, unknown>;
        });
        req.on('trailers', (t) => {
          got = t as Record<string, unknown>;
        });
        req.on('close', () => resolve(got));
        req.resume();
        if (body) req.end(body);
        else req.end();
      });
    const compressed = Buffer.from([1, 0, 0, 0, 2, 8, 0]);
    expect((await trailersOf('/ProxyService/Proxy', compressed))['grpc-status']).toBe('3');
    expect((await trailersOf('/grpc.health.v1.Health/Check'))['grpc-status']).toBe('12');
  });

  it('leaves HTTP/1.1 and HTTP/2 CONNECT on the same port as they were', async () => {
    const f = await frontend();
    const session = h2Session(f);
    const stream = session.request({ ':method': 'CONNECT', ':authority': 'cluster1:443' });
    stream.on('error', () => {});
    const status = await new Promise<number>((r) => stream.once('response', (h) => r(Number(h[':status']))));
    expect(status).toBe(200);
    expect((await roundTrip(stream, Buffer.from('h2'))).bytes).toBe(2);
  });
});
