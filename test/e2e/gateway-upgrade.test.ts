// Upgrades and header rewriting through hub → aggregator → gateway → cluster, against a stand-in
// apiserver that echoes what it receives: WebSocket (v5.channel.k8s.io) and SPDY-style raw
// upgrades move bytes both ways through the tunnel; the caller's identity headers never reach the
// cluster, the cluster credential does; the hub caller is impersonated as cluster:hub:<user>; and
// cluster-gateway's own credential Secrets (Const endpoint, token or X.509) are served as well.
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { issueCertificate } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  credentialSecret,
  direct,
  type GatewayFixture,
  hubAdminTls,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { startTestUpstream, type TestUpstream } from './fixtures/gateway-upstream.ts';
import { uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
let upstream: TestUpstream;
const tunnelled = uniqueName('gwu');
const constToken = uniqueName('gwc');
const constX509 = uniqueName('gwx');
const tls = hubAdminTls();
const proxyPath = (cluster: string, rest: string) =>
  `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy${rest}`;

beforeAll(async () => {
  upstream = await startTestUpstream();
  f = await startGatewayFixture();
  await f.addCluster(
    {
      name: tunnelled,
      apiserver: { host: '127.0.0.1', port: upstream.port },
      url: 'https://upstream.gateway.test:6443',
      caPem: upstream.caPem,
    },
    'tunnel-token',
  );
  const endpoint = `https://127.0.0.1:${upstream.port}`;
  await credentialSecret(constToken, 'ServiceAccountToken', {
    endpoint,
    'ca.crt': upstream.caPem,
    token: 'const-token',
  });
  const client = await issueCertificate(upstream.clientCa, { commonName: 'gateway-x509', usage: 'client' });
  await credentialSecret(constX509, 'X509Certificate', {
    endpoint,
    'ca.crt': upstream.caPem,
    'tls.crt': client.certPem,
    'tls.key': client.keyPem,
  });
  await pollUntil(
    () => [constToken, constX509].every((c) => f.gateway.store.get(c)?.status.healthy === true),
    { timeoutMs: 30_000, description: 'the Const ClusterGateways to be healthy' },
  );
});

afterAll(async () => {
  // The fixture's stop deletes the credential Secrets too.
  await f?.stop();
  await upstream?.close();
});

/** GET through the hub (admin client certificate) and parse the echo. */
async function echo(cluster: string, rest: string, headers: Record<string, string> = {}) {
  const res = await fetchViaHub(proxyPath(cluster, rest), headers);
  return JSON.parse(res) as {
    method: string;
    url: string;
    headers: Record<string, string[]>;
    clientCN?: string;
  };
}

function fetchViaHub(path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: tls.host,
        port: tls.port,
        path,
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        servername: 'localhost',
        headers,
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode}: ${body}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Opens a raw SPDY-style upgrade through the hub; resolves with the socket after the 101. */
function rawUpgrade(path: string): Promise<{ socket: TLSSocket; head: string }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: tls.host,
      port: tls.port,
      ca: tls.ca,
      cert: tls.cert,
      key: tls.key,
      servername: 'localhost',
    });
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve({ socket, head: buf.subarray(0, end).toString() });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: ${tls.host}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
        `X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n`,
    );
  });
}

function echoBytes(socket: TLSSocket, payload: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let n = 0;
    socket.on('data', (d: Buffer) => {
      hash.update(d);
      n += d.length;
      if (n >= payload.length) resolve(hash.digest('hex'));
    });
    socket.once('error', reject);
    socket.resume();
    socket.write(payload);
  });
}

