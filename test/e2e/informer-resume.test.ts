// Informers resume promptly when their apiserver comes back (issue 11, items 5 and 8): a real hub
// kube-apiserver reached through a TCP relay the test cuts (connections reset, new ones refused)
// or silences (a black hole: nothing closes, no byte passes), then restores. What is measured is
// the time from restoring the relay to the informer's cache holding a change made on the server.
// Without the shared server health, an informer sits out its own backoff (up to 30 s) or a list
// hung on a dead connection (30 s request timeout) after the server is long back.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { Informer, type KubeObject, loadKubeconfig, ResourceClient } from '../../src/kube/index.ts';
import { ServerHealth } from '../../src/kube/server-health.ts';
import type { Logger } from '../../src/log.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { configMapResource, uniqueName } from './fixtures/helpers.ts';
import { capturedLog, longBackoff, msUntil, relayedHub as startRelayedHub } from './fixtures/relayed-hub.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };

/** From restoring the relay to the informer holding a change made meanwhile (old code: 6–30 s). */
const RESUME_BOUND_MS = 3_000;
/** The same after a black hole, where hung requests must be noticed and replaced too. */
const SILENCE_RESUME_BOUND_MS = 5_000;
/** Restore the cut relay once the informer's next retry is at least this far away. */
const LONG_BACKOFF_MS = 6_000;

const env = testEnv();
const admin = loadKubeconfig(env.hub.kubeconfigPath);
const configMaps = new ResourceClient<ConfigMap>(admin, configMapResource);
const { namespace, cleanup } = scratchNamespace(admin, 'informer-resume');
/** Each test watches only the ConfigMaps it made (the namespace also holds kube-root-ca.crt). */
const setLabel = 'e2e.tether.dev/set';

/** Every handler call, in order, as "add name", "update name data", "delete name". */
function recordEvents(informer: Informer<ConfigMap>): string[] {
  const events: string[] = [];
  const data = (cm: ConfigMap) => JSON.stringify(cm.data ?? {});
  informer.addHandlers({
    add: (cm) => events.push(`add ${cm.metadata?.name} ${data(cm)}`),
    update: (_old, cm) => events.push(`update ${cm.metadata?.name} ${data(cm)}`),
    delete: (cm) => events.push(`delete ${cm.metadata?.name}`),
  });
  return events;
}

function startInformer(
  kc: KubeConfig,
  set: string,
  options: { log: Logger; serverHealth?: ServerHealth; backoffMaxMs?: number; silenceTimeoutMs?: number },
): Informer<ConfigMap> {
  const informer = new Informer(new ResourceClient<ConfigMap>(kc, configMapResource), {
    namespace,
    labelSelector: `${setLabel}=${set}`,
    resyncPeriodMs: 0,
    ...options,
  });
  cleanup(() => informer.stop());
  return informer;
}

async function createConfigMap(set: string, name: string, value: string): Promise<void> {
  await configMaps.create({ metadata: { name, namespace, labels: { [setLabel]: set } }, data: { value } });
}

async function relayedHub() {
  const hub = await startRelayedHub(env);
  cleanup(() => hub.relay.close());
  return hub;
}

