// ClusterGateway (cluster.core.oam.dev/v1alpha1) as served by the tether gateway: the TS shape, the
// names and labels cluster-gateway clients key on, and the constants of our aggregated API. The
// gateway derives these objects from ManagedClusters + credential Secrets; nobody writes them.
import type { ObjectMeta, ResourceDescriptor } from '../kube/types.ts';

export const gatewayGroup = 'cluster.core.oam.dev';
export const gatewayVersion = 'v1alpha1';
export const gatewayGroupVersion = `${gatewayGroup}/${gatewayVersion}`;
/** The APIService name the hub aggregator routes our group/version by. */
export const gatewayApiServiceName = `${gatewayVersion}.${gatewayGroup}`;

export const clusterGatewayResource = {
  group: gatewayGroup,
  version: gatewayVersion,
  plural: 'clustergateways',
  kind: 'ClusterGateway',
  namespaced: false,
} as const satisfies ResourceDescriptor;

/** Default name of the ManagedServiceAccount (and so of its token Secret) the gateway uses. */
export const defaultGatewayMsaName = 'tether-gateway';

/** Namespace of cluster-gateway's own credential Secrets (one per directly reached cluster). */
export const defaultCredentialNamespace = 'open-cluster-management-credentials';

/** Label on a cluster-gateway credential Secret: ServiceAccountToken or X509Certificate. */
export const credentialTypeLabel = 'cluster.core.oam.dev/cluster-credential-type';
/** Optional label on a cluster-gateway credential Secret: Const (default) or ClusterProxy. */
export const endpointTypeLabel = 'cluster.core.oam.dev/cluster-endpoint-type';

/**
 * Annotation ("true") on a ManagedCluster or credential Secret, copied onto its ClusterGateway:
 * proxied requests impersonate the hub caller (`cluster:hub:<user>`, identity.ts) on that cluster
 * even when the gateway runs in shared mode. It can only add impersonation, never remove it: the
 * gateway's default already impersonates on every cluster.
 */
export const impersonateAnnotation = 'cluster.core.oam.dev/impersonate';

/** Data keys of a cluster-gateway credential Secret. */
export const CredentialSecretKey = {
  Endpoint: 'endpoint',
  CaCert: 'ca.crt',
  Token: 'token',
  TlsCert: 'tls.crt',
  TlsKey: 'tls.key',
} as const;

export type ClusterEndpointType = 'ClusterProxy' | 'Const';
export type ClusterCredentialType = 'ServiceAccountToken' | 'X509Certificate';

export interface ClusterGatewaySpec {
  /** free text naming who provides the cluster (cluster-gateway leaves it empty for OCM) */
  provider: string;
  access: {
    endpoint: { type: ClusterEndpointType; const?: { address: string } };
    credential: { type: ClusterCredentialType };
  };
}

export interface ClusterGatewayStatus {
  healthy: boolean;
  healthyReason?: string;
}

export interface ClusterGateway {
  apiVersion: typeof gatewayGroupVersion;
  kind: 'ClusterGateway';
  metadata: ObjectMeta;
  spec: ClusterGatewaySpec;
  status: ClusterGatewayStatus;
}

/** Why a cluster is not healthy (status.healthyReason). */
export const HealthyReason = {
  NoTunnel: 'NoTunnel',
  ConnectionFailed: 'ConnectionFailed',
  ConnectionTimeout: 'ConnectionTimeout',
  HealthCheckFailed: 'HealthCheckFailed',
  MissingCA: 'MissingCA',
  Unknown: 'Unknown',
} as const;