describe('proxy headers and credentials', () => {
  it('forwards path and query, strips the caller identity, adds the cluster token and impersonates cluster:hub:<caller>', async () => {
    const path = '/api/v1/namespaces/x/configmaps?dryRun=All&fieldManager=me&watch=false';
    const viaHub = await echo(tunnelled, path);
    expect(viaHub.url).toBe(path);
    expect(viaHub.headers['impersonate-user']).toEqual(['cluster:hub:tether-admin']);
    // Straight at the gateway with headers the hub would have consumed: none of them pass.
    const res = await direct(f, proxyPath(tunnelled, path), {
      frontProxy: true,
      user: 'tether-admin',
      groups: ['system:masters', 'system:authenticated'],
      headers: {
        'Impersonate-User': 'mallory',
        'Impersonate-Group': 'system:masters',
        Authorization: 'Bearer caller-token',
        'X-Remote-Extra-Scopes%2Fx': 'read',
      },
    });
    expect(res.status).toBe(200);
    const got = JSON.parse(res.body) as { url: string; headers: Record<string, string[]> };
    expect(got.url).toBe(path);
    expect(got.headers.authorization).toEqual(['Bearer tunnel-token']);
    expect(got.headers['impersonate-user']).toEqual(['cluster:hub:tether-admin']);
    expect(got.headers['impersonate-group']).toEqual([
      'cluster:hub:system:masters',
      'cluster:hub:system:authenticated',
    ]);
    // Extras are the hub's business: never impersonated on the managed cluster.
    expect(Object.keys(got.headers).filter((h) => h.startsWith('impersonate-extra-'))).toEqual([]);
    expect(got.headers['x-remote-user']).toBeUndefined();
    expect(got.headers['x-remote-group']).toBeUndefined();
    expect(got.headers['x-remote-extra-scopes%2fx']).toBeUndefined();
    expect(got.headers.host).toEqual(['upstream.gateway.test:6443']);
  });

  it('serves cluster-gateway credential Secrets: Const endpoint with a token or a client certificate', async () => {
    const byToken = await echo(constToken, '/version');
    expect(byToken.headers.authorization).toEqual(['Bearer const-token']);
    expect(byToken.headers['impersonate-user']).toEqual(['cluster:hub:tether-admin']);
    const byCert = await echo(constX509, '/version');
    expect(byCert.headers.authorization).toBeUndefined();
    expect(byCert.clientCN).toBe('gateway-x509');
    expect(f.gateway.store.get(constToken)?.spec.access).toEqual({
      endpoint: { type: 'Const', const: { address: `https://127.0.0.1:${upstream.port}` } },
      credential: { type: 'ServiceAccountToken' },
    });
  });
});

describe('upgrades through the tunnel', () => {
  it('a WebSocket (v5.channel.k8s.io) echoes messages both ways', async () => {
    const ws = new WebSocket(
      `wss://${tls.host}:${tls.port}${proxyPath(tunnelled, '/api/v1/namespaces/x/pods/p/exec')}`,
      ['v5.channel.k8s.io'],
      { ca: tls.ca, cert: tls.cert, key: tls.key },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
        ws.once('unexpected-response', (_req, res) =>
          reject(new Error(`upgrade answered ${res.statusCode}`)),
        );
      });
      expect(ws.protocol).toBe('v5.channel.k8s.io');
      const payload = randomBytes(256 * 1024);
      const back = await new Promise<Buffer>((resolve) => {
        ws.once('message', (data) => resolve(data as Buffer));
        ws.send(payload);
      });
      expect(back.equals(payload)).toBe(true);
    } finally {
      ws.terminate();
    }
  });

  it('a SPDY/3.1 upgrade (raw bytes after the 101) carries 4 MiB both ways', async () => {
    const { socket, head } = await rawUpgrade(
      proxyPath(tunnelled, '/api/v1/namespaces/x/pods/p/portforward'),
    );
    try {
      expect(head).toMatch(/^HTTP\/1.1 101/);
      expect(head.toLowerCase()).toContain('upgrade: spdy/3.1');
      expect(head).toContain('X-Seen-Authorization: Bearer tunnel-token');
      const payload = randomBytes(4 * 1024 * 1024);
      const sha = await echoBytes(socket, payload);
      expect(sha).toBe(createHash('sha256').update(payload).digest('hex'));
    } finally {
      socket.destroy();
    }
  });

  it('upgrades to a Const endpoint work too, and count as open long-running streams meanwhile', async () => {
    const { socket, head } = await rawUpgrade(proxyPath(constToken, '/api/v1/namespaces/x/pods/p/attach'));
    try {
      expect(head).toMatch(/^HTTP\/1.1 101/);
      const metrics = await f.gateway.registry.metrics();
      expect(metrics).toMatch(
        new RegExp(`tether_gateway_long_running_requests\\{cluster="${constToken}",kind="upgrade"\\} 1`),
      );
      const payload = randomBytes(64 * 1024);
      expect(await echoBytes(socket, payload)).toBe(createHash('sha256').update(payload).digest('hex'));
    } finally {
      socket.destroy();
    }
  });
});
