// cluster.open-cluster-management.io: ManagedCluster (hub) and ClusterClaim (managed cluster) —
// their TS types, resource descriptors, CRDs, and the registration names (conditions, reasons,
// taints, finalizer, labels, agent namespaces and secrets) that OCM components and tools key on.

import type { ObjectMeta } from '../kube/types.ts';
import { type Condition, conditionsSchema } from './conditions.ts';
import * as limits from './peer-limits.ts';
import type { ApiResource } from './resource.ts';
import * as s from './schema.ts';

export const clusterApiGroup = 'cluster.open-cluster-management.io';

export const managedClusterResource = {
  group: clusterApiGroup,
  version: 'v1',
  plural: 'managedclusters',
  kind: 'ManagedCluster',
  namespaced: false,
} as const satisfies ApiResource;

export const clusterClaimResource = {
  group: clusterApiGroup,
  version: 'v1alpha1',
  plural: 'clusterclaims',
  kind: 'ClusterClaim',
  namespaced: false,
} as const satisfies ApiResource;

// ---- names ----

/** Condition types on ManagedCluster.status.conditions. */
export const ManagedClusterCondition = {
  Joined: 'ManagedClusterJoined',
  HubAccepted: 'HubAcceptedManagedCluster',
  HubDenied: 'HubDeniedManagedCluster',
  Available: 'ManagedClusterConditionAvailable',
  ClockSynced: 'ManagedClusterConditionClockSynced',
} as const;

/** Reasons OCM's registration components write on those conditions. */
export const ManagedClusterReason = {
  HubClusterAdminAccepted: 'HubClusterAdminAccepted',
  HubClusterAdminDenied: 'HubClusterAdminDenied',
  ManagedClusterJoined: 'ManagedClusterJoined',
  ManagedClusterAvailable: 'ManagedClusterAvailable',
  ManagedClusterKubeAPIServerUnavailable: 'ManagedClusterKubeAPIServerUnavailable',
  ManagedClusterLeaseUpdateStopped: 'ManagedClusterLeaseUpdateStopped',
  ManagedClusterClockSynced: 'ManagedClusterClockSynced',
  ManagedClusterClockOutOfSync: 'ManagedClusterClockOutOfSync',
} as const;

export type TaintEffect = 'NoSelect' | 'PreferNoSelect' | 'NoSelectIfNew';

export const TaintEffect = {
  NoSelect: 'NoSelect',
  PreferNoSelect: 'PreferNoSelect',
  NoSelectIfNew: 'NoSelectIfNew',
} as const satisfies Record<TaintEffect, TaintEffect>;

/** Taint keys the hub sets from the Available condition; agents must not add or remove them. */
export const ManagedClusterTaint = {
  /** Available is False. */
  Unavailable: 'cluster.open-cluster-management.io/unavailable',
  /** Available is Unknown or missing. */
  Unreachable: 'cluster.open-cluster-management.io/unreachable',
} as const;

/** Holds a ManagedCluster until the hub has removed its namespace, RBAC and other cluster resources. */
export const managedClusterFinalizer = 'cluster.open-cluster-management.io/api-resource-cleanup';

/** Label naming the managed cluster a hub object (CSR, namespace, lease, …) belongs to. */
export const clusterNameLabel = 'open-cluster-management.io/cluster-name';

/** Lease interval an agent uses when spec.leaseDurationSeconds is 0 or unset. */
export const defaultLeaseDurationSeconds = 60;

/** Lease the registration agent renews in the cluster namespace on the hub. */
export const managedClusterLeaseName = 'managed-cluster-lease';

/** Namespace of the registration and work agents on a managed cluster. */
export const agentNamespace = 'open-cluster-management-agent';

/**
 * Label (value "true") on every namespace that holds a tether agent's Secrets. No ManifestWork may
 * write, read or remove anything in such a namespace, whichever hub sends it: with one agent per hub
 * on a cluster, one hub's works would otherwise reach another hub's agent and its credential.
 */
export const agentNamespaceLabel = 'agent.tether.dev/agent-namespace';

