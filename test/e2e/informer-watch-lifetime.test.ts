// How long an informer's watch lives on a real hub kube-apiserver (issue 14): each watch asks for a
// timeoutSeconds between 5 and 10 minutes (client-go's reflector), so a quiet informer sends one
// watch request, not one every 25 s as when client-node's 30 s inactivity abort bounded it. Its
// silence timeout (300 s) lies above the gaps between the apiserver's bookmarks to a quiet watch
// (121 s measured here), so quiet alone never restarts it. (That a silent watch is given up is
// test/e2e/informer-resume.test.ts's: a black-holed relay with a 3 s silence timeout.) The quiet
// lasts 40 s: past client-node's 30 s inactivity abort (the library's default, what ended every quiet
// watch), not tether's own periods (timeoutSeconds 300-600 s, silence 300 s), which no test waits.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Informer, type KubeObject, loadKubeconfig, ResourceClient } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { configMapResource, uniqueName } from './fixtures/helpers.ts';
import { capturedLog } from './fixtures/relayed-hub.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

/** Longer than client-node's 30 s inactivity abort, with room for timer slack on a busy machine. */
const QUIET_MS = 40_000;

const env = testEnv();
const admin = loadKubeconfig(env.hub.kubeconfigPath);
const configMaps = new ResourceClient<KubeObject>(admin, configMapResource);
const { namespace, cleanup } = scratchNamespace(admin, 'watch-lifetime');

describe('informer watch lifetime', () => {
  it("keeps one watch open through 40 quiet seconds (past client-node's 30 s inactivity abort) with the default silence timeout and still delivers a change made then", async () => {
    const { log, lines } = capturedLog();
    const set = uniqueName('quiet');
    const informer = new Informer(new ResourceClient<KubeObject>(admin, configMapResource), {
      namespace,
      labelSelector: `e2e.tether.dev/set=${set}`,
      resyncPeriodMs: 0,
      log,
    });
    cleanup(() => informer.stop());
    informer.start();
    await informer.waitForSync(30_000);
    await pollUntil(() => informer.watchRequests === 1, {
      timeoutMs: 10_000,
      intervalMs: 50,
      description: 'the first watch to start',
    });

    // Time passing with nothing to watch is what this test is about: no condition to poll for.
    await sleep(QUIET_MS);
    const silent = lines.filter((l) => l.msg === 'watch silent: restarting it');
    expect(silent).toEqual([]);
    expect(informer.watchRequests).toBe(1);

    const name = uniqueName('after-quiet');
    await configMaps.create({ metadata: { name, namespace, labels: { 'e2e.tether.dev/set': set } } });
    await pollUntil(() => informer.getByName(name, namespace) !== undefined, {
      timeoutMs: 10_000,
      intervalMs: 50,
      description: `${name} in the informer's cache`,
    });
    expect(informer.watchRequests).toBe(1);
  }, 120_000);
});
