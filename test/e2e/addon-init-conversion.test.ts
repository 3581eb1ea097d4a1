// `tether init --bootstrap-only` on a hub where a full `tether init` already made the addon
// webhook's certificate keeps the ClusterManagementAddOn / ManagedClusterAddOn CRDs converting
// through the hub controllers' Service (re-applying the CRDs must not switch conversion off), also
// over a conversion another field manager set.
// The test puts the CRDs' conversion and the Secret back as it found them.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { hubNames, hubNamespace } from '../../src/install/names.ts';
import { createCertificateAuthority } from '../../src/pki/index.ts';
import { testEnv } from './fixtures/env.ts';
import { kubectl } from './fixtures/helpers.ts';

const execFileAsync = promisify(execFile);
const env = testEnv();
const hubKubeconfig = env.hub.kubeconfigPath;
const tmp = mkdtempSync(join(tmpdir(), 'tether-init-webhook-'));
const crdNames = ['clustermanagementaddons', 'managedclusteraddons'].map(
  (p) => `${p}.addon.open-cluster-management.io`,
);
const saved = new Map<string, unknown>();
let createdSecret = false;

afterAll(async () => {
  if (createdSecret)
    await kubectl(hubKubeconfig, ['-n', hubNamespace, 'delete', 'secret', hubNames.addonWebhookTls]).catch(
      () => {},
    );
  for (const [name, conversion] of saved) {
    const patch = [{ op: 'replace', path: '/spec/conversion', value: conversion }];
    await kubectl(hubKubeconfig, ['patch', 'crd', name, '--type=json', '-p', JSON.stringify(patch)]).catch(
      () => {},
    );
  }
  rmSync(tmp, { recursive: true, force: true });
});

describe('tether init --bootstrap-only and the addon conversion webhook', () => {
  it('points the converting addon CRDs at the hub Service when the webhook certificate exists, whoever set their conversion before', async () => {
    for (const name of crdNames) {
      const crd = JSON.parse(await kubectl(hubKubeconfig, ['get', 'crd', name, '-o', 'json']));
      saved.set(name, crd.spec.conversion);
    }
    // a full `tether init` may have run on the shared hub: then its certificate is the one to expect
    const existing = await kubectl(hubKubeconfig, [
      '-n',
      hubNamespace,
      'get',
      'secret',
      hubNames.addonWebhookTls,
      '--ignore-not-found',
      '-o',
      'json',
    ]);
    let caPem: string;
    if (existing.trim()) {
      caPem = Buffer.from(JSON.parse(existing).data['ca.crt'], 'base64').toString();
    } else {
      const ca = await createCertificateAuthority('test-addon-webhook-ca');
      caPem = ca.certPem;
      await kubectl(hubKubeconfig, ['create', 'namespace', hubNamespace]).catch(() => {});
      await kubectl(hubKubeconfig, ['apply', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: hubNames.addonWebhookTls, namespace: hubNamespace },
          stringData: { 'ca.crt': ca.certPem, 'tls.crt': ca.certPem, 'tls.key': ca.keyPem },
        }),
      });
      createdSecret = true;
    }

    // someone else (here kubectl) set a url webhook: server-side apply alone would keep that url
    // next to tether's service, which the API server refuses
    const foreign = {
      strategy: 'Webhook',
      webhook: {
        clientConfig: { url: 'https://127.0.0.1:1/convert', caBundle: Buffer.from(caPem).toString('base64') },
        conversionReviewVersions: ['v1'],
      },
    };
    for (const name of crdNames) {
      const patch = [{ op: 'replace', path: '/spec/conversion', value: foreign }];
      await kubectl(hubKubeconfig, ['patch', 'crd', name, '--type=json', '-p', JSON.stringify(patch)]);
    }

    await execFileAsync(
      process.execPath,
      [
        'bin/tether.js',
        'init',
        '--bootstrap-only',
        '--kubeconfig',
        hubKubeconfig,
        '--ca-out',
        join(tmp, 'ca.crt'),
      ],
      { timeout: 90_000 },
    );

    for (const name of crdNames) {
      const crd = JSON.parse(await kubectl(hubKubeconfig, ['get', 'crd', name, '-o', 'json']));
      expect(crd.spec.conversion, name).toEqual({
        strategy: 'Webhook',
        webhook: {
          clientConfig: {
            service: {
              namespace: hubNamespace,
              name: 'cluster-manager-addon-webhook',
              path: '/convert',
              port: 9443,
            },
            caBundle: Buffer.from(caPem).toString('base64'),
          },
          conversionReviewVersions: ['v1', 'v1beta1'],
        },
      });
    }
  });
});
