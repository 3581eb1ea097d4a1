// HTTP/2 CONNECT on the proxy-server's CONNECT frontend: many tunnels over one TLS connection
// (ALPN h2), each authenticated, authorized and limited as an HTTP/1.1 CONNECT is, through a real
// proxy-server and proxy-agent on loopback to a TCP echo target.
import { randomBytes } from 'node:crypto';
import { type ClientHttp2Session, type ClientHttp2Stream, connect } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type {
  Caller,
  ConnectFrontend,
  ConnectFrontendOptions,
} from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
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
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  const tunnel = await echoTunnel();
  ({ pki, server } = tunnel);
  hubService = await pki.proxyClientCert('h2-svc');
  return tunnel.stop;
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const frontend = (overrides: Partial<ConnectFrontendOptions> = {}): Promise<ConnectFrontend> =>
  startFrontend(pki, server, cleanups, overrides);

/** An HTTP/2 client session to the frontend, with `cert` (or none). */
async function h2(port: number, cert?: KeyPairPem): Promise<ClientHttp2Session> {
  const session = connect(`https://localhost:${port}`, {
    ca: pki.ca.certPem,
    ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
  });
  session.on('error', () => {});
  cleanups.push(() => {
    session.destroy();
  });
  // connected, and the frontend's SETTINGS (stream limit, windows) received
  await new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => resolve());
    session.once('error', reject);
  });
  return session;
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  stream: ClientHttp2Stream;
}

/** One CONNECT stream; resolves with the response headers. */
function tunnel(
  session: ClientHttp2Session,
  authority: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const stream = session.request({ ':method': 'CONNECT', ':authority': authority, ...headers });
  stream.on('error', () => {});
  return new Promise((resolve, reject) => {
    stream.once('response', (h) =>
      resolve({ status: Number(h[':status']), headers: h as Record<string, unknown>, stream }),
    );
    stream.once('close', () => reject(new Error(`stream closed without an answer (code ${stream.rstCode})`)));
  });
}

describe('HTTP/2 CONNECT frontend', () => {
  it('carries many tunnels over one TLS connection, each to the cluster, bytes intact', async () => {
    const f = await frontend();
    const session = await h2(f.port, hubService);
    expect(session.alpnProtocol).toBe('h2');
    const payloads = Array.from({ length: 16 }, (_, i) => randomBytes(64 * 1024 + i));
    const answers = await Promise.all(payloads.map(() => tunnel(session, 'cluster1:443')));
    expect(answers.map((a) => a.status)).toEqual(payloads.map(() => 200));
    const results = await Promise.all(answers.map((a, i) => roundTrip(a.stream, payloads[i] as Buffer)));
    expect(results.map((r) => r.sha)).toEqual(payloads.map(sha256));
    expect(f.limiter.openTunnels('h2-svc')).toBeGreaterThan(0);
    for (const a of answers) a.stream.close();
    await pollUntil(() => f.limiter.openTunnels('h2-svc') === 0, {
      timeoutMs: 5000,
      description: "the caller's tunnels released once its streams closed",
    });
  });

  it('answers each stream as HTTP/1.1 would: unauthorized cluster 403, bad authority 400, other methods 405; the connection keeps serving', async () => {
    const f = await frontend();
    const session = await h2(f.port, hubService);
    const denied = await tunnel(session, 'cluster2:443');
    expect(denied.status).toBe(403);
    expect(String(denied.headers['tether-reason'])).toContain(
      'may not get managedclusters/proxy for cluster2',
    );
    const bad = await tunnel(session, 'no-port-here');
    expect(bad.status).toBe(400);
    const get = session.request({ ':method': 'GET', ':path': '/' });
    get.on('error', () => {});
    const getStatus = await new Promise<number>((r) => get.once('response', (h) => r(Number(h[':status']))));
    expect(getStatus).toBe(405);
    get.close();
    const ok = await tunnel(session, 'cluster1:443');
    expect(ok.status).toBe(200);
    const payload = randomBytes(1024);
    expect((await roundTrip(ok.stream, payload)).sha).toBe(sha256(payload));
  });

  it("an agent's certificate is no credential on an HTTP/2 stream either (407), and a managed-cluster identity is refused (403)", async () => {
    const agentCert = await pki.agentCert('cluster1', 'agent-1');
    const f = await frontend();
    const asAgent = await h2(f.port, agentCert);
    expect((await tunnel(asAgent, 'cluster1:443')).status).toBe(407);
    // a frontend told to trust the agent CA (a misconfiguration) still refuses agent identities
    const misconfigured = await frontend({
      tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.ca.certPem },
    });
    const refused = await tunnel(await h2(misconfigured.port, agentCert), 'cluster1:443');
    expect(refused.status).toBe(403);
    expect(String(refused.headers['tether-reason'])).toContain('managed-cluster identity');
  });

  it('authenticates a stream by its proxy-authorization bearer token when the connection has no certificate', async () => {
    const seen: string[] = [];
    const f = await frontend({
      authenticateToken: async (token): Promise<Caller | undefined> => {
        seen.push(token);
        return token === 'good-token' ? { user: 'token-svc', groups: [] } : undefined;
      },
    });
    const session = await h2(f.port);
    expect((await tunnel(session, 'cluster1:443')).status).toBe(407);
    expect(
      (await tunnel(session, 'cluster1:443', { 'proxy-authorization': 'Bearer bad-token' })).status,
    ).toBe(407);
    const ok = await tunnel(session, 'cluster1:443', { 'proxy-authorization': 'Bearer good-token' });
    expect(ok.status).toBe(200);
    expect(seen).toEqual(['bad-token', 'good-token']);
  });

  it("one caller's streams count against its tunnel limit, whatever connection they share (429 beyond it)", async () => {
    const f = await frontend({ limits: { maxTunnelsPerCaller: 3 } });
    const session = await h2(f.port, hubService);
    const open = await Promise.all([1, 2, 3].map(() => tunnel(session, 'cluster1:443')));
    expect(open.map((a) => a.status)).toEqual([200, 200, 200]);
    const over = await tunnel(await h2(f.port, hubService), 'cluster1:443');
    expect(over.status).toBe(429);
    expect(over.headers['retry-after']).toBe('1');
  });

  it('advertises its concurrent-stream limit in SETTINGS (nghttp2 refuses streams beyond it)', async () => {
    const f = await frontend({ h2: { maxConcurrentStreams: 2, streamWindowBytes: 256 * 1024 } });
    const session = await h2(f.port, hubService);
    expect(session.remoteSettings.maxConcurrentStreams).toBe(2);
    expect(session.remoteSettings.initialWindowSize).toBe(256 * 1024);
    const [a, b] = await Promise.all([tunnel(session, 'cluster1:443'), tunnel(session, 'cluster1:443')]);
    expect([a?.status, b?.status]).toEqual([200, 200]);
    expect(f.limiter.openTunnels('h2-svc')).toBe(2);
  });

  it('an HTTP/1.1 client on the same port still gets HTTP/1.1 CONNECT', async () => {
    const f = await frontend();
    await http1Connect(f.port, pki, hubService, cleanups);
  });
});
