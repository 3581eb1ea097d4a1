// How agents reach the hub in firewalled networks: through a real squid (http and https proxies,
// with and without Basic auth), and over a WebSocket; plus the hub's CONNECT frontend.
import { connect as netConnect } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Squid, startSquid } from '../../src/localenv/squid.ts';
import { issueCertificate } from '../../src/pki/index.ts';
import { ConnectFrontend } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, type HubPki, hubPki, roundTrip, startAgent, startServer } from './tunnel-fixtures.ts';

let pki: HubPki;
let echoPort: number;
let server: ProxyServer;
let closeEcho: () => Promise<void>;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  pki = await hubPki();
  const echo = await echoServer();
  echoPort = echo.port;
  closeEcho = echo.close;
  server = await startServer(pki);
});
afterAll(async () => {
  await server.stop(100);
  await closeEcho();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function squid(opts: Parameters<typeof startSquid>[0] = {}): Promise<Squid> {
  const s = await startSquid(opts);
  cleanups.push(() => s.stop());
  return s;
}

async function agentVia(
  cluster: string,
  opts: { proxyUrl?: string; proxyCaPem?: string; servers?: string[] },
) {
  const a = await startAgent(pki, {
    cluster,
    servers: opts.servers ?? [`127.0.0.1:${server.port}`],
    targetPort: echoPort,
    ...opts,
  });
  cleanups.push(() => a.stop());
  return a;
}

async function expectTunnelWorks(cluster: string): Promise<void> {
  await server.waitForAgents(cluster, 1, 15_000);
  const st = await server.dial(cluster, 'kube-apiserver:443');
  expect((await roundTrip(st, Buffer.from('through the proxy'))).bytes).toBe(17);
}

describe('agent behind a forward proxy', () => {
  it('joins through an http squid, and squid logs the CONNECT to the hub', async () => {
    const sq = await squid();
    const a = await agentVia('via-http', { proxyUrl: sq.url });
    await expectTunnelWorks('via-http');
    await a.stop();
    await pollUntil(() => sq.accessLog().includes(`CONNECT 127.0.0.1:${server.port}`), {
      timeoutMs: 10_000,
      description: 'CONNECT in the squid access log',
    });
  });

  it('joins through an https squid (TLS to the proxy with its own CA; hub TLS inside the tunnel)', async () => {
    const proxyCert = await issueCertificate(pki.ca, {
      commonName: 'squid',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
    });
    const sq = await squid({ tls: proxyCert });
    await agentVia('via-https', { proxyUrl: sq.url, proxyCaPem: pki.ca.certPem });
    await expectTunnelWorks('via-https');
  });

  it('authenticates to squid with Basic credentials from the proxy URL', async () => {
    const sq = await squid({ basicAuth: { username: 'agent', password: 's3cret:@/' } });
    const url = new URL(sq.url);
    url.username = 'agent';
    url.password = encodeURIComponent('s3cret:@/');
    await agentVia('via-auth', { proxyUrl: url.toString() });
    await expectTunnelWorks('via-auth');
  });

  it('reports a proxy that rejects the credentials, and never logs the password', async () => {
    const sq = await squid({ basicAuth: { username: 'agent', password: 'right' } });
    const url = new URL(sq.url);
    url.username = 'agent';
    url.password = 'wrong-password-123';
    const a = await agentVia('bad-auth', { proxyUrl: url.toString() });
    await pollUntil(() => /rejected the credentials|requires authentication/.test(a.readiness().detail), {
      timeoutMs: 10_000,
      description: 'the agent to report the auth failure',
    });
    expect(a.readiness().ok).toBe(false);
    expect(a.readiness().detail).not.toContain('wrong-password-123');
  });

  it('reports an unreachable proxy clearly', async () => {
    const closed = await echoServer();
    await closed.close();
    const a = await agentVia('no-proxy', { proxyUrl: `http://127.0.0.1:${closed.port}` });
    await pollUntil(() => a.readiness().detail.includes('127.0.0.1') && !a.readiness().ok, {
      timeoutMs: 10_000,
      description: 'unreachable proxy report',
    });
    expect(a.readiness().detail).toMatch(/proxy/i);
  });
});

describe('WebSocket transport', () => {
  it('carries the same tunnel over wss:// with mTLS inside the WebSocket', async () => {
    await agentVia('via-ws', { servers: [`wss://127.0.0.1:${server.port}/tether.v1/tunnel`] });
    await expectTunnelWorks('via-ws');
  });

  it('verifies the proxy-server certificate against the WebSocket URL host (an IP-only certificate works)', async () => {
    const ipOnly = await issueCertificate(pki.ca, {
      commonName: 'proxy-server-ip',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
    });
    const s = await startServer(pki, {
      tls: { certPem: ipOnly.certPem, keyPem: ipOnly.keyPem, clientCaPem: pki.ca.certPem },
    });
    cleanups.push(() => s.stop(100));
    const a = await startAgent(pki, {
      cluster: 'via-ws-ip',
      servers: [`wss://127.0.0.1:${s.port}/tether.v1/tunnel`],
      targetPort: echoPort,
    });
    cleanups.push(() => a.stop());
    await s.waitForAgents('via-ws-ip', 1, 15_000);
  });

  it('works over wss:// through squid too', async () => {
    const sq = await squid();
    await agentVia('via-ws-squid', {
      servers: [`wss://127.0.0.1:${server.port}/tether.v1/tunnel`],
      proxyUrl: sq.url,
    });
    await expectTunnelWorks('via-ws-squid');
  });
});

describe('CONNECT frontend', () => {
  let frontend: ConnectFrontend;
  let clientCert: { certPem: string; keyPem: string };
  beforeAll(async () => {
    frontend = new ConnectFrontend({
      host: '127.0.0.1',
      port: 0,
      tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.proxyClientCa.certPem },
      dial: (cluster, target) => server.dial(cluster, target),
      // No hub here: this authorizer stands in for the SubjectAccessReview (hub-service may go anywhere).
      authorize: async (caller) => caller.user === 'hub-service',
    });
    await frontend.start();
    clientCert = await pki.proxyClientCert('hub-service');
  });
  afterAll(() => frontend.stop());

  function rawConnect(
    request: string,
    withCert = true,
  ): Promise<{ status: number; head: string; socket: TLSSocket }> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: frontend.port,
        ca: pki.ca.certPem,
        ...(withCert ? { cert: clientCert.certPem, key: clientCert.keyPem } : {}),
      });
      let buf = '';
      socket.on('error', reject);
      socket.once('secureConnect', () => socket.write(request));
      const onData = (d: Buffer): void => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end >= 0) {
          socket.off('data', onData);
          resolve({ status: Number(buf.slice(9, 12)), head: buf.slice(0, end), socket });
        }
      };
      socket.on('data', onData);
      socket.once('close', () => resolve({ status: Number(buf.slice(9, 12)) || 0, head: buf, socket }));
    });
  }

  it('CONNECT <cluster>:443 reaches the cluster (mTLS caller) and carries bytes', async () => {
    await agentVia('front1', {});
    await server.waitForAgents('front1');
    const { status, socket } = await rawConnect('CONNECT front1:443 HTTP/1.1\r\nHost: front1:443\r\n\r\n');
    expect(status).toBe(200);
    expect((await roundTrip(socket, Buffer.from('hello cluster'))).bytes).toBe(13);
  });

  it('answers 503 at once for an unknown cluster, 403 for a non-exported target, 407 without credentials', async () => {
    await agentVia('front2', {});
    await server.waitForAgents('front2');
    const unknown = await rawConnect('CONNECT ghost:443 HTTP/1.1\r\n\r\n');
    expect(unknown.status).toBe(503);
    expect(unknown.head).toContain('tether-reason: no agent of cluster ghost');
    const refused = await rawConnect('CONNECT db.front2:5432 HTTP/1.1\r\n\r\n');
    expect(refused.status).toBe(403);
    const anonymous = await rawConnect('CONNECT front2:443 HTTP/1.1\r\n\r\n', false);
    expect(anonymous.status).toBe(407);
    for (const r of [unknown, refused, anonymous]) r.socket.destroy();
  });

  it('rejects malformed and oversized CONNECT requests and keeps serving', async () => {
    const bad = await rawConnect('CONNECT not a target HTTP/1.1\r\n\r\n');
    expect(bad.status).toBe(400);
    const weird = await rawConnect('CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n');
    expect(weird.status).toBe(400);
    const huge = await rawConnect(`CONNECT front1:443 HTTP/1.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect([400, 431]).toContain(huge.status);
    const garbage = await rawConnect('\x00\x01\x02garbage\r\n\r\n');
    expect(garbage.status).toBe(400);
    for (const r of [bad, weird, huge, garbage]) r.socket.destroy();
    // Plain TCP garbage (no TLS) is dropped too.
    const plain = netConnect(frontend.port, '127.0.0.1');
    plain.on('error', () => {});
    plain.write('GET / HTTP/1.1\r\n\r\n');
    await new Promise<void>((r) => plain.once('close', () => r()));
    await agentVia('front3', {});
    await server.waitForAgents('front3');
    const ok = await rawConnect('CONNECT front3:443 HTTP/1.1\r\n\r\n');
    expect(ok.status).toBe(200);
    ok.socket.destroy();
  });
});
