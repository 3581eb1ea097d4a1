// Hub-side ManifestWork operations for the CLI (clusteradm's `create work`, `get works`,
// `delete work`): create or overwrite one work in several cluster namespaces, list a cluster's
// works with their Applied / Available state, delete a work from clusters. Talks only to the hub.
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type Manifest,
  type ManifestWork,
  ManifestWorkCondition,
  type ManifestWorkSpec,
  manifestWorkResource,
} from '../../api/index.ts';
import { InvalidArgumentError, TetherError } from '../../errors.ts';
import { formatAge } from '../../kube/human-duration.ts';
import { findCondition, isAlreadyExists, isConflict, ResourceClient } from '../../kube/index.ts';

export interface CreateManifestWorkOptions {
  name: string;
  /** cluster names = the namespaces on the hub the work goes into */
  clusters: readonly string[];
  manifests: readonly Manifest[];
  /** replace the manifests of a work that already exists (otherwise that is an error) */
  overwrite?: boolean;
}

export type CreateAction = 'created' | 'updated' | 'unchanged';

export interface CreateManifestWorkResult {
  cluster: string;
  action: CreateAction;
}

export interface ManifestWorkRow {
  name: string;
  /** the Applied condition's status: True / False / Unknown, '' before the agent reported */
  applied: string;
  available: string;
  /** kubectl-style age, e.g. 45s, 12m, 3h, 5d */
  age: string;
  createdAt?: string;
}

export interface DeleteManifestWorkResult {
  cluster: string;
  /** false when there was no such work */
  deleted: boolean;
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

function worksClient(hubKc: KubeConfig): ResourceClient<ManifestWork> {
  return new ResourceClient<ManifestWork>(hubKc, manifestWorkResource);
}

function checkName(name: string): void {
  // 253 minus the AppliedManifestWork's "<64 hex>-" prefix, as OCM's webhook requires.
  if (!dnsSubdomain.test(name) || name.length > 188) {
    throw new InvalidArgumentError(`work name "${name}" must be a DNS subdomain of at most 188 characters`);
  }
}

function checkClusters(clusters: readonly string[]): void {
  if (clusters.length === 0) throw new InvalidArgumentError('name at least one cluster');
}

/**
 * Create the work `name` with `manifests` in each cluster's namespace; with `overwrite`, an
 * existing work gets the new manifests (other spec fields are kept).
 */
export async function createManifestWork(
  hubKc: KubeConfig,
  opts: CreateManifestWorkOptions,
): Promise<CreateManifestWorkResult[]> {
  checkName(opts.name);
  checkClusters(opts.clusters);
  if (opts.manifests.length === 0)
    throw new InvalidArgumentError('a ManifestWork needs at least one manifest');
  const works = worksClient(hubKc);
  const results: CreateManifestWorkResult[] = [];
  for (const cluster of opts.clusters) {
    results.push({ cluster, action: await createOne(works, cluster, opts) });
  }
  return results;
}

async function createOne(
  works: ResourceClient<ManifestWork>,
  cluster: string,
  opts: CreateManifestWorkOptions,
): Promise<CreateAction> {
  const spec: ManifestWorkSpec = { workload: { manifests: structuredClone([...opts.manifests]) } };
  try {
    await works.create({ metadata: { name: opts.name, namespace: cluster }, spec });
    return 'created';
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    if (!opts.overwrite) {
      throw new TetherError(
        'TETHER_INVALID_ARGUMENT',
        `ManifestWork ${cluster}/${opts.name} already exists; pass --overwrite to replace its manifests`,
      );
    }
  }
  for (let attempt = 0; ; attempt++) {
    const existing = await works.get(opts.name, cluster);
    if (!existing) return createOne(works, cluster, opts);
    const normal = (v: unknown) => JSON.parse(JSON.stringify(v ?? []));
    if (isDeepStrictEqual(normal(existing.spec?.workload?.manifests), normal(spec.workload?.manifests))) {
      return 'unchanged';
    }
    try {
      await works.replace({ ...existing, spec: { ...existing.spec, workload: spec.workload } });
      return 'updated';
    } catch (err) {
      if (!isConflict(err) || attempt >= 4) throw err;
    }
  }
}

export { formatAge };

/** The works in `cluster`'s namespace, by name, with their Applied / Available status. */
export async function listManifestWorks(
  hubKc: KubeConfig,
  cluster: string,
  now: Date = new Date(),
): Promise<ManifestWorkRow[]> {
  const { items } = await worksClient(hubKc).list({ namespace: cluster });
  return items
    .map((w) => {
      const createdAt = w.metadata.creationTimestamp;
      return {
        name: w.metadata.name ?? '',
        applied: findCondition(w.status?.conditions, ManifestWorkCondition.Applied)?.status ?? '',
        available: findCondition(w.status?.conditions, ManifestWorkCondition.Available)?.status ?? '',
        age: createdAt ? formatAge(now.getTime() - Date.parse(createdAt)) : '',
        ...(createdAt ? { createdAt } : {}),
      };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Delete the work `name` from each cluster's namespace. The agent then removes what it applied
 * before the work disappears (its finalizer); this does not wait for that.
 */
export async function deleteManifestWork(
  hubKc: KubeConfig,
  name: string,
  clusters: readonly string[],
): Promise<DeleteManifestWorkResult[]> {
  checkClusters(clusters);
  const works = worksClient(hubKc);
  const results: DeleteManifestWorkResult[] = [];
  for (const cluster of clusters) {
    results.push({ cluster, deleted: await works.delete(name, cluster, { ignoreNotFound: true }) });
  }
  return results;
}
