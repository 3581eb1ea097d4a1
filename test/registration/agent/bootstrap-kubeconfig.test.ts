// Which proxy the agent's hub connections use: the proxy option, else the bootstrap kubeconfig's
// proxy-url, else HTTPS_PROXY/NO_PROXY; only the first two are written into the hub kubeconfig.
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidKubeconfigError } from '../../../src/errors.ts';
import { kubeconfigFromParts } from '../../../src/kube/index.ts';
import { createCertificateAuthority } from '../../../src/pki/index.ts';
import { bootstrapFromKubeConfig } from '../../../src/registration/agent/bootstrap-kubeconfig.ts';

let caPem: string;
const server = 'https://hub.example.com:6443';
const env = { HTTPS_PROXY: 'http://env-proxy.example.com:3128' };
const bootstrap = (proxyUrl?: string) =>
  kubeconfigFromParts({
    name: 'hub',
    server,
    caPem,
    token: 'bootstrap-token',
    ...(proxyUrl ? { proxyUrl } : {}),
  });

beforeAll(async () => {
  caPem = (await createCertificateAuthority('hub-ca')).certPem;
});

describe('bootstrap kubeconfig', () => {
  it('takes server and CA for the hub kubeconfig', () => {
    const b = bootstrapFromKubeConfig(bootstrap(), 'test', { proxyEnv: {} });
    expect(b.hub).toEqual({ server, caPem });
  });

  it('keeps its proxy-url for hub calls and for the stored hub kubeconfig', () => {
    const b = bootstrapFromKubeConfig(bootstrap('http://squid.example.com:3128'), 'test', { proxyEnv: env });
    expect(b.kubeconfig.getCurrentCluster()?.proxyUrl).toBe('http://squid.example.com:3128');
    expect(b.hub.proxyUrl).toBe('http://squid.example.com:3128');
  });

  it('lets the proxy option override the kubeconfig', () => {
    const b = bootstrapFromKubeConfig(bootstrap('http://squid.example.com:3128'), 'test', {
      proxyUrl: 'https://corp-proxy.example.com:8443',
      proxyEnv: env,
    });
    expect(b.kubeconfig.getCurrentCluster()?.proxyUrl).toBe('https://corp-proxy.example.com:8443');
    expect(b.hub.proxyUrl).toBe('https://corp-proxy.example.com:8443');
  });

  it('uses HTTPS_PROXY for calls unless NO_PROXY matches, without writing it into the hub kubeconfig', () => {
    const viaEnv = bootstrapFromKubeConfig(bootstrap(), 'test', { proxyEnv: env });
    expect(viaEnv.kubeconfig.getCurrentCluster()?.proxyUrl).toBe(env.HTTPS_PROXY);
    expect(viaEnv.hub.proxyUrl).toBeUndefined();
    const excluded = bootstrapFromKubeConfig(bootstrap(), 'test', {
      proxyEnv: { ...env, NO_PROXY: '.example.com' },
    });
    expect(excluded.kubeconfig.getCurrentCluster()?.proxyUrl).toBeFalsy();
  });

  it('refuses a bootstrap kubeconfig without the hub CA', () => {
    const kc = bootstrap();
    kc.clusters = kc.clusters.map((c) => ({ ...c, caData: undefined }));
    expect(() => bootstrapFromKubeConfig(kc, 'test', { proxyEnv: {} })).toThrow(InvalidKubeconfigError);
  });
});
