// multicluster.x-k8s.io/v1alpha1 ClusterProfile: SIG Multicluster's cluster inventory API (KEP-4322),
// read by Argo CD's ClusterProfile integration, MultiKueue and other multi-cluster consumers. TS
// type, resource descriptor, CRD (fields as the cluster-inventory-api module publishes them) and the
// label and condition names consumers key on. tether's hub writes these objects
// (src/placement/clusterprofile); nothing else here does I/O.

import type { ObjectMeta } from '../kube/types.ts';
import { type Condition, conditionsSchema } from './conditions.ts';
import type { ApiResource } from './resource.ts';
import * as s from './schema.ts';

export const clusterProfileResource = {
  group: 'multicluster.x-k8s.io',
  version: 'v1alpha1',
  plural: 'clusterprofiles',
  kind: 'ClusterProfile',
  namespaced: true,
} as const satisfies ApiResource;

/** Label naming the cluster manager a ClusterProfile belongs to (value = spec.clusterManager.name). */
export const clusterManagerLabel = 'x-k8s.io/cluster-manager';
/** Label with the cluster set of the profile's cluster (OCM: the cluster's clusterset label). */
export const clusterProfileClusterSetLabel = 'multicluster.x-k8s.io/clusterset';
/** OCM's cluster manager name, on every ClusterProfile it (and tether) writes. */
export const ocmClusterManagerName = 'open-cluster-management';
/** Where OCM keeps ClusterProfiles by default. */
export const defaultClusterProfileNamespace = 'open-cluster-management';

export const ClusterProfileCondition = {
  /** The cluster's control plane is healthy (OCM: the ManagedCluster's Available condition). */
  ControlPlaneHealthy: 'ControlPlaneHealthy',
  /** OCM mirrors the ManagedCluster's Joined condition under its own type. */
  Joined: 'Joined',
} as const;

/** client-go's clientcmd/api/v1 Cluster, the connection details of an access provider. */
export interface KubeconfigCluster {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'certificate-authority'?: string;
  /** base64 PEM */
  'certificate-authority-data'?: string;
  'proxy-url'?: string;
  'disable-compression'?: boolean;
  extensions?: Array<{ name: string; extension: unknown }>;
}

export interface AccessProvider {
  name: string;
  cluster: KubeconfigCluster;
}

export interface ClusterProfileProperty {
  name: string;
  value: string;
  lastObservedTime?: string;
}

export interface ClusterProfileStatus {
  conditions?: Condition[];
  version?: { kubernetes?: string };
  properties?: ClusterProfileProperty[];
  /** Deprecated in the API in favour of accessProviders; tether writes both, identical. */
  credentialProviders?: AccessProvider[];
  accessProviders?: AccessProvider[];
}

export interface ClusterProfile {
  apiVersion: 'multicluster.x-k8s.io/v1alpha1';
  kind: 'ClusterProfile';
  metadata: ObjectMeta;
  spec: { displayName?: string; clusterManager: { name: string } };
  status?: ClusterProfileStatus;
}

function accessProvidersSchema(): s.JsonSchema {
  return s.array(
    s.object(
      {
        name: s.string(),
        cluster: s.object(
          {
            server: s.string(),
            'tls-server-name': s.string(),
            'insecure-skip-tls-verify': s.boolean(),
            'certificate-authority': s.string(),
            'certificate-authority-data': s.bytes(),
            'proxy-url': s.string(),
            'disable-compression': s.boolean(),
            extensions: s.array(
              s.object({ name: s.string(), extension: s.unstructured() }, { required: ['name'] }),
            ),
          },
          { required: ['server'] },
        ),
      },
      { required: ['name'] },
    ),
  );
}

export function clusterProfileCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: clusterProfileResource,
    description: 'ClusterProfile represents a single cluster in a multi-cluster deployment.',
    required: ['spec'],
    spec: s.object(
      {
        displayName: s.string(),
        clusterManager: s.object(
          { name: s.string() },
          {
            required: ['name'],
            'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'ClusterManager is immutable' }],
          },
        ),
      },
      { required: ['clusterManager'] },
    ),
    status: s.object({
      conditions: conditionsSchema(),
      version: s.object({ kubernetes: s.string() }),
      properties: s.array(
        s.object(
          {
            name: s.string({ minLength: 1, maxLength: 253 }),
            value: s.string({ minLength: 1, maxLength: 1024 }),
            lastObservedTime: s.dateTime(),
          },
          { required: ['name', 'value'] },
        ),
      ),
      credentialProviders: accessProvidersSchema(),
      accessProviders: accessProvidersSchema(),
    }),
  });
}
