import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { cachedDispatcherCount, closeCachedDispatchers } from '../../src/kube/index.ts';

type WithDispatcher = { createDispatcher(cluster: unknown, opts: unknown): unknown };

function kubeConfig(server: string, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'c', server, caData: Buffer.from('not-a-real-ca').toString('base64'), skipTLSVerify: false },
    ],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

afterEach(() => closeCachedDispatchers());

describe('client-node dispatcher cache', () => {
  it('reuses one dispatcher for identical TLS settings and builds another for different ones', async () => {
    await closeCachedDispatchers();
    const a = kubeConfig('https://127.0.0.1:6443', 't1') as unknown as WithDispatcher;
    const opts = { ca: Buffer.from('ca-1') };
    const first = a.createDispatcher((a as unknown as KubeConfig).getCurrentCluster(), opts);
    const second = a.createDispatcher((a as unknown as KubeConfig).getCurrentCluster(), {
      ca: Buffer.from('ca-1'),
    });
    expect(first).toBeDefined();
    expect(second).toBe(first);
    const other = a.createDispatcher((a as unknown as KubeConfig).getCurrentCluster(), {
      ca: Buffer.from('ca-2'),
    });
    expect(other).not.toBe(first);
    expect(cachedDispatcherCount()).toBe(2);
  });
});
