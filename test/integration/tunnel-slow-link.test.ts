// The hub's session over a slow link to the agent. Its writes to the agent drain at the link's
// rate, so one batch of DATA (up to the agent's 64 MiB connection window) can take seconds to go
// out. node:http2 reads nothing while its own write is in progress: if the hub stopped reading for
// that long, the agent's PING answers and echoed bytes would sit unread, the agent would look
// silent, and the unresponsive check would reset the streams of a live, busy agent.
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy-server/server.ts';
import {
  echoServer,
  type HubPki,
  hubPki,
  roundTrip,
  sha256,
  startAgent,
  startServer,
} from './tunnel-fixtures.ts';

/** hub → agent bytes per second through the relay: 32 MiB of queued DATA take ≈ 8 s to drain */
const LINK_BYTES_PER_SECOND = 4 * 1024 * 1024;

let pki: HubPki;
let echoPort: number;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(async () => {
  pki = await hubPki();
  const echo = await echoServer();
  echoPort = echo.port;
  return () => echo.close();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A TCP relay in front of `port` whose hub → agent direction carries LINK_BYTES_PER_SECOND (the
 * agent → hub direction is not limited): a slow link, as between a hub and a remote cluster.
 */
async function slowLink(port: number): Promise<number> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const relay: Server = createServer((fromAgent) => {
    const toHub = netConnect(port, '127.0.0.1');
    for (const s of [fromAgent, toHub]) {
      sockets.add(s);
      s.on('error', () => {});
      s.once('close', () => {
        fromAgent.destroy();
        toHub.destroy();
      });
    }
    fromAgent.pipe(toHub);
    toHub.on('data', (chunk: Buffer) => {
      fromAgent.write(chunk);
      toHub.pause();
      const t = setTimeout(
        () => {
          timers.delete(t);
          toHub.resume();
        },
        (chunk.length / LINK_BYTES_PER_SECOND) * 1000,
      );
      timers.add(t);
    });
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        relay.close(() => r());
      }),
  );
  return (relay.address() as AddressInfo).port;
}

describe('tunnel over a slow link', () => {
  it('keeps reading the agent while its own large write drains slowly, so a busy agent is not taken for unresponsive', async () => {
    // 16 streams echoing 2 MiB each: the hub queues 16 x 2 MiB (the stream windows) for the agent
    // at once, ≈ 8 s at the link's rate, while the agent's echoes and PING answers keep coming back.
    const limits = { unresponsiveAfterMs: 2000, pingIntervalMs: 1000, pingTimeoutMs: 30_000 };
    const s: ProxyServer = await startServer(pki, { limits });
    cleanups.push(() => s.stop(100));
    const linkPort = await slowLink(s.port);
    const a = await startAgent(pki, {
      cluster: 'cluster1',
      servers: [`127.0.0.1:${linkPort}`],
      targetPort: echoPort,
      limits,
    });
    cleanups.push(() => a.stop());
    await s.waitForAgents('cluster1');
    const unresponsive: number[] = [];
    const conn = s.registry.pick('cluster1');
    expect(conn).toBeDefined();
    const payload = randomBytes(2 * 1024 * 1024);
    const streams = await Promise.all(
      Array.from({ length: 16 }, () => s.dial('cluster1', 'kube-apiserver:443')),
    );
    const watch = setInterval(() => {
      if (conn?.session.isUnresponsive) unresponsive.push(conn.session.silentForMs());
    }, 100);
    cleanups.push(() => clearInterval(watch));
    const results = await Promise.all(streams.map((st) => roundTrip(st, payload)));
    for (const r of results) expect(r.sha).toBe(sha256(payload));
    expect(unresponsive).toEqual([]);
  });
});
