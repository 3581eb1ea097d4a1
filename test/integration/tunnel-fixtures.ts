// Shared fixtures for tunnel tests: a hub PKI, TCP echo/sink targets, and helpers to run a
// proxy-server and proxy-agents in this process on loopback ports.
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
} from '../../src/pki/index.ts';
import { ProxyAgent, type ProxyAgentOptions } from '../../src/proxy-agent/agent.ts';
import { targetPolicy } from '../../src/proxy-agent/targets.ts';
import { ConnectFrontend, type ConnectFrontendOptions } from '../../src/proxy-server/connect-frontend.ts';
import { ProxyServer, type ProxyServerOptions } from '../../src/proxy-server/server.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';

export interface HubPki {
  /** signs agent identities (the hub CA) and the proxy-server's serving certificate */
  ca: CertificateAuthority;
  server: KeyPairPem;
  agentCert(cluster: string, agent: string): Promise<KeyPairPem>;
  /** signs hub-service client certificates for the CONNECT frontend: never the agent CA */
  proxyClientCa: CertificateAuthority;
  proxyClientCert(commonName: string, organizations?: string[]): Promise<KeyPairPem>;
}

export async function hubPki(): Promise<HubPki> {
  const ca = await createCertificateAuthority('tether-test-hub-ca');
  const server = await issueCertificate(ca, {
    commonName: 'proxy-server',
    usage: 'server',
    dnsNames: ['localhost', 'proxy-server.tether.test'],
    ipAddresses: ['127.0.0.1'],
  });
  const proxyClientCa = await createCertificateAuthority('tether-test-proxy-client-ca');
  return {
    ca,
    server,
    agentCert: (cluster, agent) => issueCertificate(ca, { ...agentSubject(cluster, agent), usage: 'client' }),
    proxyClientCa,
    proxyClientCert: (commonName, organizations) =>
      issueCertificate(proxyClientCa, { commonName, organizations, usage: 'client' }),
  };
}

/** A TCP server that echoes every byte back. */
export async function echoServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('close', () => sockets.delete(s));
    s.pipe(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

export async function startServer(
  pki: HubPki,
  overrides: Partial<ProxyServerOptions> = {},
): Promise<ProxyServer> {
  const server = new ProxyServer({
    serverId: 'server-a',
    serverCount: 1,
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.ca.certPem },
    ...overrides,
  });
  await server.start();
  return server;
}

export async function startAgent(
  pki: HubPki,
  opts: {
    cluster: string;
    agent?: string;
    servers: string[];
    targetPort: number;
    cert?: KeyPairPem;
  } & Partial<ProxyAgentOptions>,
): Promise<ProxyAgent> {
  const agentId = opts.agent ?? 'agent-1';
  const cert = opts.cert ?? (await pki.agentCert(opts.cluster, agentId));
  const agent = new ProxyAgent({
    agentId,
    resolveTarget: targetPolicy({ host: '127.0.0.1', port: opts.targetPort }, []),
    backoff: { initialMs: 50, maxMs: 500 },
    ...opts,
    tls: { certPem: cert.certPem, keyPem: cert.keyPem, hubCaPem: pki.ca.certPem, ...opts.tls },
  });
  agent.start();
  return agent;
}

/** Writes `bytes` into `stream` and resolves with the sha256 of everything read back. */
export function roundTrip(stream: Duplex, payload: Buffer): Promise<{ sha: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let bytes = 0;
    stream.on('data', (c: Buffer) => {
      hash.update(c);
      bytes += c.length;
      if (bytes >= payload.length) {
        stream.end();
        resolve({ sha: hash.digest('hex'), bytes });
      }
    });
    stream.once('error', reject);
    const early = (): void => {
      if (bytes < payload.length) reject(new Error(`stream ended after ${bytes} of ${payload.length} bytes`));
    };
    stream.once('end', early);
    stream.once('close', early);
    stream.write(payload);
  });
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

export interface EchoTunnel {
  pki: HubPki;
  server: ProxyServer;
  /** the TCP echo target cluster1's agent dials */
  echo: { port: number; close: () => Promise<void> };
  /** stops agent, proxy-server and echo target */
  stop: () => Promise<void>;
}

/** A hub PKI, a proxy-server and cluster1's connected agent in front of a TCP echo target. */
export async function echoTunnel(cluster = 'cluster1'): Promise<EchoTunnel> {
  const pki = await hubPki();
  const echo = await echoServer();
  const server = await startServer(pki);
  const agent = await startAgent(pki, {
    cluster,
    servers: [`127.0.0.1:${server.port}`],
    targetPort: echo.port,
  });
  await server.waitForAgents(cluster);
  return {
    pki,
    server,
    echo,
    stop: async () => {
      await agent.stop();
      await server.stop(100);
      await echo.close();
    },
  };
}

/**
 * A CONNECT frontend (with its HTTP/2 and gRPC sides) on a free loopback port in front of `server`,
 * serving `pki`'s certificate, trusting the proxy-client CA, and authorizing cluster1 only (standing
 * in for the hub's SubjectAccessReview); stopped by the `cleanups` it registers with.
 */
export async function startFrontend(
  pki: HubPki,
  server: ProxyServer,
  cleanups: Array<() => Promise<void> | void>,
  overrides: Partial<ConnectFrontendOptions> = {},
): Promise<ConnectFrontend> {
  const f = new ConnectFrontend({
    host: '127.0.0.1',
    port: 0,
    tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, clientCaPem: pki.proxyClientCa.certPem },
    dial: (cluster, target) => server.dial(cluster, target),
    authorize: async (_caller, cluster) => cluster === 'cluster1',
    ...overrides,
  });
  await f.start();
  cleanups.push(() => f.stop());
  return f;
}

/**
 * An HTTP/1.1 CONNECT to cluster1's apiserver target on the frontend at `port` (ALPN http/1.1, the
 * given client certificate); resolves with the TLS socket once the frontend answered 200.
 */
export async function http1Connect(
  port: number,
  pki: HubPki,
  cert: KeyPairPem,
  cleanups: Array<() => Promise<void> | void>,
): Promise<TLSSocket> {
  const s = tlsConnect({
    port,
    host: '127.0.0.1',
    servername: 'localhost',
    ca: pki.ca.certPem,
    cert: cert.certPem,
    key: cert.keyPem,
    ALPNProtocols: ['http/1.1'],
  });
  s.on('error', () => {});
  cleanups.push(() => {
    s.destroy();
  });
  await new Promise((r) => s.once('secureConnect', r));
  if (s.alpnProtocol !== 'http/1.1') throw new Error(`ALPN chose ${s.alpnProtocol}, not http/1.1`);
  s.write('CONNECT cluster1:443 HTTP/1.1\r\n\r\n');
  const head = await new Promise<string>((r) => s.once('data', (d: Buffer) => r(d.toString('latin1'))));
  if (!head.startsWith('HTTP/1.1 200')) throw new Error(`CONNECT answered ${head.split('\r\n')[0]}`);
  return s;
}
