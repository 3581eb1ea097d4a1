// An aggregated APIService backed by a local HTTPS server (ExternalName Service → localhost) turns
// Available and answers through the hub apiserver, with the caller passed in X-Remote-* headers on a
// front-proxy client certificate. The gateway is built on exactly this path.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ApiregistrationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, kubectl } from './fixtures/helpers.ts';

const env = testEnv();
const hub = adminKubeConfig(env.hub);
const group = 'probe.tether.dev';
const apiServiceName = `v1.${group}`;
const namespace = 'tether-aggregation-test';
const serviceName = 'probe-api';

let server: Server;
const seenUsers: string[] = [];

beforeAll(async () => {
  const ca = await createCertificateAuthority('probe-ca');
  const serving = await issueCertificate(ca, {
    commonName: serviceName,
    usage: 'server',
    dnsNames: [`${serviceName}.${namespace}.svc`, 'localhost'],
  });
  server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: readFileSync(env.hub.frontProxyCaCertPath, 'utf8'),
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      if (!(req.socket as TLSSocket).authorized || peer.subject?.CN !== 'front-proxy-client') {
        res.writeHead(401).end();
        return;
      }
      seenUsers.push(String(req.headers['x-remote-user'] ?? ''));
      res.setHeader('content-type', 'application/json');
      if (req.url === `/apis/${group}/v1`) {
        res.end(
          JSON.stringify({
            kind: 'APIResourceList',
            apiVersion: 'v1',
            groupVersion: `${group}/v1`,
            resources: [
              { name: 'pings', singularName: 'ping', namespaced: false, kind: 'Ping', verbs: ['get'] },
            ],
          }),
        );
      } else if (req.url === `/apis/${group}/v1/pings/hello`) {
        res.end(
          JSON.stringify({
            apiVersion: `${group}/v1`,
            kind: 'Ping',
            metadata: { name: 'hello' },
            user: req.headers['x-remote-user'],
          }),
        );
      } else {
        res
          .writeHead(404)
          .end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404 }));
      }
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;

  const core = hub.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: serviceName },
      spec: {
        type: 'ExternalName',
        externalName: 'localhost',
        ports: [{ name: 'https', port, protocol: 'TCP' }],
      },
    },
  });
  await hub.makeApiClient(ApiregistrationV1Api).createAPIService({
    body: {
      metadata: { name: apiServiceName },
      spec: {
        group,
        version: 'v1',
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        service: { namespace, name: serviceName, port },
        caBundle: Buffer.from(ca.certPem).toString('base64'),
      },
    },
  });
});

afterAll(async () => {
  await hub
    .makeApiClient(ApiregistrationV1Api)
    .deleteAPIService({ name: apiServiceName })
    .catch(() => {});
  await hub
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch(() => {});
  // The aggregator keeps idle keep-alive connections for 90 s; close them instead of waiting.
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

describe('aggregated API through the hub apiserver', () => {
  it('turns Available and answers with the caller in X-Remote-User', async () => {
    const registration = hub.makeApiClient(ApiregistrationV1Api);
    await pollUntil(
      async () => {
        const svc = await registration.readAPIService({ name: apiServiceName });
        return svc.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True');
      },
      { timeoutMs: 60_000, description: `APIService ${apiServiceName} to be Available` },
    );
    const out = await pollUntil(
      async () =>
        JSON.parse(await kubectl(env.hub.kubeconfigPath, ['get', '--raw', `/apis/${group}/v1/pings/hello`])),
      { timeoutMs: 30_000, description: 'the aggregated API to answer' },
    );
    expect(out.kind).toBe('Ping');
    expect(out.user).toBe('tether-admin');
    expect(seenUsers).toContain('tether-admin');
  });
});
