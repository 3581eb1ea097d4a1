// The CONNECT frontend's own defences, without a hub: which certificates are callers at all, and
// the per-client limits that keep one caller (or one address) from starving the others. Hub RBAC
// (SubjectAccessReview) is replaced here by an authorizer that admits the named test callers; the
// real one is exercised in test/e2e/tunnel-trust.test.ts.
import { connect as netConnect } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type { ClientLimits } from '../../src/proxy-server/client-limits.ts';
import { ConnectFrontend } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, type HubPki, hubPki, roundTrip, startAgent, startServer } from './tunnel-fixtures.ts';

let pki: HubPki;
let server: ProxyServer;
let echo: { port: number; close: () => Promise<void> };
const cleanups: Array<() => Promise<void> | void> = [];
let greedy: KeyPairPem;
let polite: KeyPairPem;

beforeAll(async () => {
  pki = await hubPki();
  echo = await echoServer();
  server = await startServer(pki);
  const agent = await startAgent(pki, {
    cluster: 'cluster1',
    servers: [`127.0.0.1:${server.port}`],
    targetPort: echo.port,
  });
  await server.waitForAgents('cluster1');
  greedy = await pki.proxyClientCert('greedy-svc');
  polite = await pki.proxyClientCert('polite-svc');
  return async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await agent.stop();
    await server.stop(100);
    await echo.close();
  };
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function frontend(limits: Partial<ClientLimits> = {}, clientCaPem = pki.proxyClientCa.certPem) {
  const f = new ConnectFrontend({
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem },
    dial: (cluster, target) => server.dial(cluster, target),
    // Stands in for the hub's SubjectAccessReview: it would say yes to anyone here.
    authorize: async () => true,
    limits,
  });
  await f.start();
  cleanups.push(() => f.stop());
  return f;
}

function connect(
  port: number,
  cert: KeyPairPem | undefined,
  opts: { authority?: string; localAddress?: string } = {},
): Promise<{ status: number; head: string; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      socket: netConnect({ host: '127.0.0.1', port, localAddress: opts.localAddress }),
      servername: 'localhost',
      ca: pki.ca.certPem,
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    });
    let buf = '';
    socket.on('error', () => {});
    socket.once('secureConnect', () =>
      socket.write(`CONNECT ${opts.authority ?? 'cluster1:443'} HTTP/1.1\r\n\r\n`),
    );
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
    setTimeout(() => reject(new Error('no answer from the frontend')), 10_000).unref();
  });
}

describe('CONNECT frontend callers', () => {
  it("cluster1's agent certificate cannot CONNECT to cluster2 (or anywhere) on the frontend", async () => {
    await startAgent(pki, {
      cluster: 'cluster2',
      servers: [`127.0.0.1:${server.port}`],
      targetPort: echo.port,
    }).then((a) => cleanups.push(() => a.stop()));
    await server.waitForAgents('cluster2');
    const agentCert = await pki.agentCert('cluster1', 'agent-1');
    // The frontend trusts the proxy-client CA only: an agent certificate is no credential at all.
    const f = await frontend();
    for (const authority of ['cluster2:443', 'cluster1:443']) {
      const r = await connect(f.port, agentCert, { authority });
      r.socket.destroy();
      expect({ authority, status: r.status }).toEqual({ authority, status: 407 });
    }
    // Even a frontend told to trust the agent CA (a misconfiguration) refuses agent identities.
    const misconfigured = await frontend({}, pki.ca.certPem);
    const r = await connect(misconfigured.port, agentCert, { authority: 'cluster2:443' });
    r.socket.destroy();
    expect(r.status).toBe(403);
    expect(r.head).toContain('managed-cluster identity');
    // A hub service still gets through.
    const ok = await connect(f.port, polite, { authority: 'cluster2:443' });
    expect(ok.status).toBe(200);
    ok.socket.destroy();
  });
});