describe('informer resumes when its apiserver comes back', () => {
  it('after the connection is cut for long enough to back off 6 s or more, sees a new object within 3 s of restoring it', async () => {
    const { relay, kc } = await relayedHub();
    const { log, lines } = capturedLog();
    const set = uniqueName('cut');
    const informer = startInformer(kc, set, { log });
    const events = recordEvents(informer);
    informer.start();
    await informer.waitForSync(30_000);

    relay.cut();
    const cutAt = performance.now();
    const line = await longBackoff(lines, LONG_BACKOFF_MS, 'the informer');
    const outageMs = Math.round(performance.now() - cutAt);
    relay.restore();
    const restoredAt = performance.now();
    const name = uniqueName('after-cut');
    await createConfigMap(set, name, 'v1');
    const resumeMs = await msUntil(restoredAt, () => informer.getByName(name, namespace) !== undefined, name);
    console.log(
      `[informer-resume] cut ${outageMs} ms (backoff then ${line.retryInMs} ms): object seen ${resumeMs} ms after restore`,
    );
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    expect(events.filter((e) => e.startsWith(`add ${name} `))).toHaveLength(1);
  });

  it('after a black hole, notices the silent watch, re-establishes and delivers every change made meanwhile once', async () => {
    const { relay, kc } = await relayedHub();
    const { log, lines } = capturedLog();
    const silenceTimeoutMs = 3_000;
    const [kept, changed, removed, added, later] = ['kept', 'changed', 'removed', 'added', 'later'].map((p) =>
      uniqueName(`silence-${p}`),
    ) as [string, string, string, string, string];
    const set = uniqueName('silence');
    for (const name of [changed, removed]) await createConfigMap(set, name, 'v1');
    const informer = startInformer(kc, set, { log, silenceTimeoutMs });
    const events = recordEvents(informer);
    informer.start();
    await informer.waitForSync(30_000);
    // One object made after the list, so that the watch is known to be established and carrying.
    await createConfigMap(set, kept, 'v1');
    await msUntil(performance.now(), () => informer.getByName(kept, namespace) !== undefined, kept);
    expect([...events].sort()).toEqual([
      `add ${changed} {"value":"v1"}`,
      `add ${kept} {"value":"v1"}`,
      `add ${removed} {"value":"v1"}`,
    ]);

    relay.silence();
    const silencedAt = performance.now();
    await createConfigMap(set, added, 'v1');
    await configMaps.patchMerge(changed, { data: { value: 'v2' } }, namespace);
    await configMaps.delete(removed, namespace);
    // The established watch carries nothing now: the informer must give up on it by its silence
    // timeout, and then on the watch it resumed into the black hole.
    await pollUntil(() => lines.filter((l) => l.msg === 'watch silent: restarting it').length >= 2, {
      timeoutMs: 30_000,
      intervalMs: 50,
      description: 'the informer to notice two silent watches',
    }).catch((err: unknown) => {
      console.log(lines.map((l) => JSON.stringify(l)).join('\n'));
      throw err;
    });
    const noticedMs = Math.round(performance.now() - silencedAt);
    // Hold the black hole while the informer relists into it (its list hangs on a dead connection).
    await sleep(silenceTimeoutMs);
    relay.restore();
    const restoredAt = performance.now();
    const resumeMs = await msUntil(
      restoredAt,
      () =>
        informer.getByName(added, namespace) !== undefined &&
        informer.getByName(changed, namespace)?.data?.value === 'v2' &&
        informer.getByName(removed, namespace) === undefined,
      'the changes made during the silence',
    );
    // And the watch is live again: a change after restoring arrives by it.
    await createConfigMap(set, later, 'v1');
    await msUntil(performance.now(), () => informer.getByName(later, namespace) !== undefined, later);
    console.log(
      `[informer-resume] black hole: silent watch noticed after ${noticedMs} ms, changes seen ${resumeMs} ms after restore`,
    );
    expect(resumeMs).toBeLessThanOrEqual(SILENCE_RESUME_BOUND_MS);
    // Exactly one handler call per change: nothing lost, nothing twice (no resync is running).
    expect(events.slice(3).sort()).toEqual(
      [
        `add ${added} {"value":"v1"}`,
        `add ${later} {"value":"v1"}`,
        `delete ${removed}`,
        `update ${changed} {"value":"v2"}`,
      ].sort(),
    );
  });

  it('once its silence timeout caught a black hole, resumes within 3 s of restore, not at the next silence timeout', async () => {
    const { relay, kc } = await relayedHub();
    const { log, lines } = capturedLog();
    const set = uniqueName('quiet');
    const [before, during] = [uniqueName('quiet-before'), uniqueName('quiet-during')];
    const informer = startInformer(kc, set, { log, silenceTimeoutMs: 8_000 });
    const events = recordEvents(informer);
    informer.start();
    await informer.waitForSync(30_000);
    await createConfigMap(set, before, 'v1');
    await msUntil(performance.now(), () => informer.getByName(before, namespace) !== undefined, before);

    relay.silence();
    await createConfigMap(set, during, 'v1');
    await pollUntil(() => lines.some((l) => l.msg === 'watch silent: restarting it'), {
      timeoutMs: 30_000,
      intervalMs: 20,
      description: 'the informer to notice its silent watch',
    });
    // The watch it resumed is stuck in the black hole now; restore, and it must not wait 8 s more.
    relay.restore();
    const restoredAt = performance.now();
    const resumeMs = await msUntil(
      restoredAt,
      () => informer.getByName(during, namespace) !== undefined,
      during,
    );
    console.log(
      `[informer-resume] silence timeout caught the black hole: change seen ${resumeMs} ms after restore`,
    );
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    expect(events).toEqual([`add ${before} {"value":"v1"}`, `add ${during} {"value":"v1"}`]);
  });

  it('after a black hole another request to the server noticed, resumes its quiet watch at once, not at its silence timeout', async () => {
    const { relay, kc } = await relayedHub();
    const { log, lines } = capturedLog();
    const set = uniqueName('noticed');
    const [before, during] = [uniqueName('noticed-before'), uniqueName('noticed-during')];
    const informer = startInformer(kc, set, { log, silenceTimeoutMs: 120_000 });
    const events = recordEvents(informer);
    informer.start();
    await informer.waitForSync(30_000);
    await createConfigMap(set, before, 'v1');
    await msUntil(performance.now(), () => informer.getByName(before, namespace) !== undefined, before);

    relay.silence();
    await createConfigMap(set, during, 'v1');
    // A plain request through the same relay (a lease renewal, a status write) times out first.
    const other = new ResourceClient<ConfigMap>(kc, configMapResource);
    await expect(other.get(before, namespace, { timeoutMs: 1_000 })).rejects.toThrow(/no answer/);
    relay.restore();
    const restoredAt = performance.now();
    const resumeMs = await msUntil(
      restoredAt,
      () => informer.getByName(during, namespace) !== undefined,
      during,
    );
    console.log(
      `[informer-resume] black hole seen by another request: change seen ${resumeMs} ms after restore`,
    );
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    expect(lines.some((l) => l.msg === 'watch silent: restarting it')).toBe(false);
    expect(events).toEqual([`add ${before} {"value":"v1"}`, `add ${during} {"value":"v1"}`]);
  });

  it('through the real squid: when the hub apiserver behind it is cut off and comes back, sees a new object within 3 s', async () => {
    // agent → squid (the shared one, as agents reach the hub) → relay → hub apiserver: while the
    // relay is cut, squid answers CONNECT with an error, which must count as "unreachable" too.
    const { relay, kc } = await relayedHub();
    kc.clusters = kc.clusters.map((c) => ({ ...c, proxyUrl: env.tunnel.squidUrl }));
    const { log, lines } = capturedLog();
    const set = uniqueName('squid');
    const informer = startInformer(kc, set, { log });
    const events = recordEvents(informer);
    informer.start();
    await informer.waitForSync(30_000);

    relay.cut();
    const line = await longBackoff(lines, LONG_BACKOFF_MS, 'the informer behind squid');
    relay.restore();
    const restoredAt = performance.now();
    const name = uniqueName('after-squid-outage');
    await createConfigMap(set, name, 'v1');
    const resumeMs = await msUntil(restoredAt, () => informer.getByName(name, namespace) !== undefined, name);
    console.log(
      `[informer-resume] through squid (${line.err}): backoff then ${line.retryInMs} ms, object seen ${resumeMs} ms after restore`,
    );
    expect(resumeMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
    expect(events).toEqual([`add ${name} {"value":"v1"}`]);
    // It did go through squid (tunnels are logged when they close: the cut closed them).
    const relayAuthority = new URL(relay.url).host;
    expect(readFileSync(env.tunnel.squidAccessLogPath, 'utf8')).toContain(`CONNECT ${relayAuthority}`);
  });

  it("wakes an informer in long backoff when another informer's request to the same server succeeds", async () => {
    const { relay, kc } = await relayedHub();
    // Probing off: only the other informer's success can bring the server back.
    const serverHealth = new ServerHealth({ probe: null });
    const fast = capturedLog();
    const slow = capturedLog();
    relay.cut();
    const set = uniqueName('shared');
    const quick = startInformer(kc, set, { log: fast.log, serverHealth, backoffMaxMs: 1_000 });
    const patient = startInformer(kc, set, { log: slow.log, serverHealth });
    quick.start();
    patient.start();
    const line = await longBackoff(slow.lines, LONG_BACKOFF_MS, 'the informer with the default backoff');
    relay.restore();
    const restoredAt = performance.now();
    const quickMs = await msUntil(restoredAt, () => quick.hasSynced(), 'the quick informer to sync');
    const patientMs = await msUntil(restoredAt, () => patient.hasSynced(), 'the patient informer to sync');
    console.log(
      `[informer-resume] shared backoff: patient informer (next try in ${line.retryInMs} ms) synced ${patientMs} ms after restore, ${patientMs - quickMs} ms after the quick one`,
    );
    expect(patientMs).toBeLessThanOrEqual(RESUME_BOUND_MS);
  });
});
