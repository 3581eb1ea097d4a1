// The proxy-server's tunnel status on its CONNECT frontend (`GET /tunnels/<cluster>`), read as the
// gateway reads it (gateway/tunnel-source.ts, with a proxy-client certificate): a caller admitted to
// cluster1 sees its agent, replicas and bytes; a caller without a certificate is refused as CONNECT
// refuses one (407), one not admitted to the cluster gets 403, a cluster never seen 404; a watch
// streams a line per interval whose byte counters rise after traffic, and a failed dial shows as
// the last error. Hub RBAC is stood in for by startFrontend's authorizer (cluster1 only).
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectFrontendTunnelStatus,
  type TunnelStatus,
  TunnelStatusError,
} from '../../src/gateway/tunnel-source.ts';
import type { KeyPairPem } from '../../src/pki/index.ts';
import type { ConnectFrontend } from '../../src/proxy-server/connect-frontend.ts';
import { pollUntil } from '../../src/wait.ts';
import { type EchoTunnel, echoTunnel, roundTrip, startFrontend } from './tunnel-fixtures.ts';

let tunnel: EchoTunnel;
let frontend: ConnectFrontend;
let viewer: KeyPairPem;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  tunnel = await echoTunnel('cluster1');
  cleanups.push(() => tunnel.stop());
  frontend = await startFrontend(tunnel.pki, tunnel.server, cleanups, {
    tunnelStatus: (cluster) => tunnel.server.tunnelStatus(cluster),
    tunnelStatusLimits: { intervalMs: 100, maxWatchesPerCaller: 2 },
    authorize: async (caller, cluster) => cluster === 'cluster1' && caller.user === 'tunnel-viewer',
  });
  viewer = await tunnel.pki.proxyClientCert('tunnel-viewer');
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function source(cert: KeyPairPem | undefined) {
  return connectFrontendTunnelStatus({
    url: `https://127.0.0.1:${frontend.port}`,
    caPem: tunnel.pki.ca.certPem,
    ...(cert ? { certPem: cert.certPem, keyPem: cert.keyPem } : {}),
  });
}

async function refusal(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof TunnelStatusError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('GET /tunnels/<cluster> on the CONNECT frontend', () => {
  it("an admitted hub service gets cluster1's agent, replicas and byte counters", async () => {
    const status = await source(viewer).get('cluster1', AbortSignal.timeout(5_000));
    expect(status).toMatchObject({
      cluster: 'cluster1',
      serverId: 'server-a',
      serverCount: 1,
      openStreams: 0,
      streamsOpened: 0,
    });
    expect(status.agents).toEqual([
      expect.objectContaining({ agent: 'agent-1', openStreams: 0, unresponsive: false }),
    ]);
    expect(Date.parse(status.agents[0]?.connectedSince ?? '')).toBeLessThanOrEqual(Date.now());
    // the hello has crossed the tunnel already
    expect(status.bytesFromCluster).toBeGreaterThan(0);
    expect(status.lastError).toBeUndefined();
  });

  it('a caller without a certificate gets 407, one not admitted to the cluster 403, as CONNECT does', async () => {
    expect((await refusal(source(undefined).get('cluster1', AbortSignal.timeout(5_000)))).status).toBe(407);
    const stranger = await tunnel.pki.proxyClientCert('stranger-svc');
    const denied = await refusal(source(stranger).get('cluster1', AbortSignal.timeout(5_000)));
    expect(denied.status).toBe(403);
    expect(denied.message).toContain('may not get managedclusters/proxy for cluster1');
    // an agent's certificate is no credential on the frontend at all
    const agentCert = await tunnel.pki.agentCert('cluster1', 'agent-1');
    expect((await refusal(source(agentCert).get('cluster1', AbortSignal.timeout(5_000)))).status).toBe(407);
  });

  it('a cluster this proxy-server has never seen is 404 with a message saying so; other paths 405', async () => {
    const admitAll = await startFrontend(tunnel.pki, tunnel.server, cleanups, {
      tunnelStatus: (cluster) => tunnel.server.tunnelStatus(cluster),
      authorize: async () => true,
    });
    const missing = await refusal(
      connectFrontendTunnelStatus({
        url: `https://127.0.0.1:${admitAll.port}`,
        caPem: tunnel.pki.ca.certPem,
        certPem: viewer.certPem,
        keyPem: viewer.keyPem,
      }).get('never-seen', AbortSignal.timeout(5_000)),
    );
    expect(missing.status).toBe(404);
    expect(missing.message).toContain('no agent of cluster never-seen has connected');
    const other = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: admitAll.port,
          path: '/tunnels/cluster1/../x',
          ca: tunnel.pki.ca.certPem,
          cert: viewer.certPem,
          key: viewer.keyPem,
          agent: false,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.once('error', reject);
      req.end();
    });
    expect(other).toBe(405);
  });

  it('a watch streams a line per interval; bytes and streams opened rise after traffic, a failed dial is the last error', async () => {
    const seen: TunnelStatus[] = [];
    const ac = new AbortController();
    const watching = source(viewer).watch('cluster1', (s) => seen.push(s), ac.signal);
    try {
      await pollUntil(() => seen.length >= 2, { timeoutMs: 5_000, description: 'two watch lines' });
      const before = seen[seen.length - 1] as TunnelStatus;
      const stream = await tunnel.server.dial('cluster1', 'kube-apiserver:443');
      const payload = Buffer.alloc(512 * 1024, 7);
      await roundTrip(stream, payload);
      await pollUntil(
        () => {
          const last = seen[seen.length - 1] as TunnelStatus;
          return (
            last.bytesFromCluster >= before.bytesFromCluster + payload.length &&
            last.bytesToCluster >= before.bytesToCluster + payload.length &&
            last.streamsOpened === before.streamsOpened + 1
          );
        },
        { timeoutMs: 5_000, description: 'bytes both ways to rise by the payload, one more stream opened' },
      );
      await expect(tunnel.server.dial('cluster1', 'not-exported:8080')).rejects.toThrow();
      await pollUntil(() => seen[seen.length - 1]?.lastError !== undefined, {
        timeoutMs: 5_000,
        description: 'the failed dial as last error',
      });
      const lastError = seen[seen.length - 1]?.lastError;
      expect(lastError?.code).toMatch(/^TETHER_/);
      expect(lastError?.message).toContain('not-exported:8080');
      // the per-caller watch limit (2 here): a third at once is refused with 429
      const second = new AbortController();
      const third = new AbortController();
      const watchingSecond = source(viewer).watch('cluster1', () => {}, second.signal);
      await pollUntil(() => frontend.tunnelStatusWatches >= 2, {
        timeoutMs: 5_000,
        description: 'two watches open',
      });
      expect((await refusal(source(viewer).watch('cluster1', () => {}, third.signal))).status).toBe(429);
      second.abort();
      await watchingSecond;
    } finally {
      ac.abort();
      await watching;
    }
    await pollUntil(() => frontend.tunnelStatusWatches === 0, {
      timeoutMs: 5_000,
      description: 'watches released',
    });
  });
});
