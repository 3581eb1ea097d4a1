// startServiceAccountAgent refuses options it cannot work with before it contacts any apiserver.
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.ts';
import { kubeconfigFromParts } from '../../src/kube/index.ts';
import { createCertificateAuthority } from '../../src/pki/index.ts';
import { startServiceAccountAgent } from '../../src/serviceaccount/index.ts';

const ca = await createCertificateAuthority('test-ca');
const kc = (name: string) =>
  kubeconfigFromParts({ name, server: 'https://127.0.0.1:1', caPem: ca.certPem, token: 't' });
const base = { clusterName: 'cluster1', hubKubeConfig: kc('hub'), managedKubeConfig: kc('managed') };

describe('startServiceAccountAgent options', () => {
  it.each([
    [{ clusterName: 'Cluster_1' }, /cluster name "Cluster_1" is not a DNS label/],
    [{ installNamespace: 'a/b' }, /install namespace "a\/b"/],
    [{ refreshAtFraction: 0 }, /refreshAtFraction 0 must be in \(0, 1\]/],
    [{ refreshAtFraction: 1.5 }, /refreshAtFraction 1.5/],
    [{ kubeconfigServerUrl: 'http://gateway' }, /must be an https:\/\/ URL/],
    [
      { kubeconfigServerUrl: 'https://user-server:9092/cluster1?x=1' },
      /without credentials, query or fragment/,
    ],
    [
      { kubeconfigServerUrl: 'https://user-server:9092/cluster1#x' },
      /without credentials, query or fragment/,
    ],
    [{ kubeconfigServerUrl: 'user-server:9092' }, /must be an https:\/\/ URL/],
    [
      { kubeconfigServerUrl: 'https://user-server:9092/cluster1', kubeconfigCaPem: 'not a pem' },
      /kubeconfigCaPem is not a PEM certificate/,
    ],
    [{ kubeconfigCaPem: ca.certPem }, /kubeconfigCaPem goes with kubeconfigServerUrl/],
    [{ audiences: ['x'.repeat(300)] }, /longer than 253/],
    [{ tokenSecretCheckPeriodMs: 50 }, /tokenSecretCheckPeriodMs 50 must be ≥ 100/],
  ])('refuses %o', async (over, message) => {
    await expect(startServiceAccountAgent({ ...base, ...over })).rejects.toThrow(message);
  });

  it('needs the managed apiserver CA for ca.crt', async () => {
    const noCa = new KubeConfig();
    noCa.loadFromOptions({
      clusters: [{ name: 'm', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'm', token: 't' }],
      contexts: [{ name: 'm', cluster: 'm', user: 'm' }],
      currentContext: 'm',
    });
    await expect(startServiceAccountAgent({ ...base, managedKubeConfig: noCa })).rejects.toThrow(
      InvalidArgumentError,
    );
  });
});
