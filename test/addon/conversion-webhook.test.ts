// The addon conversion webhook over real TLS: ConversionReviews of both API versions are answered
// with the uid echoed, objects that cannot convert give a Failure result with a message, and the
// server takes only POST /convert with a bounded body.
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AddonConversionWebhookServer, startAddonConversionWebhook } from '../../src/addon/index.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';

let server: AddonConversionWebhookServer;
let caPem: string;
const maxBodyBytes = 64 * 1024;

beforeAll(async () => {
  const ca = await createCertificateAuthority('test-webhook-ca');
  caPem = ca.certPem;
  const serving = await issueCertificate(ca, {
    commonName: 'webhook',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  server = await startAddonConversionWebhook({ host: '127.0.0.1', port: 0, maxBodyBytes, ...serving });
});

afterAll(async () => {
  await server?.close();
});

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

function call(method: string, path: string, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path,
        ca: caPem,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString() || '{}'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const mca = {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1',
  kind: 'ManagedClusterAddOn',
  metadata: { name: 'helloworld', namespace: 'cluster1' },
  spec: { installNamespace: 'hello' },
};

function review(
  apiVersion: string,
  objects: unknown[],
  desired = 'addon.open-cluster-management.io/v1beta1',
) {
  return JSON.stringify({
    apiVersion,
    kind: 'ConversionReview',
    request: { uid: 'c0ffee', desiredAPIVersion: desired, objects },
  });
}

describe('addon conversion webhook', () => {
  it.each(['apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1'])(
    'answers a %s ConversionReview with the uid and the converted objects',
    async (apiVersion) => {
      const reply = await call('POST', '/convert', review(apiVersion, [mca]));
      expect(reply.status).toBe(200);
      expect(reply.body['apiVersion']).toBe(apiVersion);
      expect(reply.body['kind']).toBe('ConversionReview');
      const response = reply.body['response'] as Record<string, unknown>;
      expect(response['uid']).toBe('c0ffee');
      expect(response['result']).toEqual({ status: 'Success' });
      expect(response['convertedObjects']).toEqual([
        {
          apiVersion: 'addon.open-cluster-management.io/v1beta1',
          kind: 'ManagedClusterAddOn',
          metadata: {
            name: 'helloworld',
            namespace: 'cluster1',
            annotations: { 'addon.open-cluster-management.io/v1alpha1-install-namespace': 'hello' },
          },
          spec: {},
        },
      ]);
    },
  );

  it('fails the whole review with a message naming the object that cannot convert', async () => {
    const bad = { ...mca, kind: 'AddOnTemplate', metadata: { name: 't', namespace: 'ns' } };
    const reply = await call('POST', '/convert', review('apiextensions.k8s.io/v1', [mca, bad]));
    expect(reply.status).toBe(200);
    const response = reply.body['response'] as Record<string, unknown>;
    expect(response['uid']).toBe('c0ffee');
    expect(response['result']).toMatchObject({ status: 'Failure' });
    expect((response['result'] as { message: string }).message).toMatch(/object 1 \(ns\/t\).*AddOnTemplate/);
  });

  it('fails a review whose target version is not an addon version', async () => {
    const reply = await call('POST', '/convert', review('apiextensions.k8s.io/v1', [mca], 'apps/v1'));
    const response = reply.body['response'] as Record<string, unknown>;
    expect(response['result']).toMatchObject({
      status: 'Failure',
      message: expect.stringMatching(/apps\/v1/),
    });
  });

  it('rejects a body that is not a ConversionReview with 400', async () => {
    expect((await call('POST', '/convert', '{not json')).status).toBe(400);
    const wrongKind = await call('POST', '/convert', JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }));
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body['message']).toMatch(/ConversionReview/);
    const noUid = await call(
      'POST',
      '/convert',
      JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: {} }),
    );
    expect(noUid.status).toBe(400);
  });

  it('serves POST /convert only', async () => {
    expect((await call('GET', '/convert')).status).toBe(405);
    expect((await call('POST', '/mutate', review('apiextensions.k8s.io/v1', [mca]))).status).toBe(404);
  });

  it('refuses a body over the limit with 413', async () => {
    const huge = review('apiextensions.k8s.io/v1', [
      { ...mca, metadata: { ...mca.metadata, labels: { x: 'y'.repeat(maxBodyBytes) } } },
    ]);
    const reply = await call('POST', '/convert', huge);
    expect(reply.status).toBe(413);
  });
});
