// Shared by the ManifestWorkReplicaSet and work-by-placement e2e files: a Placement with
// hand-written PlacementDecisions (OCM's labels and status.decisions; no scheduler runs), cluster
// namespaces without ManagedClusters or agents, work status written as an agent would, and a
// ManifestWorkReplicaSet controller that stops with the file.
import {
  decisionGroupIndexLabel,
  decisionGroupNameLabel,
  type Manifest,
  type ManifestWork,
  type ManifestWorkReplicaSet,
  manifestWorkReplicaSetResource,
  manifestWorkResource,
  placementDecisionName,
  placementLabel,
} from '../../src/api/index.ts';
import { type Condition, formatTime, ResourceClient } from '../../src/kube/index.ts';
import {
  type ManifestWorkReplicaSetController,
  startManifestWorkReplicaSetController,
} from '../../src/placement/hub/manifestworkreplicaset-controller.ts';
import { admin, Cleanups, createNamespace, hub, waitFor } from '../placement/e2e-fixtures.ts';
import { uniqueName } from './helpers.ts';

export { admin, Cleanups, createNamespace, hub, uniqueName, waitFor };

export const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
export const replicaSets = new ResourceClient<ManifestWorkReplicaSet>(hub, manifestWorkReplicaSetResource);

export function configMapManifest(name: string, data: Record<string, string> = { a: '1' }): Manifest {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data } as Manifest;
}

/** A controller on the shared hub; stopped by `cleanups`. */
export async function startTestController(cleanups: Cleanups): Promise<ManifestWorkReplicaSetController> {
  const controller = startManifestWorkReplicaSetController({ kubeconfig: hub });
  cleanups.add(() => controller.stop());
  if (!(await controller.ready)) throw new Error('ManifestWorkReplicaSet controller did not start');
  return controller;
}

/** `count` cluster namespaces (named like clusters); deleted by `cleanups`. */
export async function createClusterNamespaces(cleanups: Cleanups, count: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < count; i++) names.push(await createNamespace(cleanups, 'mwc'));
  return names.sort();
}

/** A Placement `name` in `namespace` (its spec is never scheduled here); deleted by `cleanups`. */
export async function createPlacement(cleanups: Cleanups, namespace: string, name = uniqueName('pl')) {
  cleanups.add(() => admin.placements.delete(name, namespace, { ignoreNotFound: true }));
  await admin.placements.create({ metadata: { name, namespace }, spec: {} });
  return name;
}

/**
 * Set decision group `groupIndex` (PlacementDecision `<placement>-decision-<groupIndex+1>`) of a
 * Placement to `clusters`, creating it with OCM's labels when missing.
 */
export async function setDecisions(
  namespace: string,
  placement: string,
  clusters: readonly string[],
  groupIndex = 0,
  groupName = '',
): Promise<void> {
  const name = placementDecisionName(placement, groupIndex + 1);
  if (!(await admin.decisions.get(name, namespace))) {
    await admin.decisions.create({
      metadata: {
        name,
        namespace,
        labels: {
          [placementLabel]: placement,
          [decisionGroupIndexLabel]: String(groupIndex),
          [decisionGroupNameLabel]: groupName,
        },
      },
    });
  }
  await admin.decisions.patchStatus(
    name,
    { status: { decisions: clusters.map((clusterName) => ({ clusterName, reason: '' })) } },
    namespace,
  );
}

/** Write Applied / Available (and optionally Progressing) on a work as the agent would, for its generation. */
export async function reportWork(
  cluster: string,
  name: string,
  state: { available: boolean; progressing?: boolean },
): Promise<void> {
  const work = await works.get(name, cluster);
  if (!work) throw new Error(`ManifestWork ${cluster}/${name} not found`);
  const generation = work.metadata.generation ?? 1;
  const now = formatTime(new Date());
  const cond = (type: string, status: boolean): Condition => ({
    type,
    status: status ? 'True' : 'False',
    reason: status ? type : `Not${type}`,
    message: '',
    lastTransitionTime: now,
    observedGeneration: generation,
  });
  const conditions = [cond('Applied', true), cond('Available', state.available)];
  if (state.progressing !== undefined) conditions.push(cond('Progressing', state.progressing));
  await works.patchStatus(name, { status: { conditions } }, cluster);
}

/** Cluster namespaces that hold a work `name`, sorted. */
export async function clustersWithWork(name: string, candidates: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const c of candidates) if (await works.get(name, c)) found.push(c);
  return found;
}

export const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);
