// The tunnel end to end on loopback: proxy-server and proxy-agents in this process, real TLS,
// real HTTP/2 streams, real TCP targets.
import { randomBytes } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isTetherError } from '../../src/errors.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import type { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import { parseExport, targetPolicy } from '../../src/proxy-agent/targets.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  echoServer,
  type HubPki,
  hubPki,
  roundTrip,
  sha256,
  startAgent,
  startServer,
} from './tunnel-fixtures.ts';

let pki: HubPki;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(async () => {
  pki = await hubPki();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  opts: { agents?: number; cluster?: string } = {},
): Promise<{ server: ProxyServer; agents: ProxyAgent[]; echoPort: number }> {
  const echo = await echoServer();
  cleanups.push(echo.close);
  const server = await startServer(pki);
  cleanups.push(() => server.stop(100));
  const agents: ProxyAgent[] = [];
  for (let i = 0; i < (opts.agents ?? 1); i++) {
    const agent = await startAgent(pki, {
      cluster: opts.cluster ?? 'cluster1',
      agent: `agent-${i}`,
      servers: [`127.0.0.1:${server.port}`],
      targetPort: echo.port,
    });
    cleanups.push(() => agent.stop());
    agents.push(agent);
  }
  await server.waitForAgents(opts.cluster ?? 'cluster1', agents.length);
  return { server, agents, echoPort: echo.port };
}

async function expectCode(p: Promise<unknown>, code: string): Promise<Error> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err, `expected ${code}`).toBeDefined();
  expect(isTetherError(err) ? err.code : String(err)).toBe(code);
  return err as Error;
}

