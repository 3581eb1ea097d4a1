// HA proxy-servers with real processes: two `tether proxy-server` replicas (server-a, server-b,
// --server-count=2) and one `tether proxy-agent`, (a) behind one round-robin load-balanced address
// and (b) behind one address per replica. The agent holds exactly one tunnel per replica and opens
// no new tunnel in steady state; a killed replica that comes back gets its tunnel again within the
// backoff bound while the other replica's tunnel (and a stream through it) is untouched; both
// replicas' CONNECT frontends reach the cluster.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import {
  acceptedTunnels,
  connectFrontend,
  echoOnce,
  type HaFiles,
  type Replica,
  restartReplica,
  roundRobinBalancer,
  scrape,
  startAgentProcess,
  startReplica,
} from './ha-fixtures.ts';
import { echoServer, hubPki } from './tunnel-fixtures.ts';

/** How long the agent is watched in steady state; the old agent churned every ~2.5 s per replica. */
const STEADY_MS = 15_000;

let files: HaFiles;
let echo: { port: number; close: () => Promise<void> };
const cleanups: Array<() => Promise<unknown> | unknown> = [];

beforeAll(async () => {
  const pki = await hubPki();
  const dir = mkdtempSync(join(tmpdir(), 'tether-ha-'));
  const write = (name: string, content: string): string => {
    const p = join(dir, name);
    writeFileSync(p, content);
    return p;
  };
  const agent = await pki.agentCert('cluster1', 'agent-a');
  const client = await pki.proxyClientCert('hub-service');
  files = {
    dir,
    ca: write('ca.crt', pki.ca.certPem),
    serverCert: write('server.crt', pki.server.certPem),
    serverKey: write('server.key', pki.server.keyPem),
    agentCert: write('agent.crt', agent.certPem),
    agentKey: write('agent.key', agent.keyPem),
    clientCa: write('proxy-client-ca.crt', pki.proxyClientCa.certPem),
    clientCert: write('client.crt', client.certPem),
    clientKey: write('client.key', client.keyPem),
  };
  echo = await echoServer();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await echo?.close();
  if (files) rmSync(files.dir, { recursive: true, force: true });
});

async function replicas(): Promise<[Replica, Replica]> {
  const started = await Promise.all([startReplica(files, 'server-a', 2), startReplica(files, 'server-b', 2)]);
  for (const r of started) cleanups.push(() => r.proc.stop(2000));
  return started;
}

async function agent(servers: string[]): Promise<number> {
  const a = await startAgentProcess(files, servers, echo.port);
  cleanups.push(() => a.proc.stop(2000));
  return a.opsPort;
}

const agentsOn = (r: Replica) => scrape(r.opsPort, 'tether_proxy_connected_agents{cluster="cluster1"}');

/** Polls until the agent holds exactly one tunnel to each replica. */
async function oneTunnelPerReplica(rs: Replica[], agentOps: number, timeoutMs: number): Promise<void> {
  await pollUntil(
    async () => {
      const held = await scrape(agentOps, 'tether_agent_connected_servers');
      const perReplica = await Promise.all(rs.map(agentsOn));
      return held === rs.length && perReplica.every((n) => n === 1);
    },
    { timeoutMs, intervalMs: 100, description: 'one tunnel per replica' },
  );
}

async function frontendEcho(r: Replica, text: string): Promise<TLSSocket> {
  const { status, socket } = await connectFrontend(files, r.connectPort);
  cleanups.push(() => socket.destroy());
  expect(status, `CONNECT through ${r.id}`).toBe(200);
  expect(await echoOnce(socket, text)).toBe(text);
  return socket;
}

/** Steady state: no new tunnel accepted by any replica while the agent is watched. */
async function expectNoChurn(rs: Replica[], label: string): Promise<void> {
  const agentLog = join(files.dir, 'proxy-agent.log');
  const agentLogBefore = readFileSync(agentLog, 'utf8').length;
  const started = Date.now();
  // A measurement window, not a wait for a condition: churn shows up as new accepted tunnels.
  await new Promise((r) => setTimeout(r, STEADY_MS));
  const churn = rs.flatMap((r) => acceptedTunnels(r, started).map((l) => `${r.id}: ${l}`));
  const perMinute = (churn.length * 60_000) / (Date.now() - started);
  console.info(
    `${label}: ${churn.length} new tunnels in ${STEADY_MS} ms steady state (${perMinute.toFixed(1)}/min)`,
  );
  const agentLines = readFileSync(agentLog, 'utf8').slice(agentLogBefore).trim();
  expect(
    churn.length,
    `new tunnels accepted in ${STEADY_MS} ms of steady state:\n${churn.join('\n')}\nagent log meanwhile:\n${agentLines}`,
  ).toBe(0);
  expect(await Promise.all(rs.map(agentsOn))).toEqual(rs.map(() => 1));
}

/**
 * SIGKILL replica `dead`, start it again with the same command line, and measure how long until
 * the agent holds its tunnel again. A stream through `kept` must live through all of it.
 */
async function killAndRestart(dead: Replica, kept: Replica, agentOps: number, boundMs: number) {
  const stream = await frontendEcho(kept, 'before');
  const killedAt = Date.now();
  process.kill(dead.proc.pid as number, 'SIGKILL');
  await dead.proc.exited;
  await pollUntil(async () => (await scrape(agentOps, 'tether_agent_connected_servers')) === 1, {
    timeoutMs: 10_000,
    intervalMs: 100,
    description: 'the agent to notice the killed replica',
  });
  await restartReplica(files, dead);
  const restarted = Date.now();
  await oneTunnelPerReplica([dead, kept], agentOps, boundMs + 10_000);
  const reconnectMs = Date.now() - restarted;
  console.info(`${dead.id} restarted: agent back on it after ${reconnectMs} ms`);
  expect(reconnectMs).toBeLessThan(boundMs);
  // The kept replica's tunnel is the same connection: the stream opened before still echoes.
  expect(await echoOnce(stream, 'after')).toBe('after');
  return { killedAt, reconnectMs };
}

describe('HA proxy-servers (real processes)', () => {
  it('behind one load-balanced address: one tunnel per replica, no churn, and a killed replica is rejoined', async () => {
    const [a, b] = await replicas();
    const lb = await roundRobinBalancer([a.agentPort, b.agentPort]);
    cleanups.push(() => lb.close());
    const agentOps = await agent([`127.0.0.1:${lb.port}`]);
    await oneTunnelPerReplica([a, b], agentOps, 20_000);
    await expectNoChurn([a, b], 'one address');
    // Looking for the missing replica backs off to 10 s (jittered 5–10 s), plus dial and scheduling.
    await killAndRestart(b, a, agentOps, 15_000);
    await frontendEcho(a, 'via a');
    await frontendEcho(b, 'via b');
    await expectNoChurn([a, b], 'one address, after the restart');
  }, 120_000);

  it('behind one address per replica: one tunnel each, no churn, and the other replica is never redialled', async () => {
    const [a, b] = await replicas();
    const agentOps = await agent([`127.0.0.1:${a.agentPort}`, `127.0.0.1:${b.agentPort}`]);
    await oneTunnelPerReplica([a, b], agentOps, 20_000);
    await expectNoChurn([a, b], 'two addresses');
    // An address with no tunnel reconnects with backoff capped at 5 s (jittered 2.5–5 s).
    const { killedAt } = await killAndRestart(b, a, agentOps, 8_000);
    expect(acceptedTunnels(a, killedAt), 'tunnels server-a accepted while server-b was down').toEqual([]);
    await frontendEcho(a, 'via a');
    await frontendEcho(b, 'via b');
  }, 120_000);
});
