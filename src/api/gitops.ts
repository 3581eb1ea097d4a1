// apps.open-cluster-management.io/v1beta1 GitOpsCluster, as OCM's multicloud-integrations defines
// it: "register the clusters a Placement selects with an Argo CD instance". TS type, resource
// descriptor, CRD (OCM's field names; the fields tether does not act on are kept so OCM manifests
// apply unchanged) and the Argo CD names the controller writes. The controller is
// src/placement/argocd; nothing here does I/O.

import type { ObjectMeta } from '../kube/types.ts';
import { type Condition, conditionsSchema } from './conditions.ts';
import type { ApiResource } from './resource.ts';
import * as s from './schema.ts';

export const gitOpsClusterResource = {
  group: 'apps.open-cluster-management.io',
  version: 'v1beta1',
  plural: 'gitopsclusters',
  kind: 'GitOpsCluster',
  namespaced: true,
} as const satisfies ApiResource;

/** Argo CD reads every Secret with this label (value `cluster`) in its namespace as a cluster. */
export const argoCdSecretTypeLabel = 'argocd.argoproj.io/secret-type';
/** Label on the cluster Secrets tether writes: `<namespace>.<name>` of the owning GitOpsCluster. */
export const gitOpsClusterOwnerLabel = 'apps.open-cluster-management.io/gitopscluster';
/** Label with the ManagedCluster a cluster Secret stands for (OCM's cluster-name label). */
export const argoCdClusterNameLabel = 'apps.open-cluster-management.io/cluster-name';

/** status.phase values OCM's controller writes. */
export const GitOpsClusterPhase = { Successful: 'successful', Failed: 'failed' } as const;

export const GitOpsClusterCondition = {
  /** The Placement was found and its decisions read. */
  PlacementResolved: 'PlacementResolved',
  /** Every decided cluster has a current Argo CD cluster Secret. */
  ClustersRegistered: 'ClustersRegistered',
  Ready: 'Ready',
} as const;

export interface GitOpsClusterSpec {
  argoServer: {
    /** "Not used and reserved" in OCM; kept. */
    cluster?: string;
    /** Where Argo CD runs: the cluster Secrets go here. */
    argoNamespace: string;
  };
  placementRef?: { kind?: string; apiVersion?: string; name: string; namespace?: string };
  /** OCM: the ManagedServiceAccount whose token the Secrets carry (see src/placement/argocd). */
  managedServiceAccountRef?: string;
  createBlankClusterSecrets?: boolean;
  createPolicyTemplate?: boolean;
}

export interface GitOpsClusterStatus {
  lastUpdateTime?: string;
  phase?: string;
  message?: string;
  conditions?: Condition[];
}

export interface GitOpsCluster {
  apiVersion: 'apps.open-cluster-management.io/v1beta1';
  kind: 'GitOpsCluster';
  metadata: ObjectMeta;
  spec: GitOpsClusterSpec;
  status?: GitOpsClusterStatus;
}

export function gitOpsClusterCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: gitOpsClusterResource,
    description: 'GitOpsCluster registers the ManagedClusters a Placement selects with an Argo CD instance.',
    required: ['spec'],
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    spec: s.object(
      {
        argoServer: s.object(
          { cluster: s.string(), argoNamespace: s.string() },
          { required: ['argoNamespace'] },
        ),
        placementRef: s.object(
          {
            kind: s.string(),
            apiVersion: s.string(),
            name: s.string(),
            namespace: s.string(),
            fieldPath: s.string(),
            resourceVersion: s.string(),
            uid: s.string(),
          },
          { required: ['name'] },
        ),
        managedServiceAccountRef: s.string(),
        createBlankClusterSecrets: s.boolean(),
        createPolicyTemplate: s.boolean(),
      },
      { required: ['argoServer'] },
    ),
    status: s.object({
      lastUpdateTime: s.dateTime(),
      phase: s.string(),
      message: s.string(),
      conditions: conditionsSchema(),
    }),
  });
}