describe('tunnel', () => {
  it('carries a stream to the cluster kube-apiserver target and back intact', async () => {
    const { server } = await setup();
    const stream = await server.dial('cluster1', 'kube-apiserver:443');
    const payload = randomBytes(4 * 1024 * 1024);
    const back = await roundTrip(stream, payload);
    expect(back.bytes).toBe(payload.length);
    expect(back.sha).toBe(sha256(payload));
  });

  it('fails at once for a cluster with no agent', async () => {
    const { server } = await setup();
    const started = Date.now();
    await expectCode(server.dial('nope', 'kube-apiserver:443'), 'TETHER_NO_AGENT');
    expect(Date.now() - started).toBeLessThan(100);
  });

  it('refuses a target the agent does not export, on that stream only', async () => {
    const { server } = await setup();
    const err = await expectCode(server.dial('cluster1', 'internal-db:5432'), 'TETHER_TARGET_NOT_ALLOWED');
    expect(err.message).toContain('not exported');
    const ok = await server.dial('cluster1', 'kube-apiserver:443');
    expect((await roundTrip(ok, Buffer.from('still fine'))).bytes).toBe(10);
  });

  it('reaches an exported service by name and reports a refused port as a dial failure', async () => {
    const echo = await echoServer();
    cleanups.push(echo.close);
    const server = await startServer(pki);
    cleanups.push(() => server.stop(100));
    const closed = await echoServer();
    const closedPort = closed.port;
    await closed.close();
    const agent = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${server.port}`],
      targetPort: echo.port,
      resolveTarget: targetPolicy({ host: '127.0.0.1', port: closedPort }, [
        parseExport(`metrics=127.0.0.1:${echo.port}`),
      ]),
    });
    cleanups.push(() => agent.stop());
    await server.waitForAgents('cluster1');
    const s = await server.dial('cluster1', `metrics:${echo.port}`);
    expect((await roundTrip(s, Buffer.from('hello'))).bytes).toBe(5);
    await expectCode(server.dial('cluster1', 'kube-apiserver:443'), 'TETHER_DIAL_FAILED');
  });

  it('binds the cluster to the certificate: an agent claiming cluster2 with a cluster1 certificate serves cluster1 only', async () => {
    const echo = await echoServer();
    cleanups.push(echo.close);
    const server = await startServer(pki);
    cleanups.push(() => server.stop(100));
    const cert = await pki.agentCert('cluster1', 'spoofer');
    const agent = await startAgent(pki, {
      cluster: 'cluster2',
      agent: 'spoofer',
      cert,
      servers: [`127.0.0.1:${server.port}`],
      targetPort: echo.port,
    });
    cleanups.push(() => agent.stop());
    await server.waitForAgents('cluster1');
    expect(server.registry.clusters()).toEqual(['cluster1']);
    await expectCode(server.dial('cluster2', 'kube-apiserver:443'), 'TETHER_NO_AGENT');
  });

  it('rejects agents whose certificate is from another CA, has mismatched CN/O, or is missing', async () => {
    const echo = await echoServer();
    cleanups.push(echo.close);
    const server = await startServer(pki);
    cleanups.push(() => server.stop(100));
    const otherCa = await createCertificateAuthority('intruder-ca');
    const foreign = await issueCertificate(otherCa, {
      commonName: 'system:open-cluster-management:cluster1:x',
      organizations: ['system:open-cluster-management:cluster1'],
      usage: 'client',
    });
    const mismatched = await issueCertificate(pki.ca, {
      commonName: 'system:open-cluster-management:cluster2:x',
      organizations: ['system:open-cluster-management:cluster1'],
      usage: 'client',
    });
    const agents = [
      await startAgent(pki, {
        cluster: 'cluster1',
        cert: foreign,
        servers: [`127.0.0.1:${server.port}`],
        targetPort: echo.port,
      }),
      await startAgent(pki, {
        cluster: 'cluster2',
        cert: mismatched,
        servers: [`127.0.0.1:${server.port}`],
        targetPort: echo.port,
      }),
    ];
    for (const a of agents) cleanups.push(() => a.stop());
    // A client without any certificate completes no tunnel either.
    const bare = tlsConnect({
      host: '127.0.0.1',
      port: server.port,
      ca: pki.ca.certPem,
      ALPNProtocols: ['h2'],
    });
    bare.on('error', () => {});
    const bareClosed = new Promise<void>((r) => bare.once('close', () => r()));
    await pollUntil(
      async () => {
        const metrics = await server.metrics.registry.getSingleMetricAsString('tether_proxy_errors_total');
        const m = /code="TETHER_UNAUTHORIZED"} (\d+)/.exec(metrics);
        return m && Number(m[1]) >= 3;
      },
      { timeoutMs: 10_000, description: 'three rejected connections' },
    );
    await bareClosed;
    expect(server.registry.clusters()).toEqual([]);
    expect(agents.every((a) => !a.readiness().ok)).toBe(true);
  });
});

describe('tunnel streams handed to hub code', () => {
  it('come back paused: bytes that arrive before the caller reads are kept, not dropped', async () => {
    const { server, agents } = await setup();
    const stream = await server.dial('cluster1', 'kube-apiserver:443');
    stream.write('hello');
    // Wait until the echo target has answered and the agent has sent the bytes back to the hub.
    await pollUntil(
      async () => {
        const m = await agents[0]?.registry.getSingleMetricAsString('tether_agent_bytes_total');
        return Number(/direction="from_target"} (\d+)/.exec(m ?? '')?.[1] ?? 0) >= 5;
      },
      { timeoutMs: 5000, description: 'the echo to travel back to the hub' },
    );
    expect(stream.readableFlowing).not.toBe(true);
    const got = await new Promise<string>((resolve) =>
      stream.once('data', (d: Buffer) => resolve(d.toString())),
    );
    expect(got).toBe('hello');
    stream.destroy();
    const bytes = await server.metrics.registry.getSingleMetricAsString('tether_proxy_bytes_total');
    expect(Number(/cluster="cluster1",direction="to_cluster"} (\d+)/.exec(bytes)?.[1] ?? 0)).toBeGreaterThan(
      5,
    );
  });
});
