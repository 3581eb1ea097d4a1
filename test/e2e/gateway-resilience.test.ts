// Failure answers of the gateway, always quick and always a Kubernetes Status: the agent stops →
// 503 within a second (open watches end instead of hanging) and the ClusterGateway turns unhealthy;
// the agent comes back → requests pass again. A Const endpoint nobody listens on → 502; one that
// accepts TCP but never speaks TLS → 504 after the connect deadline.
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialTypeLabel, defaultCredentialNamespace } from '../../src/gateway/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  cluster1GatewayToken,
  cluster1Target,
  type GatewayFixture,
  hubAdminTls,
  hubCore,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
const cluster = uniqueName('gwf');
const refused = uniqueName('gwf-refused');
const silent = uniqueName('gwf-silent');
const tls = hubAdminTls();
let silentServer: Server;
const silentSockets = new Set<Socket>();
const proxyPath = (c: string, rest: string) =>
  `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${c}/proxy${rest}`;

/** GET through the hub; resolves with status, body and elapsed milliseconds. */
function viaHub(path: string): Promise<{ status: number; body: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: tls.host, port: tls.port, path, ca: tls.ca, cert: tls.cert, key: tls.key },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: Date.now() - started }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function constCluster(name: string, port: number): Promise<void> {
  await hubCore.createNamespace({ body: { metadata: { name: defaultCredentialNamespace } } }).catch(() => {});
  await hubCore.createNamespacedSecret({
    namespace: defaultCredentialNamespace,
    body: {
      metadata: { name, labels: { [credentialTypeLabel]: 'ServiceAccountToken' } },
      stringData: { endpoint: `https://127.0.0.1:${port}`, 'ca.crt': cluster1Target().caPem, token: 't' },
    },
  });
}

beforeAll(async () => {
  f = await startGatewayFixture({ upstreamConnectTimeoutMs: 2000 });
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
  silentServer = createServer((s) => {
    silentSockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => silentServer.listen(0, '127.0.0.1', r));
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  await constCluster(refused, closedPort);
  await constCluster(silent, (silentServer.address() as AddressInfo).port);
  await pollUntil(() => f.gateway.store.get(refused) && f.gateway.store.get(silent), {
    timeoutMs: 20_000,
    description: 'the Const ClusterGateways to appear',
  });
});

afterAll(async () => {
  for (const name of [refused, silent]) {
    await hubCore.deleteNamespacedSecret({ name, namespace: defaultCredentialNamespace }).catch(() => {});
  }
  for (const s of silentSockets) s.destroy();
  await new Promise((r) => silentServer?.close(r));
  await f?.stop();
});

describe('gateway failure answers', () => {
  it('agent stopped → 503 within a second, open watches end, unhealthy; agent back → requests pass again', async () => {
    expect((await viaHub(proxyPath(cluster, '/version'))).status).toBe(200);
    const watchEnded = new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: tls.host,
          port: tls.port,
          path: proxyPath(cluster, '/api/v1/namespaces/default/configmaps?watch=true'),
          ca: tls.ca,
          cert: tls.cert,
          key: tls.key,
        },
        (res) => {
          res.resume();
          res.on('close', () => resolve(Date.now()));
        },
      );
      req.on('error', () => resolve(Date.now()));
      req.setTimeout(30_000, () => reject(new Error('watch still open 30 s after the agent stopped')));
      req.end();
    });
    await new Promise((r) => setTimeout(r, 300));

    const stoppedAt = Date.now();
    await f.stopAgent(cluster);
    const down = await viaHub(proxyPath(cluster, '/version'));
    expect(down.status, down.body).toBe(503);
    expect(down.ms).toBeLessThan(1000);
    expect(JSON.parse(down.body)).toMatchObject({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
    expect(JSON.parse(down.body).message).toContain(cluster);
    expect((await watchEnded) - stoppedAt).toBeLessThan(5000);
    await pollUntil(() => f.gateway.store.get(cluster)?.status.healthyReason === 'NoTunnel', {
      timeoutMs: 5000,
      description: 'the ClusterGateway to be unhealthy (NoTunnel)',
    });

    await f.startAgent(cluster);
    const up = await pollUntil(
      async () => {
        const r = await viaHub(proxyPath(cluster, '/version'));
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 20_000, description: 'requests to pass once the agent is back' },
    );
    expect(JSON.parse(up.body).gitVersion).toMatch(/^v1\./);
    await pollUntil(() => f.gateway.store.get(cluster)?.status.healthy === true, {
      timeoutMs: 10_000,
      description: 'the ClusterGateway to be healthy again',
    });
  });

  it('a Const endpoint that refuses connections is 502, one that never answers TLS is 504', async () => {
    const bad = await viaHub(proxyPath(refused, '/version'));
    expect(bad.status).toBe(502);
    expect(JSON.parse(bad.body)).toMatchObject({ kind: 'Status', code: 502 });
    const slow = await viaHub(proxyPath(silent, '/version'));
    expect(slow.status).toBe(504);
    expect(slow.ms).toBeLessThan(5000);
    expect(JSON.parse(slow.body)).toMatchObject({ kind: 'Status', code: 504, reason: 'Timeout' });
  });
});
