// HTTP request smuggling against the CONNECT frontend: a hub service (a trusted proxy-client
// certificate) writes raw bytes whose framing is ambiguous, hiding a second CONNECT behind the
// first. The frontend must answer 400 and close (or keep the second request inside the first's
// body), never open the hidden tunnel: the managed cluster's target here records every connection
// and byte it sees, and must see only the honest client that comes right after. Hub RBAC is an
// authorizer that admits everyone (the real one: test/e2e/tunnel-trust.test.ts).
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import { ConnectFrontend } from '../../src/proxy-server/connect-frontend.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { type RawExchange, type SmugglingAttack, sendRaw, smugglingAttacks } from '../http-smuggling.ts';
import { type HubPki, hubPki, roundTrip, startAgent, startServer } from './tunnel-fixtures.ts';
import { TunnelProcesses } from './tunnel-process-fixtures.ts';

/** The managed cluster's kube-apiserver:443 stand-in: echoes, and keeps what each connection sent. */
interface RecordingTarget {
  port: number;
  received: string[];
  close(): Promise<void>;
}

async function recordingTarget(): Promise<RecordingTarget> {
  const sockets = new Set<Socket>();
  const received: string[] = [];
  const server: Server = createServer((s) => {
    sockets.add(s);
    const i = received.push('') - 1;
    s.on('error', () => {});
    s.once('close', () => sockets.delete(s));
    s.on('data', (d: Buffer) => {
      received[i] += d.toString('latin1');
      s.write(d);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    received,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

let pki: HubPki;
let server: ProxyServer;
let agent: ProxyAgent;
let target: RecordingTarget;
let frontend: ConnectFrontend;
let caller: KeyPairPem;
const TOKEN = 'hub-service-token';

beforeAll(async () => {
  pki = await hubPki();
  target = await recordingTarget();
  server = await startServer(pki);
  agent = await startAgent(pki, {
    cluster: 'cluster1',
    servers: [`127.0.0.1:${server.port}`],
    targetPort: target.port,
  });
  await server.waitForAgents('cluster1');
  caller = await pki.proxyClientCert('hub-svc');
  frontend = new ConnectFrontend({
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.proxyClientCa.certPem },
    dial: (cluster, t) => server.dial(cluster, t),
    authenticateToken: async (token) => (token === TOKEN ? { user: 'token-svc', groups: [] } : undefined),
    authorize: async () => true,
  });
  await frontend.start();
});

afterAll(async () => {
  await frontend?.stop();
  await agent?.stop();
  await server?.stop(100);
  await target?.close();
});

const tls = () => ({
  host: '127.0.0.1',
  port: frontend.port,
  ca: pki.ca.certPem,
  cert: caller.certPem,
  key: caller.keyPem,
});

/** A CONNECT that would open a tunnel for this very caller, and bytes that would travel in it. */
const smuggledConnect = (tag: string) =>
  `CONNECT cluster1:443 HTTP/1.1\r\nHost: cluster1:443\r\n\r\nSMUGGLED ${tag}`;

/**
 * After an attack: an honest CONNECT right after still gets its tunnel, and the target saw that
 * tunnel's bytes and nothing the attack hid.
 */
async function expectOnlyTheHonestClientReachedTheCluster(tag: string): Promise<void> {
  const before = target.received.length;
  const honest = await sendConnect();
  const payload = Buffer.from(`honest after ${tag}`);
  expect((await roundTrip(honest, payload)).bytes).toBe(payload.length);
  const seen = target.received.slice(before);
  expect(target.received.filter((r) => r.includes('SMUGGLED'))).toEqual([]);
  expect(seen).toEqual([payload.toString()]);
}

/** An honest CONNECT cluster1:443 by the same caller; resolves with the tunnel after its 200. */
function sendConnect(): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ servername: 'localhost', ...tls() });
    let buf = '';
    socket.once('error', reject);
    socket.once('secureConnect', () =>
      socket.write('CONNECT cluster1:443 HTTP/1.1\r\nHost: cluster1:443\r\n\r\n'),
    );
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      if (!buf.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (buf.startsWith('HTTP/1.1 200')) resolve(socket);
      else reject(new Error(`honest CONNECT answered ${buf.slice(0, 40)}`));
    };
    socket.on('data', onData);
  });
}

/** Sends one attack (a POST the frontend does not serve, hiding a CONNECT) and returns the statuses. */
async function attack(name: SmugglingAttack): Promise<RawExchange> {
  const head = 'POST / HTTP/1.1\r\nHost: proxy-server.tether.test\r\n';
  return sendRaw(tls(), smugglingAttacks[name](head, smuggledConnect(name)));
}

/**
 * The attack ended in a 400 and a closed connection, and nothing in it was served. (The frontend may
 * answer the POST itself, 405, before its malformed body comes in: that answer serves nothing.)
 */
