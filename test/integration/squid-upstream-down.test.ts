// When squid itself is fine but cannot reach the proxy-server behind it (stopped, crashed, wrong
// port), squid answers CONNECT with 503. The agent must say that, quoting squid, instead of sending
// the operator to squid's access rules (issue 11 item 8). A 403 from squid's rules still says so.
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTetherError } from '../../src/errors.ts';
import { freePort } from '../../src/localenv/process.ts';
import { type Squid, startSquid } from '../../src/localenv/squid.ts';
import type { ProxyAgent } from '../../src/proxy-agent/agent.ts';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import { dialThroughProxy } from '../../src/tunnel/forward-proxy.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, type HubPki, hubPki, startAgent, startServer } from './tunnel-fixtures.ts';

async function dialError(dial: Promise<Socket>): Promise<Error> {
  const err = await dial.then(
    (s) => {
      s.destroy();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err, 'the dial should have failed').toBeInstanceOf(Error);
  return err as Error;
}

describe('squid in front of a proxy-server that is down', () => {
  let pki: HubPki;
  let squid: Squid;
  let deniedPort = 0;
  let echo: { port: number; close: () => Promise<void> };
  const servers: ProxyServer[] = [];
  const agents: ProxyAgent[] = [];

  beforeAll(async () => {
    pki = await hubPki();
    echo = await echoServer();
    deniedPort = await freePort();
    squid = await startSquid({ denyConnectPorts: [deniedPort] });
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await Promise.all(servers.map((s) => s.stop(0)));
    await squid?.stop();
    await echo?.close();
  });

  it('reports a stopped proxy-server as unreachable from the proxy, quoting squid, not as an access rule', async () => {
    const server = await startServer(pki);
    servers.push(server);
    const port = server.port;
    await server.stop(0);

    const err = await dialError(dialThroughProxy(new URL(squid.url), '127.0.0.1', port));
    expect(isTetherError(err, 'TETHER_PROXY_UPSTREAM_FAILED'), String(err)).toBe(true);
    expect(err.message).toContain(`could not reach 127.0.0.1:${port}`);
    expect(err.message).toMatch(/the proxy said 503 Service Unavailable, ERR_CONNECT_FAIL/);
    expect(err.message).not.toContain('access rules');

    // What the operator of the agent sees: its readiness detail carries the same explanation.
    const agent = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${port}`],
      targetPort: echo.port,
      proxyUrl: squid.url,
    });
    agents.push(agent);
    const detail = await pollUntil(
      () => {
        const r = agent.readiness();
        return !r.ok && r.detail.includes('could not reach') ? r.detail : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'the agent to report squid’s 503' },
    );
    expect(detail).toContain(`could not reach 127.0.0.1:${port}`);
    expect(detail).toMatch(/503 Service Unavailable/);
    expect(detail).toContain(`is the proxy-server at 127.0.0.1:${port} running`);
    expect(detail).not.toContain('access rules');
  });

  it('still points at the access rules when squid refuses the destination (403)', async () => {
    const err = await dialError(dialThroughProxy(new URL(squid.url), '127.0.0.1', deniedPort));
    expect(isTetherError(err, 'TETHER_PROXY_REFUSED'), String(err)).toBe(true);
    expect(err.message).toMatch(/the proxy said 403 Forbidden/);
    expect(err.message).toContain('access rules');
  });
});
