// The credential an in-process add-on agent starts from: the registration Secret's certificate and
// key, and its kubeconfig with them in-line; what is missing is said, not guessed.
import { describe, expect, it } from 'vitest';
import { addonHubKubeconfig, credentialOf } from '../../src/addon/inprocess/runner.ts';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const ca = '-----BEGIN CERTIFICATE-----\nhub-ca\n-----END CERTIFICATE-----\n';
const kubeconfig = [
  'apiVersion: v1',
  'kind: Config',
  'clusters:',
  `- name: hub\n  cluster:\n    server: https://hub.example:6443\n    certificate-authority-data: ${b64(ca)}\n    proxy-url: http://squid.example:3128`,
  'users:',
  '- name: user\n  user:\n    client-certificate: tls.crt\n    client-key: tls.key',
  'contexts:',
  '- name: default-context\n  context:\n    cluster: hub\n    user: user',
  'current-context: default-context',
  '',
].join('\n');

describe('in-process add-on credential', () => {
  it("builds the add-on's hub kubeconfig from the Secret: its server, CA and proxy, the certificate in-line", () => {
    const credential = credentialOf({
      'tls.crt': b64('CERT'),
      'tls.key': b64('KEY'),
      kubeconfig: b64(kubeconfig),
    });
    expect(credential).toEqual({ certPem: 'CERT', keyPem: 'KEY', kubeconfigYaml: kubeconfig });
    const kc = addonHubKubeconfig('managed-serviceaccount', credential);
    const cluster = kc.getCurrentCluster();
    expect(cluster?.server).toBe('https://hub.example:6443');
    expect(cluster?.proxyUrl).toBe('http://squid.example:3128');
    expect(Buffer.from(cluster?.caData ?? '', 'base64').toString()).toBe(ca);
    const user = kc.getCurrentUser();
    expect(Buffer.from(user?.certData ?? '', 'base64').toString()).toBe('CERT');
    expect(user?.certFile).toBeUndefined();
  });

  it('a Secret without its certificate or kubeconfig is refused with what is missing', () => {
    expect(() => credentialOf({ 'tls.crt': b64('CERT') })).toThrow(/no tls.crt and tls.key yet/);
    expect(() =>
      addonHubKubeconfig(
        'managed-serviceaccount',
        credentialOf({ 'tls.crt': b64('C'), 'tls.key': b64('K') }),
      ),
    ).toThrow(/managed-serviceaccount: the Secret has no kubeconfig/);
    expect(() =>
      addonHubKubeconfig('managed-serviceaccount', {
        certPem: 'C',
        keyPem: 'K',
        kubeconfigYaml: 'clusters: [',
      }),
    ).toThrow(/cannot parse/);
  });
});
