import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { TimeoutError } from '../../src/errors.ts';
import { Informer } from '../../src/kube/informer.ts';
import { ResourceClient } from '../../src/kube/resources.ts';

// Never started: nothing here talks to an apiserver, so the informer never syncs.
function unsyncedInformer(): Informer {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const configMaps = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
  return new Informer(new ResourceClient(kc, configMaps));
}

async function elapsed(work: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const start = performance.now();
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - start };
}

describe('Informer.waitForSync', () => {
  it('throws at once for a signal that is already aborted, not after timeoutMs', async () => {
    const { err, ms } = await elapsed(unsyncedInformer().waitForSync(10_000, AbortSignal.abort()));
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toBe('gave up waiting for configmaps informer to sync');
    expect(ms).toBeLessThan(1000);
  });

  it('throws as soon as the signal aborts during the wait', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const { err, ms } = await elapsed(unsyncedInformer().waitForSync(10_000, controller.signal));
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as Error).message).toBe('gave up waiting for configmaps informer to sync');
    expect(ms).toBeLessThan(1000);
  });

  it('throws after timeoutMs without a signal, and at once once the informer is stopped', async () => {
    const informer = unsyncedInformer();
    const timedOut = await elapsed(informer.waitForSync(30));
    expect(timedOut.err).toBeInstanceOf(TimeoutError);
    expect((timedOut.err as Error).message).toMatch(/did not sync within 30 ms/);
    await informer.stop();
    const stopped = await elapsed(informer.waitForSync(10_000));
    expect((stopped.err as Error).message).toBe('configmaps informer was stopped before it synced');
    expect(stopped.ms).toBeLessThan(1000);
  });
});
