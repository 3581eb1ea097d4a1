// Builders for the scheduling unit tests: ManagedClusters and Placements as plain objects.
import type { ManagedCluster, Taint } from '../../../src/api/cluster.ts';
import type { PlacementSpec } from '../../../src/api/placement.ts';
import type {
  EligibleClusters,
  ScheduleInputs,
  SchedulingPlacement,
} from '../../../src/placement/scheduling/index.ts';

export interface ClusterOptions {
  labels?: Record<string, string>;
  claims?: Record<string, string>;
  taints?: Taint[];
  allocatable?: Record<string, string>;
  capacity?: Record<string, string>;
  kubernetes?: string;
}

export function cluster(name: string, opts: ClusterOptions = {}): ManagedCluster {
  return {
    apiVersion: 'cluster.open-cluster-management.io/v1',
    kind: 'ManagedCluster',
    metadata: { name, labels: opts.labels ?? {} },
    spec: { hubAcceptsClient: true, taints: opts.taints },
    status: {
      clusterClaims: Object.entries(opts.claims ?? {}).map(([n, value]) => ({ name: n, value })),
      allocatable: opts.allocatable,
      capacity: opts.capacity,
      version: opts.kubernetes ? { kubernetes: opts.kubernetes } : undefined,
    },
  };
}

export function placement(spec: PlacementSpec = {}, name = 'p1'): SchedulingPlacement {
  return { metadata: { name, namespace: 'ns1' }, spec };
}

export function eligible(clusters: ManagedCluster[]): EligibleClusters {
  return { validBindings: 1, clusterSets: ['prod'], clusters };
}

export function inputs(clusters: ManagedCluster[], extra: Partial<ScheduleInputs> = {}): ScheduleInputs {
  return {
    eligible: eligible(clusters),
    ownDecisions: new Set(),
    otherDecisionCounts: new Map(),
    addOnScore: () => undefined,
    now: Date.parse('2026-01-01T00:00:00Z'),
    ...extra,
  };
}

export const names = (clusters: readonly ManagedCluster[]) => clusters.map((c) => c.metadata.name);
