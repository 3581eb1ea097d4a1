// Certificate rotation on the proxy-agent drains instead of cutting: the agent opens tunnels with
// the new certificate first, then the old tunnel takes no new streams (GOAWAY) and closes once its
// streams end, or at the drain deadline. A real proxy-server and agent on loopback (TLS, HTTP/2).
import { X509Certificate } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoOnce } from './ha-fixtures.ts';
import { echoServer, type HubPki, hubPki, startAgent, startServer } from './tunnel-fixtures.ts';

let pki: HubPki;
const cleanups: Array<() => Promise<unknown> | unknown> = [];

beforeAll(async () => {
  pki = await hubPki();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(drainTimeoutMs?: number): Promise<{ server: ProxyServer; agent: ProxyAgent }> {
  const echo = await echoServer();
  cleanups.push(() => echo.close());
  const server = await startServer(pki);
  cleanups.push(() => server.stop());
  const agent = await startAgent(pki, {
    cluster: 'cluster1',
    agent: 'agent-a',
    servers: [`127.0.0.1:${server.port}`],
    targetPort: echo.port,
    rotation: { drainTimeoutMs },
  });
  cleanups.push(() => agent.stop());
  await server.waitForAgents('cluster1', 1, 10_000);
  return { server, agent };
}

/** The serial numbers of the agent certificates the proxy-server's live tunnels were made with. */
function liveSerials(server: ProxyServer): string[] {
  return server.registry
    .all()
    .filter((c) => c.cluster === 'cluster1' && !c.session.isClosed)
    .map((c) => (c.socket as unknown as TLSSocket).getPeerCertificate().serialNumber);
}

const serial = (cert: KeyPairPem): string => new X509Certificate(cert.certPem).serialNumber;

async function dial(server: ProxyServer): Promise<Duplex> {
  const s = await server.dial('cluster1', 'kube-apiserver:443');
  s.on('error', () => {});
  cleanups.push(() => s.destroy());
  return s;
}

describe('proxy-agent certificate rotation', () => {
  it('keeps a long-lived stream through a rotation; new streams use the tunnel with the new certificate', async () => {
    const { server, agent } = await setup();
    const long = await dial(server);
    expect(await echoOnce(long, 'before rotation')).toBe('before rotation');

    const rotated = await pki.agentCert('cluster1', 'agent-a');
    await agent.rotate({ certPem: rotated.certPem, keyPem: rotated.keyPem, hubCaPem: pki.ca.certPem });
    // The new tunnel is up before the old one is told to go away; the hub then routes only to it.
    await pollUntil(() => liveSerials(server).join() === serial(rotated), {
      timeoutMs: 5000,
      intervalMs: 50,
      description: 'the hub to hold only the tunnel with the rotated certificate',
    });
    expect(agent.connectedServerIds()).toEqual(['server-a']);
    expect(agent.drainingCount()).toBe(1);

    expect(await echoOnce(long, 'after rotation')).toBe('after rotation');
    const fresh = await dial(server);
    expect(await echoOnce(fresh, 'new stream')).toBe('new stream');
    const newConn = server.registry.all().find((c) => c.cluster === 'cluster1' && !c.session.isClosed);
    expect(newConn?.session.openStreams).toBe(1);

    // The old tunnel closes once its last stream ends, not before.
    expect(await echoOnce(long, 'still draining')).toBe('still draining');
    long.end();
    await pollUntil(() => agent.drainingCount() === 0, {
      timeoutMs: 5000,
      intervalMs: 50,
      description: 'the drained tunnel to close after its last stream',
    });
    expect(await echoOnce(fresh, 'unaffected')).toBe('unaffected');
  });

  it('closes a draining tunnel at the drain deadline even if a stream stays open', async () => {
    const { server, agent } = await setup(500);
    const long = await dial(server);
    expect(await echoOnce(long, 'held open')).toBe('held open');
    const closed = new Promise<void>((r) => long.once('close', () => r()));
    const rotated = await pki.agentCert('cluster1', 'agent-a');
    await agent.rotate({ certPem: rotated.certPem, keyPem: rotated.keyPem, hubCaPem: pki.ca.certPem });
    const drainStarted = Date.now();
    await closed;
    const heldMs = Date.now() - drainStarted;
    expect(heldMs).toBeGreaterThanOrEqual(400);
    expect(heldMs).toBeLessThan(3000);
    await pollUntil(() => agent.drainingCount() === 0, {
      timeoutMs: 3000,
      description: 'no draining tunnel',
    });
    const fresh = await dial(server);
    expect(await echoOnce(fresh, 'new tunnel')).toBe('new tunnel');
  });
});
