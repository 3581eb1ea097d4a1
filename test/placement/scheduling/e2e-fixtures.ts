// Shared by the placement e2e files (test/e2e/placement-scheduling*.test.ts): admin clients for the
// shared hub, and ManagedClusters, sets, namespaces and Placements that clean up after themselves.
// Clusters are plain ManagedCluster objects (no agent): scheduling reads nothing else.
import type { ManagedCluster, Taint } from '../../../src/api/cluster.ts';
import { managedClusterResource } from '../../../src/api/cluster.ts';
import {
  type AddOnPlacementScore,
  addOnPlacementScoreResource,
  clusterSetLabel,
  type ManagedClusterSet,
  type ManagedClusterSetBinding,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  type Placement,
  type PlacementDecision,
  type PlacementSpec,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../../src/api/placement.ts';
import { type KubeObject, loadKubeconfig, ResourceClient } from '../../../src/kube/index.ts';
import { pollUntil } from '../../../src/wait.ts';
import { testEnv } from '../../e2e/env.ts';
import { uniqueName } from '../../e2e/helpers.ts';
import { Cleanups } from '../../registration/hub/e2e-fixtures.ts';

export { Cleanups };
export const env = testEnv();
export const hub = loadKubeconfig(env.hub.kubeconfigPath);

export const admin = {
  clusters: new ResourceClient<ManagedCluster>(hub, managedClusterResource),
  sets: new ResourceClient<ManagedClusterSet>(hub, managedClusterSetResource),
  bindings: new ResourceClient<ManagedClusterSetBinding>(hub, managedClusterSetBindingResource),
  placements: new ResourceClient<Placement>(hub, placementResource),
  decisions: new ResourceClient<PlacementDecision>(hub, placementDecisionResource),
  scores: new ResourceClient<AddOnPlacementScore>(hub, addOnPlacementScoreResource),
  namespaces: new ResourceClient<KubeObject>(hub, {
    group: '',
    version: 'v1',
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
  }),
  events: new ResourceClient<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(hub, {
    group: '',
    version: 'v1',
    plural: 'events',
    kind: 'Event',
    namespaced: true,
  }),
};

export function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  description: string,
  timeoutMs = 30_000,
): Promise<T> {
  return pollUntil(check, { timeoutMs, intervalMs: 100, description });
}

export async function createNamespace(cleanups: Cleanups, prefix = 'placement'): Promise<string> {
  const name = uniqueName(prefix);
  cleanups.add(() => admin.namespaces.delete(name, undefined, { ignoreNotFound: true }));
  await admin.namespaces.create({ metadata: { name } });
  return name;
}

/** An exclusive-label ManagedClusterSet bound to `namespace`. */
export async function createBoundSet(cleanups: Cleanups, namespace: string): Promise<string> {
  const name = uniqueName('set');
  cleanups.add(() => admin.sets.delete(name, undefined, { ignoreNotFound: true }));
  await admin.sets.create({
    metadata: { name },
    spec: { clusterSelector: { selectorType: 'ExclusiveClusterSetLabel' } },
  });
  await admin.bindings.create({ metadata: { name, namespace }, spec: { clusterSet: name } });
  return name;
}

export interface ClusterOptions {
  labels?: Record<string, string>;
  taints?: Taint[];
}

/** ManagedClusters in `set` (name order = creation order), deleted by `cleanups`. */
export async function createClusters(
  cleanups: Cleanups,
  set: string,
  count: number,
  opts: ClusterOptions = {},
): Promise<string[]> {
  const prefix = uniqueName('mc');
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  cleanups.add(async () => {
    for (const name of names) await admin.clusters.delete(name, undefined, { ignoreNotFound: true });
  });
  for (const name of names) {
    await admin.clusters.create({
      metadata: { name, labels: { [clusterSetLabel]: set, ...opts.labels } },
      spec: { hubAcceptsClient: true, taints: opts.taints },
    });
  }
  return names;
}

export async function createPlacement(
  namespace: string,
  spec: PlacementSpec,
  name = 'placement',
): Promise<string> {
  await admin.placements.create({ metadata: { name, namespace }, spec });
  return name;
}

/** The PlacementDecisions of a placement, by name. */
export async function decisionsOf(namespace: string, placement: string): Promise<PlacementDecision[]> {
  const list = await admin.decisions.list({ namespace, labelSelector: `${placementLabel}=${placement}` });
  return list.items.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
}

/** The clusters a placement's decisions name, sorted. */
export async function decidedClusters(namespace: string, placement: string): Promise<string[]> {
  const decisions = await decisionsOf(namespace, placement);
  return decisions.flatMap((d) => (d.status?.decisions ?? []).map((c) => c.clusterName)).sort();
}

/** Wait until the placement's decisions name exactly `expected`. */
export function waitForDecisions(
  namespace: string,
  placement: string,
  expected: string[],
): Promise<string[]> {
  const want = [...expected].sort().join(',');
  return waitFor(async () => {
    const got = await decidedClusters(namespace, placement);
    return got.join(',') === want ? got : undefined;
  }, `decisions of ${namespace}/${placement} to be [${want}]`);
}
