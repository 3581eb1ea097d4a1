// Hosted mode's external-managed-kubeconfig: made self-contained from the user's kubeconfig (files
// read in, the current context only), and refused with a reason where it could not work in a pod.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { selfContainedKubeconfig } from '../../src/install/managed-kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-managed-kc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n';

function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = {}): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'other', server: 'https://other:6443', caData: Buffer.from(CA).toString('base64') },
      { name: 'managed', server: 'https://10.0.0.9:6443', ...cluster },
    ],
    users: [{ name: 'admin', ...user }],
    contexts: [
      { name: 'other', cluster: 'other', user: 'admin' },
      { name: 'managed', cluster: 'managed', user: 'admin' },
    ],
    currentContext: 'managed',
  });
  return kc;
}

describe('selfContainedKubeconfig', () => {
  it('embeds the files of the current context and drops the other contexts', () => {
    writeFileSync(join(dir, 'ca.crt'), CA);
    writeFileSync(join(dir, 'tls.crt'), CERT);
    writeFileSync(join(dir, 'tls.key'), KEY);
    const yaml = selfContainedKubeconfig(
      kubeconfig(
        { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') },
        { caFile: join(dir, 'ca.crt') },
      ),
      '--managed-cluster-kubeconfig',
    );
    const back = new KubeConfig();
    back.loadFromString(yaml);
    expect(back.getContexts()).toHaveLength(1);
    expect(back.getCurrentCluster()?.server).toBe('https://10.0.0.9:6443');
    expect(Buffer.from(back.getCurrentCluster()?.caData ?? '', 'base64').toString()).toBe(CA);
    expect(Buffer.from(back.getCurrentUser()?.certData ?? '', 'base64').toString()).toBe(CERT);
    expect(Buffer.from(back.getCurrentUser()?.keyData ?? '', 'base64').toString()).toBe(KEY);
    expect(yaml).not.toContain(dir);
  });

  it('keeps a token user', () => {
    const yaml = selfContainedKubeconfig(
      kubeconfig({ token: 'sa-token' }, { caData: Buffer.from(CA).toString('base64') }),
      '--managed-cluster-kubeconfig',
    );
    const back = new KubeConfig();
    back.loadFromString(yaml);
    expect(back.getCurrentUser()?.token).toBe('sa-token');
  });

  it('refuses what cannot run in the hosted pod, naming it', () => {
    const ca = { caData: Buffer.from(CA).toString('base64') };
    const cases: Array<[KubeConfig, RegExp]> = [
      [
        kubeconfig({ exec: { command: 'aws', apiVersion: 'client.authentication.k8s.io/v1' } }, ca),
        /exec plugin/,
      ],
      [kubeconfig({ username: 'u', password: 'p' }, ca), /basic auth/],
      [kubeconfig({ token: 't' }, { skipTLSVerify: true }), /no certificate-authority/],
      [kubeconfig({}, ca), /no client certificate and no token/],
      [kubeconfig({ certData: Buffer.from(CERT).toString('base64') }, ca), /without the other/],
      [
        kubeconfig({ token: 't' }, { caFile: join(dir, 'missing.crt') }),
        /cannot read the certificate-authority file/,
      ],
    ];
    for (const [kc, message] of cases)
      expect(() => selfContainedKubeconfig(kc, '--managed-cluster-kubeconfig')).toThrow(message);
  });
});