describe('per-client limits on the CONNECT frontend', () => {
  it('one caller holding its tunnel limit gets 429 while another caller still connects', async () => {
    const f = await frontend({ maxTunnelsPerCaller: 5 });
    const held = await Promise.all(Array.from({ length: 5 }, () => connect(f.port, greedy)));
    expect(held.map((h) => h.status)).toEqual([200, 200, 200, 200, 200]);
    const over = await connect(f.port, greedy);
    over.socket.destroy();
    expect(over.status).toBe(429);
    expect(over.head).toContain('greedy-svc already holds 5 tunnels');
    const other = await connect(f.port, polite);
    expect(other.status).toBe(200);
    expect((await roundTrip(other.socket, Buffer.from('still served'))).bytes).toBe(12);
    // Closing a tunnel gives the slot back.
    held[0]?.socket.destroy();
    const again = await pollUntil(
      async () => {
        const r = await connect(f.port, greedy);
        if (r.status !== 200) r.socket.destroy();
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 5000, intervalMs: 50, description: 'a freed tunnel slot' },
    );
    again.socket.destroy();
    for (const h of held) h.socket.destroy();
  });

  it('one caller opening tunnels faster than its rate gets 429 while another caller still connects', async () => {
    const f = await frontend({ tunnelRatePerCaller: 1, tunnelBurstPerCaller: 3 });
    const burst = [];
    for (let i = 0; i < 3; i++) burst.push(await connect(f.port, greedy));
    const over = await connect(f.port, greedy);
    expect([...burst, over].map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(over.head).toContain('faster than 1/s');
    const other = await connect(f.port, polite);
    expect(other.status).toBe(200);
    for (const r of [...burst, over, other]) r.socket.destroy();
  });

  it('one caller with its pending-dial limit in flight gets 429 for more', async () => {
    // Dials to a cluster that has no agent fail at once; a slow authorizer is not a pending dial.
    // Hold dials pending by pointing them at an agent whose target never answers the dial in time.
    const f = new ConnectFrontend({
      host: '127.0.0.1',
      port: 0,
      tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.proxyClientCa.certPem },
      dial: () => new Promise(() => {}),
      authorize: async () => true,
      limits: { maxPendingDialsPerCaller: 2 },
    });
    await f.start();
    const pending = [connect(f.port, greedy), connect(f.port, greedy)];
    await pollUntil(() => f.limiter.pendingDials('greedy-svc') === 2, {
      timeoutMs: 5000,
      intervalMs: 20,
      description: 'two dials pending',
    });
    const over = await connect(f.port, greedy);
    expect(over.status).toBe(429);
    expect(over.head).toContain('dials waiting for an agent');
    over.socket.destroy();
    // Another caller's dial is still taken (and waits like any other).
    pending.push(connect(f.port, polite));
    await pollUntil(() => f.limiter.pendingDials('polite-svc') === 1, {
      timeoutMs: 5000,
      intervalMs: 20,
      description: "the other caller's dial pending",
    });
    await f.stop(); // ends the dials that never answer
    expect((await Promise.all(pending)).map((p) => p.status)).toEqual([0, 0, 0]);
  });

  it('one remote address cannot hold more than its connection limit; another address still connects', async () => {
    const f = await frontend({ maxConnectionsPerAddress: 3 });
    const fromA = await Promise.all(
      Array.from({ length: 3 }, () => connect(f.port, greedy, { localAddress: '127.0.0.2' })),
    );
    expect(fromA.map((r) => r.status)).toEqual([200, 200, 200]);
    const over = await connect(f.port, polite, { localAddress: '127.0.0.2' });
    expect(over.status).toBe(0); // dropped before TLS: nothing to answer with
    const fromB = await connect(f.port, polite, { localAddress: '127.0.0.3' });
    expect(fromB.status).toBe(200);
    for (const r of [...fromA, over, fromB]) r.socket.destroy();
  });
});