function expectRefused(name: SmugglingAttack, { statuses, closedByServer }: RawExchange): void {
  expect({ name, last: statuses.at(-1), served: statuses.filter((s) => s < 300), closedByServer }).toEqual({
    name,
    last: 400,
    served: [],
    closedByServer: true,
  });
}

describe('request smuggling through the CONNECT frontend', () => {
  it('a hub service cannot smuggle a second request through the CONNECT frontend with conflicting Content-Length and Transfer-Encoding', async () => {
    expectRefused('contentLengthWithChunked', await attack('contentLengthWithChunked'));
    await expectOnlyTheHonestClientReachedTheCluster('cl-te');
  });

  it('a hub service cannot smuggle a second request through the CONNECT frontend with two different Content-Length headers', async () => {
    expectRefused('twoContentLengths', await attack('twoContentLengths'));
    await expectOnlyTheHonestClientReachedTheCluster('two-cl');
  });

  it('a hub service cannot smuggle a second request through the CONNECT frontend with Transfer-Encoding chunked, identity / xchunked / whitespace tricks', async () => {
    for (const name of [
      'chunkedThenIdentity',
      'xchunked',
      'spaceBeforeColon',
      'verticalTabInValue',
    ] as const) {
      expectRefused(name, await attack(name));
    }
    await expectOnlyTheHonestClientReachedTheCluster('te');
  });

  it('a hub service cannot smuggle a second request through the CONNECT frontend with obs-fold header lines', async () => {
    for (const name of ['foldedTransferEncoding', 'foldedHeader'] as const) {
      expectRefused(name, await attack(name));
    }
    await expectOnlyTheHonestClientReachedTheCluster('obs-fold');
  });

  it('a hub service cannot smuggle a second request through the CONNECT frontend with bare LF line endings', async () => {
    expectRefused('bareLineFeeds', await attack('bareLineFeeds'));
    await expectOnlyTheHonestClientReachedTheCluster('bare-lf');
  });

  it('a hub service cannot smuggle a second request through the CONNECT frontend with an overflowing chunk size or a chunk extension ended by a bare LF', async () => {
    for (const name of ['chunkSizeOverflow', 'chunkExtensionBareLineFeed'] as const) {
      expectRefused(name, await attack(name));
    }
    await expectOnlyTheHonestClientReachedTheCluster('chunk-size');
  });

  it('a hub service cannot open a tunnel with a CONNECT carried in the body of another request', async () => {
    // The POST is answered (405: only CONNECT is served) and its body, the CONNECT, is discarded.
    expect((await attack('requestInBody')).statuses).toEqual([405]);
    // A refused CONNECT's body is never read as a request either, whatever credential it carries.
    const tokenConnect = `CONNECT cluster1:443 HTTP/1.1\r\nHost: cluster1:443\r\nProxy-Authorization: Bearer ${TOKEN}\r\n\r\nSMUGGLED behind 407`;
    const anonymous = { host: '127.0.0.1', port: frontend.port, ca: pki.ca.certPem };
    const refused = await sendRaw(
      anonymous,
      `CONNECT cluster1:443 HTTP/1.1\r\nHost: cluster1:443\r\nContent-Length: ${tokenConnect.length}\r\n\r\n${tokenConnect}`,
    );
    expect([refused.statuses, refused.closedByServer]).toEqual([[407], true]);
    await expectOnlyTheHonestClientReachedTheCluster('in-body');
  });
});

describe('request smuggling through a proxy-server process', () => {
  it('a hub service cannot smuggle a second request through the CONNECT frontend even when the proxy-server runs with NODE_OPTIONS=--insecure-http-parser', async () => {
    // The process-wide flag makes every Node HTTP server lenient unless the server says otherwise.
    const procs = await TunnelProcesses.create();
    try {
      const { ports } = await procs.startServer([], { NODE_OPTIONS: '--insecure-http-parser' });
      await procs.startAgent({
        cluster: 'cluster1',
        agent: 'agent-1',
        server: `127.0.0.1:${ports.agent}`,
        targetPort: target.port,
      });
      await procs.agentHeld(ports.ops, 'cluster1');
      const tls = {
        host: '127.0.0.1',
        port: ports.connect,
        ca: procs.pki.ca.certPem,
        cert: readFileSync(procs.files.clientCert as string),
        key: readFileSync(procs.files.clientKey as string),
      };
      const head = 'POST / HTTP/1.1\r\nHost: proxy-server.tether.test\r\n';
      for (const name of ['contentLengthWithChunked', 'foldedHeader', 'bareLineFeeds'] as const) {
        expectRefused(
          name,
          await sendRaw(tls, smugglingAttacks[name](head, smuggledConnect(`process ${name}`))),
        );
      }
      const honest = await procs.connect(ports.connect, 'cluster1:443');
      expect(honest.status).toBe(200);
      expect((await roundTrip(honest.socket, Buffer.from('honest'))).bytes).toBe(6);
      expect(target.received.filter((r) => r.includes('SMUGGLED'))).toEqual([]);
    } finally {
      await procs.cleanup();
    }
  });
});
