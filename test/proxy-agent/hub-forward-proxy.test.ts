import { getCACertificates } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { tunnelForwardProxy } from '../../src/proxy-agent/hub-forward-proxy.ts';

const bundle =
  '-----BEGIN CERTIFICATE-----\nhub\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nproxy\n-----END CERTIFICATE-----\n';

describe('the forward proxy the tunnel takes', () => {
  it('follows the hub kubeconfig’s https proxy-url and trusts its CA bundle next to the defaults (clusteradm join --proxy-ca-file)', () => {
    const way = tunnelForwardProxy({}, { proxyUrl: 'https://proxy:3129', caPem: bundle });
    expect(way.proxyUrl).toBe('https://proxy:3129');
    expect(way.proxyCa).toEqual([bundle, ...getCACertificates('default')]);
  });

  it('takes --proxy-url and --proxy-ca-file over the kubeconfig', () => {
    expect(
      tunnelForwardProxy(
        { proxyUrl: 'https://flag:1', proxyCaPem: 'flag-ca' },
        { proxyUrl: 'https://kc:2', caPem: bundle },
      ),
    ).toEqual({ proxyUrl: 'https://flag:1', proxyCa: 'flag-ca' });
  });

  it('does not lend the kubeconfig’s CA to a proxy the flag names', () => {
    expect(
      tunnelForwardProxy({ proxyUrl: 'https://flag:1' }, { proxyUrl: 'https://kc:2', caPem: bundle }),
    ).toEqual({
      proxyUrl: 'https://flag:1',
    });
  });

  it('leaves an http:// proxy and a kubeconfig without proxy-url as they were (HTTPS_PROXY decides)', () => {
    expect(tunnelForwardProxy({}, { proxyUrl: 'http://proxy:3128', caPem: bundle })).toEqual({
      proxyUrl: 'http://proxy:3128',
    });
    expect(tunnelForwardProxy({}, { caPem: bundle })).toEqual({ proxyUrl: undefined });
    expect(tunnelForwardProxy({}, undefined)).toEqual({ proxyUrl: undefined });
  });
});