/**
 * On a hosted agent's namespace (set by `tether join --mode hosted`): the hash of the hub that
 * agent is joined to (the AppliedManifestWork hub hash). The hosting cluster's work agent of that
 * same hub may deploy the cluster's hosted add-ons into it; every other hub's works stay out.
 */
export const agentHubHashAnnotation = 'agent.tether.dev/hub-hash';

/** Default namespace for add-on agents (and managed service accounts) on a managed cluster. */
export const addonAgentNamespace = 'open-cluster-management-agent-addon';

/**
 * A hosted cluster's agent namespace on its hosting cluster (OCM's `klusterlet-<cluster>`); the
 * cluster's hosted add-ons run there too.
 */
export function hostedAgentNamespace(clusterName: string): string {
  return `klusterlet-${clusterName}`;
}

/** Secret, in agentNamespace, holding the agent's own hub credentials once the hub signed its CSR. */
export const hubKubeconfigSecretName = 'hub-kubeconfig-secret';

/** Secret, in agentNamespace, holding the short-lived kubeconfig used to join the hub. */
export const bootstrapHubKubeconfigSecretName = 'bootstrap-hub-kubeconfig';

/** Data keys of the hub kubeconfig secret. */
export const HubKubeconfigSecretKey = {
  Kubeconfig: 'kubeconfig',
  TlsCert: 'tls.crt',
  TlsKey: 'tls.key',
  ClusterName: 'cluster-name',
  AgentName: 'agent-name',
} as const;

/** Group every registration agent certificate carries (besides its per-cluster group). */
export const managedClustersGroup = 'system:open-cluster-management:managed-clusters';

/** CN of a registration agent's client certificate. */
export function clusterAgentUser(clusterName: string, agentName: string): string {
  return `system:open-cluster-management:${clusterName}:${agentName}`;
}

/** Organisations (groups) of a registration agent's client certificate. */
export function clusterAgentGroups(clusterName: string): string[] {
  return [`system:open-cluster-management:${clusterName}`, managedClustersGroup];
}

/** ClusterClaim names OCM's agent fills itself. */
export const WellKnownClusterClaim = {
  Id: 'id.k8s.io',
  KubeVersion: 'kubeversion.open-cluster-management.io',
  Platform: 'platform.open-cluster-management.io',
  Product: 'product.open-cluster-management.io',
} as const;

/** How many ClusterClaims beyond the well-known ones an agent reports by default (OCM's default). */
export const defaultMaxCustomClusterClaims = 20;

// ---- types ----

/**
 * resource.Quantity values keyed by resource name (cpu, memory, pods, …). OCM's agent writes strings;
 * the schema also admits integers, which the server keeps as written.
 */
export type ResourceList = Record<string, string | number>;

export interface ClientConfig {
  url: string;
  /** PEM bundle, base64-encoded. */
  caBundle?: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  /** RFC 3339; set by the hub when the taint is added. */
  timeAdded?: string | null;
}

export interface ManagedClusterSpec {
  hubAcceptsClient?: boolean;
  managedClusterClientConfigs?: ClientConfig[];
  /** Defaults to 60 on the server. */
  leaseDurationSeconds?: number;
  taints?: Taint[];
}

export interface ManagedClusterClaim {
  name: string;
  value: string;
}

export interface ManagedClusterVersion {
  kubernetes?: string;
}

/** A namespace a ManagedClusterSet asks the agent to manage on the cluster (`status.managedNamespaces`). */
export interface ClusterSetManagedNamespace {
  /** DNS label, at most 63 characters. */
  name: string;
  clusterSet: string;
  conditions?: Condition[];
}

export interface ManagedClusterStatus {
  conditions?: Condition[];
  /** Written by OCM's hub from ManagedClusterSets; tether keeps it (no controller fills it yet). */
  managedNamespaces?: ClusterSetManagedNamespace[];
  capacity?: ResourceList;
  allocatable?: ResourceList;
  version?: ManagedClusterVersion;
  clusterClaims?: ManagedClusterClaim[];
}

