// The addon hub-kubeconfig secret: OCM's keys and kubeconfig layout, and when a stored secret
// still serves (same subject, key, hub and data; not expired) so the agent asks for no new CSR.
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import {
  type AddonCredentialTarget,
  addonSecretData,
  storedAddonCredential,
} from '../../src/registration/agent/addon/hub-kubeconfig.ts';

const ca = await createCertificateAuthority('hub');
const target: AddonCredentialTarget = {
  cluster: 'c1',
  addon: 'demo',
  agentName: 'agent',
  signerName: 'kubernetes.io/kube-apiserver-client',
  subject: {
    commonName: 'system:open-cluster-management:cluster:c1:addon:demo:agent:addon-agent',
    organizations: [
      'system:open-cluster-management:cluster:c1:addon:demo',
      'system:open-cluster-management:addon:demo',
    ],
    organizationalUnits: [],
  },
  hub: { server: 'https://hub.example:6443', caPem: ca.certPem, proxyUrl: 'http://squid:3128' },
};

async function issued(t: AddonCredentialTarget = target, validitySeconds = 3600) {
  return issueCertificate(ca, {
    commonName: t.subject.commonName,
    organizations: t.subject.organizations,
    usage: 'client',
    validitySeconds,
  });
}

const decode = (data: Record<string, string>, key: string) =>
  Buffer.from(data[key] ?? '', 'base64').toString();

describe('addon hub-kubeconfig secret', () => {
  it('has OCM’s keys and a kubeconfig for the hub that reads tls.crt / tls.key next to it', async () => {
    const { certPem, keyPem } = await issued();
    const data = addonSecretData(target, certPem, keyPem);
    expect(Object.keys(data).sort()).toEqual([
      'agent-name',
      'cluster-name',
      'kubeconfig',
      'tls.crt',
      'tls.key',
    ]);
    const kc = new KubeConfig();
    kc.loadFromString(decode(data, 'kubeconfig'));
    expect(kc.getCurrentContext()).toBe('default-context');
    expect(kc.getCurrentCluster()).toMatchObject({
      server: target.hub.server,
      proxyUrl: 'http://squid:3128',
    });
    expect(kc.getCurrentUser()).toMatchObject({ certFile: 'tls.crt', keyFile: 'tls.key' });
    expect(decode(data, 'cluster-name')).toBe('c1');
    expect(decode(data, 'agent-name')).toBe('agent');
  });

  it('a custom signer’s secret has no kubeconfig', async () => {
    const { certPem, keyPem } = await issued();
    const data = addonSecretData({ ...target, signerName: 'example.com/signer' }, certPem, keyPem);
    expect(data.kubeconfig).toBeUndefined();
  });

  it('a stored secret serves until it expires, for the same subject, key and hub only', async () => {
    const { certPem, keyPem } = await issued();
    const secret = { metadata: {}, data: addonSecretData(target, certPem, keyPem) };
    expect(storedAddonCredential(secret, target)).toHaveProperty('notAfter');
    expect(storedAddonCredential(undefined, target)).toHaveProperty('problem');
    expect(
      storedAddonCredential(secret, { ...target, hub: { ...target.hub, server: 'https://other:6443' } }),
    ).toEqual({
      problem: 'its kubeconfig is out of date',
    });
    const otherSubject = { ...target, subject: { ...target.subject, organizations: ['x'] } };
    expect(storedAddonCredential(secret, otherSubject)).toMatchObject({
      problem: expect.stringMatching(/subject/),
    });
    const later = new Date(Date.now() + 2 * 3600_000);
    expect(storedAddonCredential(secret, target, later)).toMatchObject({
      problem: expect.stringMatching(/expired/),
    });
    const other = await issued();
    const mismatched = { metadata: {}, data: addonSecretData(target, certPem, other.keyPem) };
    expect(storedAddonCredential(mismatched, target)).toEqual({
      problem: 'tls.key does not belong to tls.crt',
    });
  });
});
