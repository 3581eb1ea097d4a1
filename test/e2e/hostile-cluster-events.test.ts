// Issue 23, a hostile managed cluster flooding its hub namespace with Events, both core/v1 and
// events.k8s.io/v1 (its agent's role may create both, as OCM's does). No hub component lists or
// watches Events (test/install/manifests.test.ts pins that for every hub role), so nothing in the
// hub buffers them; the apiserver keeps them for its --event-ttl (1 h) and the hub keeps serving
// other clusters meanwhile. The rate itself is the hub apiserver's to limit (docs/security.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, ResourceClient, type ResourceDescriptor } from '../../src/kube/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { whileAttacking } from './fixtures/hostile-cluster.ts';
import {
  admin,
  agentKubeconfig,
  Cleanups,
  createCluster,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const scope = uniqueName('hostile-events');
const cleanups = new Cleanups();
beforeAll(() => startScopedHub(cleanups, scope, { leaseGraceFactor: 1 }));
afterAll(() => cleanups.run());

const coreEvents: ResourceDescriptor = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
const eventsV1: ResourceDescriptor = { ...coreEvents, group: 'events.k8s.io' };

describe('a hostile managed cluster flooding Events', () => {
  it('a managed cluster flooding its namespace with 2 000 Events does not slow the hub for other clusters', async () => {
    const attacker = await createCluster(cleanups, scope);
    const kc = await agentKubeconfig(attacker);
    const core = new ResourceClient<KubeObject>(kc, coreEvents);
    const v1 = new ResourceClient<KubeObject>(kc, eventsV1);
    const now = new Date().toISOString();
    const involved = { apiVersion: 'v1', kind: 'ConfigMap', name: 'flood', namespace: attacker };
    const coreEvent = (i: number) => ({
      metadata: { name: `flood-core-${i}`, namespace: attacker },
      involvedObject: involved,
      reason: 'Flood',
      message: 'x'.repeat(1024),
      type: 'Warning',
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      source: { component: 'attacker' },
    });
    const v1Event = (i: number) => ({
      metadata: { name: `flood-v1-${i}`, namespace: attacker },
      regarding: involved,
      reason: 'Flood',
      note: 'x'.repeat(1024),
      type: 'Warning',
      action: 'Flood',
      eventTime: now.replace('Z', '000Z'),
      reportingController: 'attacker.example.com/flood',
      reportingInstance: 'attacker',
    });
    await waitFor(
      () => core.create(coreEvent(0)).then(() => true),
      `the hub to grant ${attacker}'s agent its Event rights`,
    );

    const parallel = 50;
    let next = 1;
    const round = () => {
      const first = next;
      next += parallel;
      return Promise.all(
        Array.from({ length: parallel }, (_, i) =>
          i % 2 === 0 ? core.create(coreEvent(first + i)) : v1.create(v1Event(first + i)),
        ),
      );
    };
    const floodStart = Date.now();
    const served = await whileAttacking(cleanups, scope, [round], 2_000 / parallel);
    const floodMs = Date.now() - floodStart;
    console.log(`${next - 1} events in ${floodMs} ms while the hub served: ${JSON.stringify(served)}`);
    expect(next - 1).toBeGreaterThanOrEqual(2_000);
    expect(served.acceptedMs).toBeLessThan(15_000);

    // They all landed in the attacker's own namespace, nowhere else.
    const stored = await new ResourceClient<KubeObject>(admin.clusters.kubeconfig, coreEvents).list({
      namespace: attacker,
    });
    expect(stored.items.length).toBeGreaterThanOrEqual(2_000);
  });
});
