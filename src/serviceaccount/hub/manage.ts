// What the `tether` CLI does with ManagedServiceAccounts on the hub: create one per cluster and list
// them as table rows. No printing here; the CLI formats the rows.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ManagedServiceAccount,
  ManagedServiceAccountCondition,
  managedServiceAccountResource,
} from '../../api/index.ts';
import { errorMessage, InvalidArgumentError } from '../../errors.ts';
import { findCondition, ResourceClient } from '../../kube/index.ts';
import { formatAge } from '../duration.ts';
import { tokenExpirationSeconds } from '../token.ts';

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface CreateManagedServiceAccountOptions {
  /** the MSA's name; also the ServiceAccount's and the token Secret's */
  name: string;
  /** managed cluster names (= namespaces on the hub) */
  clusters: readonly string[];
  /** token lifetime, Go duration (default: the server's, 8640h0m0s); at least 10m */
  validity?: string;
  /** delete the MSA this long after creation */
  ttlSecondsAfterCreation?: number;
  /** extra metadata (e.g. the token-audiences annotation) */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The outcome for one cluster: the created MSA, or why it was not created. */
export interface CreateManagedServiceAccountResult {
  cluster: string;
  created?: ManagedServiceAccount;
  /** e.g. `already exists`, a missing cluster namespace, RBAC */
  error?: string;
}

/**
 * Create ManagedServiceAccount `name` in each cluster's namespace (v1beta1). Arguments are checked
 * first (InvalidArgumentError, nothing created); then every cluster is tried and reported on its own.
 */
export async function createManagedServiceAccount(
  hubKc: KubeConfig,
  opts: CreateManagedServiceAccountOptions,
): Promise<CreateManagedServiceAccountResult[]> {
  if (!dnsSubdomain.test(opts.name) || opts.name.length > 253) {
    throw new InvalidArgumentError(
      `name "${opts.name}" is not a DNS subdomain (lower case, digits, '-', '.')`,
    );
  }
  const clusters = [...new Set(opts.clusters)];
  if (clusters.length === 0) throw new InvalidArgumentError('give at least one cluster');
  const bad = clusters.find((c) => !dnsLabel.test(c));
  if (bad !== undefined) throw new InvalidArgumentError(`cluster "${bad}" is not a valid cluster name`);
  if (opts.validity !== undefined) tokenExpirationSeconds(opts.validity);
  const ttl = opts.ttlSecondsAfterCreation;
  // OCM's CRD declares minimum 0 with exclusiveMinimum: the server refuses 0 as well.
  if (ttl !== undefined && !(Number.isInteger(ttl) && ttl > 0 && ttl <= 2 ** 31 - 1)) {
    throw new InvalidArgumentError(`ttlSecondsAfterCreation ${ttl} must be a whole number of seconds > 0`);
  }
  const client = new ResourceClient<ManagedServiceAccount>(hubKc, managedServiceAccountResource);
  const results: CreateManagedServiceAccountResult[] = [];
  for (const cluster of clusters) {
    try {
      const created = await client.create({
        metadata: {
          name: opts.name,
          namespace: cluster,
          ...(opts.labels ? { labels: opts.labels } : {}),
          ...(opts.annotations ? { annotations: opts.annotations } : {}),
        },
        spec: {
          rotation: { enabled: true, ...(opts.validity !== undefined ? { validity: opts.validity } : {}) },
          ...(ttl !== undefined ? { ttlSecondsAfterCreation: ttl } : {}),
        },
      });
      results.push({ cluster, created });
    } catch (err) {
      results.push({ cluster, error: errorMessage(err) });
    }
  }
  return results;
}

/** One line of `tether get managedserviceaccounts`. */
export interface ManagedServiceAccountRow {
  cluster: string;
  name: string;
  /** status of the TokenReported condition ('Unknown' before the agent reported) */
  tokenReported: 'True' | 'False' | 'Unknown';
  /** status.expirationTimestamp, '' when none yet */
  expiration: string;
  /** kubectl-style age, e.g. `5m30s` */
  age: string;
}

/** Every ManagedServiceAccount on the hub (or in one cluster's namespace), sorted by cluster and name. */
export async function listManagedServiceAccounts(
  hubKc: KubeConfig,
  opts: { cluster?: string; now?: Date } = {},
): Promise<ManagedServiceAccountRow[]> {
  const client = new ResourceClient<ManagedServiceAccount>(hubKc, managedServiceAccountResource);
  const { items } = await client.list(opts.cluster ? { namespace: opts.cluster } : {});
  const now = (opts.now ?? new Date()).getTime();
  return items
    .map((msa): ManagedServiceAccountRow => {
      const reported = findCondition(msa.status?.conditions, ManagedServiceAccountCondition.TokenReported);
      const created = Date.parse(msa.metadata.creationTimestamp ?? '');
      return {
        cluster: msa.metadata.namespace ?? '',
        name: msa.metadata.name ?? '',
        tokenReported: reported?.status ?? 'Unknown',
        expiration: msa.status?.expirationTimestamp ?? '',
        age: Number.isFinite(created) ? formatAge(now - created) : '',
      };
    })
    .sort((a, b) => a.cluster.localeCompare(b.cluster) || a.name.localeCompare(b.name));
}
