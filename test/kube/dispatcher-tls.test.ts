// The pooled dispatchers against a real mTLS server: one TLS secure context per credential shared
// by every connection, and a rotated client certificate used from the next request on.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeCachedDispatchers, secureContextCount } from '../../src/kube/dispatcher.ts';
import { kubeconfigFromParts } from '../../src/kube/index.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
} from '../../src/pki/index.ts';

let ca: CertificateAuthority;
let server: Server;
let url: string;
let dir: string;
/** one entry per TLS connection the server accepted: the client certificate's common name */
const connections: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tether-dispatcher-tls-'));
  ca = await createCertificateAuthority('dispatcher-test-ca');
  const serving = await issueCertificate(ca, {
    commonName: 'localhost',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      // A new connection per request: each one is a TLS handshake with the dispatcher's context.
      res.writeHead(200, { connection: 'close', 'content-type': 'text/plain' });
      res.end(peer.subject?.CN ?? '');
    },
  );
  server.on('secureConnection', (socket: TLSSocket) => {
    connections.push(String(socket.getPeerCertificate().subject?.CN ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeCachedDispatchers();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  rmSync(dir, { recursive: true, force: true });
});

/** GET / the way client-node sends every request: its TLS settings, our pooled dispatcher. */
async function commonNameSeenBy(kc: KubeConfig): Promise<string> {
  const ctx = new RequestContext(`${url}/`, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  const response = await fetch(ctx.getUrl(), { headers: ctx.getHeaders(), dispatcher: ctx.getDispatcher() });
  expect(response.status).toBe(200);
  return response.text();
}

function client(name: string): Promise<KeyPairPem> {
  return issueCertificate(ca, { commonName: name, usage: 'client' });
}

describe('pooled dispatcher TLS', () => {
  it('builds one secure context for a credential and shares it across new connections', async () => {
    const agent = await client('agent-shared');
    const kc = kubeconfigFromParts({ name: 'shared', server: url, caPem: ca.certPem, ...agent });
    const before = secureContextCount();
    const firstConnection = connections.length;
    for (let i = 0; i < 3; i++) expect(await commonNameSeenBy(kc)).toBe('agent-shared');
    expect(connections.slice(firstConnection)).toEqual(['agent-shared', 'agent-shared', 'agent-shared']);
    expect(secureContextCount() - before).toBe(1);
    // Another KubeConfig with the same credential shares the dispatcher, hence the context.
    const same = kubeconfigFromParts({ name: 'shared-again', server: url, caPem: ca.certPem, ...agent });
    expect(await commonNameSeenBy(same)).toBe('agent-shared');
    expect(secureContextCount() - before).toBe(1);
  });

  it('uses a client certificate rotated in its kubeconfig data from the next request on', async () => {
    const kc = kubeconfigFromParts({
      name: 'data',
      server: url,
      caPem: ca.certPem,
      ...(await client('agent-a')),
    });
    expect(await commonNameSeenBy(kc)).toBe('agent-a');
    const rotated = await client('agent-b');
    const b64 = (pem: string) => Buffer.from(pem).toString('base64');
    kc.users = kc.users.map((u) => ({ ...u, certData: b64(rotated.certPem), keyData: b64(rotated.keyPem) }));
    expect(await commonNameSeenBy(kc)).toBe('agent-b');
  });

  it('uses a client certificate rewritten in the files the kubeconfig names from the next request on', async () => {
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    const first = await client('agent-file-1');
    writeFileSync(certFile, first.certPem);
    writeFileSync(keyFile, first.keyPem);
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'c', server: url, caData: Buffer.from(ca.certPem).toString('base64'), skipTLSVerify: false },
      ],
      users: [{ name: 'u', certFile, keyFile }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(await commonNameSeenBy(kc)).toBe('agent-file-1');
    const second = await client('agent-file-2');
    writeFileSync(certFile, second.certPem);
    writeFileSync(keyFile, second.keyPem);
    expect(await commonNameSeenBy(kc)).toBe('agent-file-2');
  });
});