export interface ManagedCluster {
  apiVersion: 'cluster.open-cluster-management.io/v1';
  kind: 'ManagedCluster';
  metadata: ObjectMeta;
  spec: ManagedClusterSpec;
  status?: ManagedClusterStatus;
}

export interface ClusterClaimSpec {
  value?: string;
}

export interface ClusterClaim {
  apiVersion: 'cluster.open-cluster-management.io/v1alpha1';
  kind: 'ClusterClaim';
  metadata: ObjectMeta;
  spec?: ClusterClaimSpec;
}

// ---- CRDs ----

const taintKeyPattern =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';

export function managedClusterCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: managedClusterResource,
    description:
      'A cluster registered with this hub. Cluster-scoped; the name is the cluster name. The agent creates ' +
      'it, a hub admin accepts it by setting spec.hubAcceptsClient.',
    shortNames: ['mcl', 'mcls'],
    printerColumns: [
      { name: 'Hub Accepted', type: 'boolean', jsonPath: '.spec.hubAcceptsClient' },
      { name: 'Managed Cluster URLs', type: 'string', jsonPath: '.spec.managedClusterClientConfigs[*].url' },
      {
        name: 'Joined',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="ManagedClusterJoined")].status',
      },
      {
        name: 'Available',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    spec: s.object({
      hubAcceptsClient: s.boolean({
        description:
          'Set by a hub admin to let the agent join; false removes the cluster namespace and RBAC.',
      }),
      managedClusterClientConfigs: s.array(
        s.object(
          {
            url: s.string({ maxLength: limits.maxClientConfigUrlLength }),
            caBundle: s.bytes({ maxLength: limits.maxClientConfigCaBundleLength }),
          },
          { required: ['url'] },
        ),
        {
          description: "Addresses of the managed cluster's kube-apiserver, as the agent reports them.",
          maxItems: limits.maxClientConfigs,
        },
      ),
      leaseDurationSeconds: s.integer('int32', {
        default: defaultLeaseDurationSeconds,
        description: 'How often the agent renews its lease on the hub.',
      }),
      taints: s.array(
        s.object(
          {
            key: s.string({ maxLength: 316, pattern: taintKeyPattern }),
            value: s.string({ maxLength: 1024 }),
            effect: s.oneOf(Object.values(TaintEffect)),
            timeAdded: s.dateTime({ nullable: true }),
          },
          { required: ['key', 'effect'] },
        ),
        { description: 'Keep placements from selecting this cluster unless they tolerate the taint.' },
      ),
    }),
    // Written by the cluster's agent: every list and free string is bounded (peer-limits.ts).
    status: s.object({
      conditions: conditionsSchema({ maxItems: limits.maxClusterWrittenConditions }),
      capacity: s.quantityMap({ maxProperties: limits.maxClusterResourceNames }),
      allocatable: s.quantityMap({ maxProperties: limits.maxClusterResourceNames }),
      version: s.object({ kubernetes: s.string({ maxLength: limits.maxKubernetesVersionLength }) }),
      clusterClaims: s.array(
        s.object({
          name: s.string({ minLength: 1, maxLength: 253 }),
          value: s.string({ minLength: 1, maxLength: 1024 }),
        }),
        { maxItems: limits.maxClusterClaims },
      ),
      managedNamespaces: s.listMap(
        s.object(
          {
            name: s.string({ maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }),
            clusterSet: s.string({ maxLength: 253 }),
            conditions: conditionsSchema({ maxItems: limits.maxClusterWrittenConditions }),
          },
          { required: ['name', 'clusterSet'] },
        ),
        ['clusterSet', 'name'],
        {
          description: 'Namespaces ManagedClusterSets ask the agent to manage; kept as OCM writes them.',
          maxItems: limits.maxManagedNamespaces,
        },
      ),
    }),
  });
}

export function clusterClaimCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: clusterClaimResource,
    description:
      'A fact about the managed cluster it lives on (name = claim name). The registration agent copies ' +
      'claims into ManagedCluster.status.clusterClaims on the hub.',
    spec: s.object({ value: s.string({ minLength: 1, maxLength: 1024 }) }),
  });
}
