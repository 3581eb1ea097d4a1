// The CONNECT frontend's per-connection shortcuts keep every caller exactly who it was: a hub
// service that resumes its TLS session (offering the ticket it was given) is still the caller its
// certificate names, a resumed session of an untrusted certificate still gets 407, two
// certificates stay two callers however often they come back (callers are looked up by
// fingerprint), and AES-128-GCM is what a client gets where the CPU has AES instructions.
import { connect as netConnect } from 'node:net';
import { DEFAULT_CIPHERS, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import {
  type Caller,
  ConnectFrontend,
  cpuHasAes,
  frontendCiphers,
} from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { echoServer, type HubPki, hubPki, roundTrip, startAgent, startServer } from './tunnel-fixtures.ts';

let pki: HubPki;
let server: ProxyServer;
let frontend: ConnectFrontend;
const seen: Caller[] = [];
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  pki = await hubPki();
  const echo = await echoServer();
  cleanups.push(() => echo.close());
  server = await startServer(pki);
  cleanups.push(() => server.stop(100));
  const agent = await startAgent(pki, {
    cluster: 'cluster1',
    servers: [`127.0.0.1:${server.port}`],
    targetPort: echo.port,
  });
  cleanups.push(() => agent.stop());
  await server.waitForAgents('cluster1');
  frontend = new ConnectFrontend({
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.proxyClientCa.certPem },
    dial: (cluster, target) => server.dial(cluster, target),
    // Stands in for the hub's SubjectAccessReview and records who asked.
    authorize: async (caller) => {
      seen.push(caller);
      return true;
    },
  });
  await frontend.start();
  cleanups.push(() => frontend.stop());
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Answer {
  status: number;
  socket: TLSSocket;
  /** the TLS session the frontend handed out on this connection (arrives after the handshake) */
  session: Promise<Buffer>;
}

function connect(cert: KeyPairPem, session?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      socket: netConnect({ host: '127.0.0.1', port: frontend.port }),
      servername: 'localhost',
      ca: pki.ca.certPem,
      cert: cert.certPem,
      key: cert.keyPem,
      ...(session ? { session } : {}),
    });
    const ticket = new Promise<Buffer>((r) => socket.once('session', r));
    let buf = '';
    socket.on('error', () => {});
    socket.once('secureConnect', () => socket.write('CONNECT cluster1:443 HTTP/1.1\r\n\r\n'));
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n\r\n')) {
        socket.off('data', onData);
        resolve({ status: Number(buf.slice(9, 12)), socket, session: ticket });
      }
    };
    socket.on('data', onData);
    socket.once('close', () => resolve({ status: Number(buf.slice(9, 12)) || 0, socket, session: ticket }));
    setTimeout(() => reject(new Error('no answer from the frontend')), 10_000).unref();
  });
}

describe('CONNECT frontend per-connection shortcuts', () => {
  it('a hub service that resumes its TLS session is still the caller its certificate names', async () => {
    const alice = await pki.proxyClientCert('alice-svc', ['team-a']);
    const first = await connect(alice);
    expect(first.status).toBe(200);
    expect(first.socket.isSessionReused()).toBe(false);
    const session = await first.session;
    first.socket.destroy();

    seen.length = 0;
    const resumed = await connect(alice, session);
    expect(resumed.status).toBe(200);
    expect(resumed.socket.isSessionReused()).toBe(true);
    expect(seen).toEqual([{ user: 'alice-svc', groups: ['team-a'] }]);
    expect((await roundTrip(resumed.socket, Buffer.from('resumed and served'))).bytes).toBe(18);
  });

  it('two certificates stay two callers however often they come back', async () => {
    const alice = await pki.proxyClientCert('alice-svc', ['team-a']);
    const bob = await pki.proxyClientCert('bob-svc', ['team-b', 'ops']);
    seen.length = 0;
    for (const cert of [alice, bob, alice, bob]) {
      const r = await connect(cert);
      expect(r.status).toBe(200);
      r.socket.destroy();
    }
    expect(seen.map((c) => `${c.user}:${c.groups.join(',')}`)).toEqual([
      'alice-svc:team-a',
      'bob-svc:team-b,ops',
      'alice-svc:team-a',
      'bob-svc:team-b,ops',
    ]);
  });

  it('a resumed session of a certificate the frontend does not trust still gets 407', async () => {
    // Signed by the agent CA, not the proxy-client CA: the handshake completes (verification is
    // judged per request), and so a session is handed out; resuming it must not make it trusted.
    const stranger = await pki.agentCert('cluster1', 'agent-1');
    const first = await connect(stranger);
    expect(first.status).toBe(407);
    const session = await first.session;
    first.socket.destroy();
    const resumed = await connect(stranger, session);
    expect(resumed.socket.isSessionReused()).toBe(true);
    expect(resumed.status).toBe(407);
    resumed.socket.destroy();
  });

  it('prefers AES-128-GCM where the CPU has AES instructions, with the same set of suites', async () => {
    expect(frontendCiphers(true).split(':')[0]).toBe('TLS_AES_128_GCM_SHA256');
    expect(frontendCiphers(true).split(':').sort()).toEqual(DEFAULT_CIPHERS.split(':').sort());
    expect(frontendCiphers(false)).toBe(DEFAULT_CIPHERS);
    const r = await connect(await pki.proxyClientCert('cipher-svc'));
    expect(r.status).toBe(200);
    // The client offers Node's default order (AES-256 first); the server's order decides.
    expect(r.socket.getCipher().standardName).toBe(
      cpuHasAes() ? 'TLS_AES_128_GCM_SHA256' : 'TLS_AES_256_GCM_SHA384',
    );
    r.socket.destroy();
  });
});
