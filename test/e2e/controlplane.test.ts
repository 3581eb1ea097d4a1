// The local control planes behave like real clusters: CSR signing by the KCM, TokenRequest, namespace
// deletion and garbage collection all run for real.

import { readFileSync } from 'node:fs';
import {
  AuthenticationV1Api,
  CertificatesV1Api,
  CoreV1Api,
  KubeConfig,
  type V1CertificateSigningRequest,
} from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { kubeconfigYaml } from '../../src/localenv/kubeconfig-file.ts';
import { createCertificateRequest } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const admin = adminKubeConfig(env.cluster1);
const core = admin.makeApiClient(CoreV1Api);
const caPem = readFileSync(env.cluster1.caCertPath, 'utf8');

function kubeConfigWith(user: { certPem?: string; keyPem?: string; token?: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml({ name: 'test', server: env.cluster1.apiserverUrl, caPem, ...user }));
  return kc;
}

async function whoAmI(kc: KubeConfig): Promise<string | undefined> {
  const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status?.userInfo?.username;
}

const namespaces: string[] = [];
afterAll(async () => {
  for (const name of namespaces) await core.deleteNamespace({ name }).catch(() => {});
});

describe('local control plane', () => {
  it('signs an approved kube-apiserver-client CSR with the real KCM, and the certificate authenticates', async () => {
    const certs = admin.makeApiClient(CertificatesV1Api);
    const name = uniqueName('csr');
    const { csrPem, keyPem } = await createCertificateRequest({
      commonName: `user-${name}`,
      organizations: ['testers'],
    });
    await certs.createCertificateSigningRequest({
      body: {
        metadata: { name },
        spec: {
          request: Buffer.from(csrPem).toString('base64'),
          signerName: 'kubernetes.io/kube-apiserver-client',
          usages: ['client auth'],
          expirationSeconds: 3600,
        },
      },
    });
    const csr = await certs.readCertificateSigningRequest({ name });
    const approved: V1CertificateSigningRequest = {
      ...csr,
      status: {
        conditions: [
          { type: 'Approved', status: 'True', reason: 'TestApproved', message: 'approved by e2e test' },
        ],
      },
    };
    await certs.replaceCertificateSigningRequestApproval({ name, body: approved });
    const certificate = await pollUntil(
      async () => (await certs.readCertificateSigningRequest({ name })).status?.certificate,
      {
        timeoutMs: 30_000,
        description: `CSR ${name} to be signed`,
      },
    );
    const certPem = Buffer.from(certificate, 'base64').toString();
    expect(certPem).toContain('BEGIN CERTIFICATE');
    expect(await whoAmI(kubeConfigWith({ certPem, keyPem }))).toBe(`user-${name}`);
    await certs.deleteCertificateSigningRequest({ name });
  });

  it('returns a TokenRequest token that authenticates as the service account', async () => {
    const ns = uniqueName('tokens');
    namespaces.push(ns);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'robot' } } });
    const tr = await core.createNamespacedServiceAccountToken({
      name: 'robot',
      namespace: ns,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const token = tr.status?.token;
    expect(token).toBeTruthy();
    expect(await whoAmI(kubeConfigWith({ token }))).toBe(`system:serviceaccount:${ns}:robot`);
  });

  it('finishes deleting a namespace that still has objects in it', async () => {
    const ns = uniqueName('doomed');
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'cm' }, data: { a: 'b' } },
    });
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 's' }, stringData: { k: 'v' } },
    });
    await core.deleteNamespace({ name: ns });
    await pollUntil(
      async () => {
        try {
          await core.readNamespace({ name: ns });
          return false;
        } catch (err) {
          return (err as { code?: number }).code === 404;
        }
      },
      { timeoutMs: 60_000, description: `namespace ${ns} to be gone` },
    );
  });

  it('garbage-collects an object whose owner was deleted', async () => {
    const ns = uniqueName('gc');
    namespaces.push(ns);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const owner = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'owner' } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: 'child',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' },
          ],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: ns });
    await pollUntil(
      async () => {
        try {
          await core.readNamespacedConfigMap({ name: 'child', namespace: ns });
          return false;
        } catch (err) {
          return (err as { code?: number }).code === 404;
        }
      },
      { timeoutMs: 60_000, description: 'the owned ConfigMap to be garbage-collected' },
    );
  });
});
