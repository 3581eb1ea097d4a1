// clusteradm's `create work NAME -f … --placement ns/name [--overwrite] [-r/--replicaset]` on the
// hub: without --replicaset, the work goes to the clusters the Placement's PlacementDecisions name
// that do not have a work of that name yet (added = decided − existing; existing works are never
// touched), and with --overwrite the work is deleted where it is no longer decided; with
// --replicaset, one ManifestWorkReplicaSet NAME in the Placement's namespace carries the manifests
// and the controller does the rest. Talks only to the hub; ManifestWorks go through src/work/hub.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type Manifest,
  type ManifestWork,
  type ManifestWorkReplicaSet,
  manifestWorkReplicaSetResource,
  manifestWorkResource,
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../api/index.ts';
import { InvalidArgumentError, TetherError } from '../../errors.ts';
import { isAlreadyExists, isConflict, ResourceClient } from '../../kube/index.ts';
import { type CreateAction, createManifestWork, deleteManifestWork } from '../../work/hub/index.ts';

export interface PlacementRef {
  namespace: string;
  name: string;
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** `ns/name` as clusteradm's --placement takes it. */
export function parsePlacementRef(text: string): PlacementRef {
  const [namespace = '', name = '', ...rest] = text.split('/');
  if (rest.length > 0 || !dnsLabel.test(namespace) || !dnsSubdomain.test(name)) {
    throw new InvalidArgumentError(`--placement "${text}" must be <namespace>/<name> of a Placement`);
  }
  return { namespace, name };
}

export interface WorkByPlacementResult {
  cluster: string;
  action: CreateAction | 'deleted';
}

/** The clusters a Placement's PlacementDecisions name, sorted; throws when the Placement does not exist. */
export async function decidedClusters(hubKc: KubeConfig, ref: PlacementRef): Promise<string[]> {
  const placement = await new ResourceClient<Placement>(hubKc, placementResource).get(
    ref.name,
    ref.namespace,
  );
  if (!placement) {
    throw new InvalidArgumentError(`Placement ${ref.namespace}/${ref.name} not found`);
  }
  const { items } = await new ResourceClient<PlacementDecision>(hubKc, placementDecisionResource).list({
    namespace: ref.namespace,
    labelSelector: `${placementLabel}=${ref.name}`,
  });
  const clusters = new Set<string>();
  for (const d of items)
    for (const c of d.status?.decisions ?? []) if (c.clusterName) clusters.add(c.clusterName);
  return [...clusters].sort();
}

/**
 * Create the work `name` in every decided cluster that has none; with `overwrite`, delete it from
 * clusters that have one but are no longer decided. Works that exist stay as they are.
 */
export async function createWorkByPlacement(
  hubKc: KubeConfig,
  opts: { name: string; placement: PlacementRef; manifests: readonly Manifest[]; overwrite?: boolean },
): Promise<WorkByPlacementResult[]> {
  const decided = await decidedClusters(hubKc, opts.placement);
  const { items } = await new ResourceClient<ManifestWork>(hubKc, manifestWorkResource).list({
    fieldSelector: `metadata.name=${opts.name}`,
  });
  const existing = new Set(items.map((w) => w.metadata.namespace ?? ''));
  const added = decided.filter((c) => !existing.has(c));
  const removed = [...existing].filter((c) => !decided.includes(c)).sort();
  const results: WorkByPlacementResult[] = [];
  if (added.length > 0) {
    results.push(
      ...(await createManifestWork(hubKc, { name: opts.name, clusters: added, manifests: opts.manifests })),
    );
  }
  if (opts.overwrite && removed.length > 0) {
    for (const r of await deleteManifestWork(hubKc, opts.name, removed)) {
      if (r.deleted) results.push({ cluster: r.cluster, action: 'deleted' });
    }
  }
  return results;
}

/**
 * The ManifestWorkReplicaSet `name` in the Placement's namespace with `manifests` and one
 * placementRef (no rolloutStrategy: All); an existing one is an error unless `overwrite`, which
 * replaces its manifests and placementRefs.
 */
export async function createManifestWorkReplicaSet(
  hubKc: KubeConfig,
  opts: { name: string; placement: PlacementRef; manifests: readonly Manifest[]; overwrite?: boolean },
): Promise<CreateAction> {
  if (!dnsSubdomain.test(opts.name))
    throw new InvalidArgumentError(`work name "${opts.name}" must be a DNS subdomain`);
  if (opts.manifests.length === 0)
    throw new InvalidArgumentError('a ManifestWork needs at least one manifest');
  const client = new ResourceClient<ManifestWorkReplicaSet>(hubKc, manifestWorkReplicaSetResource);
  const { namespace } = opts.placement;
  const spec = {
    manifestWorkTemplate: { workload: { manifests: structuredClone([...opts.manifests]) } },
    placementRefs: [{ name: opts.placement.name }],
  };
  try {
    await client.create({
      metadata: { name: opts.name, namespace },
      spec: { ...spec, cascadeDeletionPolicy: 'Background' },
    });
    return 'created';
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  if (!opts.overwrite) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `ManifestWorkReplicaSet ${namespace}/${opts.name} already exists; pass --overwrite to replace it`,
    );
  }
  for (let attempt = 0; ; attempt++) {
    const current = await client.get(opts.name, namespace);
    if (!current) return createManifestWorkReplicaSet(hubKc, opts);
    const next = { ...current.spec, ...spec };
    if (JSON.stringify(next) === JSON.stringify(current.spec)) return 'unchanged';
    try {
      await client.replace({ ...current, spec: next });
      return 'updated';
    } catch (err) {
      if (!isConflict(err) || attempt >= 4) throw err;
    }
  }
}
