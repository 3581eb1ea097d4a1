// A controller's failed keys run again as soon as its apiserver is back (issue 11 item 5): a
// reconcile that writes to the hub fails while the hub is cut off and backs off (the work agent's
// queue goes up to 30 s); when the connection returns, the key must not wait out that backoff.
// The hub is the shared real kube-apiserver, reached through a TCP relay the test cuts.
import { describe, expect, it } from 'vitest';
import {
  Informer,
  type KubeObject,
  loadKubeconfig,
  ResourceClient,
  runController,
} from '../../src/kube/index.ts';
import { testEnv } from './fixtures/env.ts';
import { configMapResource, uniqueName } from './fixtures/helpers.ts';
import { capturedLog, longBackoff, msUntil, relayedHub } from './fixtures/relayed-hub.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const reconciledAnnotation = 'e2e.tether.dev/reconciled';
/** From restoring the relay to the failed key's write landing (without the wiring: its whole backoff). */
const RESUME_BOUND_MS = 3_000;
/** Restore once the key's next try is at least this far away. */
const LONG_BACKOFF_MS = 6_000;

const env = testEnv();
const admin = loadKubeconfig(env.hub.kubeconfigPath);
const configMaps = new ResourceClient<ConfigMap>(admin, configMapResource);
const { namespace, cleanup } = scratchNamespace(admin, 'controller-resume');

describe('controller resumes when its apiserver comes back', () => {
  it('runs a key that failed during the outage within 3 s of the connection returning, not after its backoff', async () => {
    const { relay, kc } = await relayedHub(env);
    cleanup(() => relay.close());
    const { log, lines } = capturedLog();
    const name = uniqueName('status');
    const set = uniqueName('set');
    await configMaps.create({ metadata: { name, namespace, labels: { 'e2e.tether.dev/set': set } } });
    // The reconcile writes back to the hub what it was told, as the work agent writes status.
    const relayed = new ResourceClient<ConfigMap>(kc, configMapResource);
    let desired = 'before';
    const informer = new Informer(relayed, {
      namespace,
      labelSelector: `e2e.tether.dev/set=${set}`,
      resyncPeriodMs: 0,
      log,
    });
    const controller = runController({
      name: 'status-writer',
      informers: [informer as unknown as Informer<KubeObject>],
      reconcile: async (key) => {
        const [ns, n] = key.split('/') as [string, string];
        const annotations = { [reconciledAnnotation]: desired };
        await relayed.patchMerge(n, { metadata: { annotations } }, ns, { timeoutMs: 5_000 });
      },
      queue: { baseDelayMs: 200, maxDelayMs: 30_000 },
      log,
    });
    cleanup(() => controller.stop());
    expect(await controller.ready).toBe(true);
    const written = async () =>
      (await configMaps.get(name, namespace))?.metadata?.annotations?.[reconciledAnnotation];
    await msUntil(performance.now(), async () => (await written()) === 'before', 'the first write');

    relay.cut();
    desired = 'during the outage';
    controller.queue.add(`${namespace}/${name}`);
    const line = await longBackoff(lines, LONG_BACKOFF_MS, 'the failing key');
    relay.restore();
    const restoredAt = performance.now();
    const resumeMs = await msUntil(
      restoredAt,
      async () => (await written()) === 'during the outage',
      'the failed write to land',
    );
    console.log(
      `[controller-resume] key in ${line.retryInMs} ms backoff: written ${resumeMs} ms after the connection returned`,
    );
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
  });
});
