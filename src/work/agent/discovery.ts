// Kind → resource resolution on the managed cluster: which plural and scope serve `apiVersion` +
// `kind`, read from the apiserver's discovery documents (/api/v1, /apis/<group>/<version>)
// through client-node. One document per group-version is cached; a kind the cached document
// does not list triggers a refresh, at most once per `missRefreshMs` per group-version, so a CRD
// and its custom resource in one ManifestWork converge as soon as the CRD is served, without
// every miss costing a request. Owns no other state; never writes.
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1APIResourceList,
} from '@kubernetes/client-node';
import { isNotFound, type ResourceDescriptor, toApiError } from '../../kube/index.ts';

/** The group and version of an `apiVersion` string ("apps/v1" → apps + v1, "v1" → core). */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

interface CachedGroupVersion {
  /** kind → descriptor, top-level resources only (no subresources) */
  kinds: Map<string, ResourceDescriptor>;
  fetchedAt: number;
}

export interface DiscoveryOptions {
  /** minimum time between two refreshes of one group-version caused by misses (default 500 ms) */
  missRefreshMs?: number;
  /** drop cached documents older than this, so removed kinds are noticed (default 5 min) */
  maxAgeMs?: number;
}

/** Cached discovery of the managed cluster's kinds. */
export class ManagedDiscovery {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly missRefreshMs: number;
  private readonly maxAgeMs: number;
  private readonly cache = new Map<string, CachedGroupVersion>();
  private readonly inflight = new Map<string, Promise<CachedGroupVersion>>();

  constructor(kubeconfig: KubeConfig, options: DiscoveryOptions = {}) {
    this.core = kubeconfig.makeApiClient(CoreV1Api);
    this.custom = kubeconfig.makeApiClient(CustomObjectsApi);
    this.missRefreshMs = options.missRefreshMs ?? 500;
    this.maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
  }

  /**
   * Where `kind` of `apiVersion` is served, or undefined when the cluster does not serve it (yet).
   * Throws ApiError when discovery itself fails (apiserver unreachable, forbidden, …).
   */
  async resolve(apiVersion: string, kind: string): Promise<ResourceDescriptor | undefined> {
    const now = Date.now();
    let cached = this.cache.get(apiVersion);
    if (cached && now - cached.fetchedAt > this.maxAgeMs) cached = undefined;
    const hit = cached?.kinds.get(kind);
    if (hit) return hit;
    if (cached && now - cached.fetchedAt < this.missRefreshMs) return undefined;
    return (await this.refresh(apiVersion)).kinds.get(kind);
  }

  /** Forget everything (e.g. after the cluster's kinds changed in a way we must notice at once). */
  invalidate(): void {
    this.cache.clear();
  }

  private refresh(apiVersion: string): Promise<CachedGroupVersion> {
    const running = this.inflight.get(apiVersion);
    if (running) return running;
    const fetching = this.fetch(apiVersion)
      .then((entry) => {
        this.cache.set(apiVersion, entry);
        return entry;
      })
      .finally(() => this.inflight.delete(apiVersion));
    this.inflight.set(apiVersion, fetching);
    return fetching;
  }

  private async fetch(apiVersion: string): Promise<CachedGroupVersion> {
    const { group, version } = splitApiVersion(apiVersion);
    let list: V1APIResourceList;
    try {
      list = group
        ? await this.custom.getAPIResources({ group, version })
        : await this.core.getAPIResources();
    } catch (err) {
      // A group-version nobody serves: an empty document, so the kind is simply unknown.
      if (isNotFound(err)) return { kinds: new Map(), fetchedAt: Date.now() };
      throw toApiError(err, `discover ${apiVersion}`) ?? err;
    }
    const kinds = new Map<string, ResourceDescriptor>();
    for (const r of list.resources ?? []) {
      if (r.name.includes('/')) continue; // subresources such as deployments/status
      kinds.set(r.kind, { group, version, plural: r.name, kind: r.kind, namespaced: r.namespaced });
    }
    return { kinds, fetchedAt: Date.now() };
  }
}
