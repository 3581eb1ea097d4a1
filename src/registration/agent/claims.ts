// ClusterClaims: facts about this managed cluster (ClusterClaim objects on the managed apiserver)
// that the agent copies into ManagedCluster.status.clusterClaims on the hub. Owns installing the
// ClusterClaim CRD on the managed cluster, the informer over claims, and OCM's exposure rule:
// claims labelled open-cluster-management.io/spoke-only stay on the cluster; the reserved names
// come first (sorted), then at most maxCustomClusterClaims custom ones (sorted by name); the rest
// is dropped and the truncation logged.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ClusterClaim,
  clusterClaimCrd,
  clusterClaimResource,
  crdNameOf,
  type ManagedClusterClaim,
  WellKnownClusterClaim,
} from '../../api/index.ts';
import { Informer, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { pollUntil } from '../../wait.ts';
import { fieldManager } from './hub-kubeconfig-secret.ts';
import { type CustomResourceDefinition, customResourceDefinitionResource } from './kinds.ts';

/** Claims with this label are not synced to the hub (OCM's labelCustomizedOnly). */
export const spokeOnlyClaimLabel = 'open-cluster-management.io/spoke-only';

/** OCM's ReservedClusterClaimNames: exposed first and never counted against the custom limit. */
export const reservedClusterClaimNames: ReadonlySet<string> = new Set(Object.values(WellKnownClusterClaim));

export interface ExposedClaims {
  claims: ManagedClusterClaim[];
  /** custom claims left out because of the limit */
  truncated: number;
}

/**
 * OCM's exposeClaims: reserved claims first, then up to `maxCustom` custom ones, each sorted by name.
 * `agentClaims` are the agent's own reserved claims (in-process-addons.tether.dev): they count as
 * reserved, and a ClusterClaim object of the same name cannot replace them.
 */
export function exposeClaims(
  claims: readonly ClusterClaim[],
  maxCustom: number,
  agentClaims: readonly ManagedClusterClaim[] = [],
): ExposedClaims {
  const reserved: ManagedClusterClaim[] = [...agentClaims];
  const custom: ManagedClusterClaim[] = [];
  const agentNames = new Set(agentClaims.map((c) => c.name));
  for (const claim of claims) {
    const name = claim.metadata?.name;
    const value = claim.spec?.value;
    if (!name || !value) continue; // the hub's schema wants both non-empty
    if (agentNames.has(name)) continue;
    if (claim.metadata.labels?.[spokeOnlyClaimLabel] !== undefined) continue;
    (reservedClusterClaimNames.has(name) ? reserved : custom).push({ name, value });
  }
  const byName = (a: ManagedClusterClaim, b: ManagedClusterClaim) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  reserved.sort(byName);
  custom.sort(byName);
  const truncated = Math.max(0, custom.length - maxCustom);
  return { claims: [...reserved, ...custom.slice(0, maxCustom)], truncated };
}

/** Informer over the ClusterClaims on the managed cluster (spoke-only ones excluded). */
export function clusterClaimInformer(managed: KubeConfig, log: Logger): Informer<ClusterClaim> {
  const client = new ResourceClient<ClusterClaim>(managed, clusterClaimResource);
  return new Informer(client, { labelSelector: `!${spokeOnlyClaimLabel}`, name: 'clusterclaims', log });
}

/**
 * Make sure the ClusterClaim CRD is served on the managed cluster. A CRD that is already there is
 * left alone (a klusterlet or an admin may own a newer one); otherwise ours is created.
 */
export async function ensureClusterClaimCrd(
  managed: KubeConfig,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<void> {
  const crds = new ResourceClient<CustomResourceDefinition>(managed, customResourceDefinitionResource);
  const name = crdNameOf(clusterClaimResource);
  const { signal } = options;
  if (!(await crds.get(name, undefined, { signal }))) {
    const manifest = clusterClaimCrd() as unknown as CustomResourceDefinition;
    await crds.apply(manifest, { fieldManager, signal });
  }
  await pollUntil(
    async () => {
      const crd = await crds.get(name, undefined, { signal });
      return crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
    },
    {
      timeoutMs: options.timeoutMs ?? 60_000,
      intervalMs: 200,
      description: `CRD ${name} to be Established`,
      signal,
    },
  );
}
