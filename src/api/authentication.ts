// authentication.open-cluster-management.io: ManagedServiceAccount (hub, in the cluster namespace)
// — TS type, resource descriptors for both served versions, CRD, and the condition, reason, label
// and secret-key names the serviceaccount agent and its consumers share.

import type { ObjectMeta } from '../kube/types.ts';
import { type Condition, conditionsSchema } from './conditions.ts';
import type { ApiResource } from './resource.ts';
import * as s from './schema.ts';

export const authenticationApiGroup = 'authentication.open-cluster-management.io';

/** The storage version; use this one. */
export const managedServiceAccountResource = {
  group: authenticationApiGroup,
  version: 'v1beta1',
  plural: 'managedserviceaccounts',
  kind: 'ManagedServiceAccount',
  namespaced: true,
} as const satisfies ApiResource;

/** Still served (same schema) for clients that only know the older version. */
export const managedServiceAccountV1alpha1Resource = {
  ...managedServiceAccountResource,
  version: 'v1alpha1',
} as const satisfies ApiResource;

// ---- names ----

export const ManagedServiceAccountCondition = {
  /** The token secret exists in the cluster namespace on the hub. */
  SecretCreated: 'SecretCreated',
  /** The agent reported a current token. */
  TokenReported: 'TokenReported',
} as const;

export const ManagedServiceAccountReason = {
  SecretCreated: 'SecretCreated',
  TokenReported: 'TokenReported',
  TokenReportFailed: 'TokenReportFailed',
} as const;

/**
 * Label ("true") on the ServiceAccount the agent created on the managed cluster and on the token
 * secret on the hub; the agent only deletes ServiceAccounts that carry it.
 */
export const managedServiceAccountLabel =
  'authentication.open-cluster-management.io/is-managed-serviceaccount';

/** Token lifetime when spec.rotation.validity is not set (360 days, Go duration syntax). */
export const defaultTokenValidity = '8640h0m0s';

/** Data keys of the token secret (named like the ManagedServiceAccount, in the cluster namespace). */
export const ManagedServiceAccountSecretKey = {
  CaCert: 'ca.crt',
  Token: 'token',
} as const;

// ---- types ----

export interface ManagedServiceAccountRotation {
  /**
   * Defaults to true on the server. Deprecated in OCM and ignored: every token is rotated before
   * it expires regardless of this field.
   */
  enabled?: boolean;
  /** Go duration, e.g. `8640h0m0s` (the server default). */
  validity?: string;
}

export interface ManagedServiceAccountSpec {
  rotation?: ManagedServiceAccountRotation;
  /** Delete the ManagedServiceAccount this many seconds after creation (> 0). */
  ttlSecondsAfterCreation?: number;
}

export interface ManagedServiceAccountStatus {
  conditions?: Condition[];
  /** RFC 3339 expiry of the token in the secret. */
  expirationTimestamp?: string;
  tokenSecretRef?: { name: string; lastRefreshTimestamp: string };
}

export interface ManagedServiceAccount {
  apiVersion:
    | 'authentication.open-cluster-management.io/v1beta1'
    | 'authentication.open-cluster-management.io/v1alpha1';
  kind: 'ManagedServiceAccount';
  metadata: ObjectMeta;
  spec?: ManagedServiceAccountSpec;
  status?: ManagedServiceAccountStatus;
}

// ---- CRD ----

export function managedServiceAccountCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: managedServiceAccountResource,
    alsoServed: [managedServiceAccountV1alpha1Resource.version],
    // OCM's Go types mark v1alpha1 `+kubebuilder:deprecatedversion`.
    deprecatedVersions: [managedServiceAccountV1alpha1Resource.version],
    description:
      'A ServiceAccount the agent keeps on one managed cluster, whose token it projects into a Secret of the ' +
      'same name in the cluster namespace on the hub and rotates before it expires.',
    spec: s.object(
      {
        // Defaulting the object lets the nested defaults apply when a client omits rotation.
        rotation: s.object(
          {
            enabled: s.boolean({ default: true }),
            validity: s.string({ default: defaultTokenValidity }),
          },
          { default: {} },
        ),
        // > 0, as OCM's Go types declare it (there is no published CRD manifest to compare with).
        ttlSecondsAfterCreation: s.integer('int32', { minimum: 0, exclusiveMinimum: true }),
      },
      { default: {} },
    ),
    status: s.object({
      conditions: conditionsSchema(),
      expirationTimestamp: s.dateTime(),
      tokenSecretRef: s.object(
        { name: s.string(), lastRefreshTimestamp: s.dateTime() },
        { required: ['name', 'lastRefreshTimestamp'] },
      ),
    }),
  });
}
