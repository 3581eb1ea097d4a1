// The token Secret on the hub: same name and namespace as its ManagedServiceAccount, type Opaque,
// keys `token`, `ca.crt` (the managed apiserver's CA, as in OCM) and (beyond OCM) `kubeconfig` — for
// the user-server (`<user-server>/<cluster>`, its own CA) where the hub runs one, else for the managed
// apiserver — the managed-serviceaccount label and a
// controller ownerReference to the MSA so the hub's garbage collector deletes it with the MSA.
// Updates merge into what is there: labels, annotations, other owners and other data keys that
// someone else put on the Secret survive every refresh. Pure functions; the reconciler writes.
import {
  type ManagedServiceAccount,
  ManagedServiceAccountSecretKey,
  managedServiceAccountLabel,
  managedServiceAccountResource,
} from '../../api/index.ts';
import {
  apiVersionOf,
  kubeconfigFromParts,
  kubeconfigToYaml,
  type OwnerReference,
} from '../../kube/index.ts';
import type { Secret } from '../core.ts';

/** Data key (beyond OCM) holding a kubeconfig that works as is: server, CA and token. */
export const kubeconfigSecretKey = 'kubeconfig';

/** Where the `kubeconfig` key points and what it trusts. */
export interface ManagedClusterEndpoint {
  /** name of the cluster, user and context in the kubeconfig */
  name: string;
  server: string;
  /** the managed apiserver's CA (`ca.crt`) */
  caPem: string;
  /** the CA the kubeconfig trusts when its server is not the managed apiserver (the user-server's); default caPem */
  kubeconfigCaPem?: string;
  tlsServerName?: string;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (value: string | undefined) =>
  value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');

/** The kubeconfig YAML stored under `kubeconfig` for `token`. */
export function tokenKubeconfig(endpoint: ManagedClusterEndpoint, token: string): string {
  const { kubeconfigCaPem, ...parts } = endpoint;
  return kubeconfigToYaml(kubeconfigFromParts({ ...parts, caPem: kubeconfigCaPem ?? endpoint.caPem, token }));
}

/** The data the Secret must hold for `token` (base64 values). */
export function tokenSecretData(endpoint: ManagedClusterEndpoint, token: string): Record<string, string> {
  return {
    [ManagedServiceAccountSecretKey.Token]: b64(token),
    [ManagedServiceAccountSecretKey.CaCert]: b64(endpoint.caPem),
    [kubeconfigSecretKey]: b64(tokenKubeconfig(endpoint, token)),
  };
}

/** The token in the Secret, if any. */
export function secretToken(secret: Secret | undefined): string | undefined {
  const token = unb64(secret?.data?.[ManagedServiceAccountSecretKey.Token]);
  return token ? token : undefined;
}

/**
 * Which of our keys do not hold what they must for the Secret's own token (someone changed
 * `ca.crt` or `kubeconfig`, or the managed cluster's CA changed); [] when all match.
 */
export function alteredSecretKeys(secret: Secret, endpoint: ManagedClusterEndpoint): string[] {
  const token = secretToken(secret);
  if (!token) return [ManagedServiceAccountSecretKey.Token];
  const want = tokenSecretData(endpoint, token);
  return Object.keys(want).filter((key) => secret.data?.[key] !== want[key]);
}

/** The controller ownerReference to the MSA (always the storage version's apiVersion). */
export function ownerReferenceTo(msa: ManagedServiceAccount): OwnerReference {
  return {
    apiVersion: apiVersionOf(managedServiceAccountResource),
    kind: managedServiceAccountResource.kind,
    name: msa.metadata.name ?? '',
    uid: msa.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** A new token Secret for `msa`. */
export function newTokenSecret(msa: ManagedServiceAccount, data: Record<string, string>): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: msa.metadata.name,
      namespace: msa.metadata.namespace,
      labels: { [managedServiceAccountLabel]: 'true' },
      ownerReferences: [ownerReferenceTo(msa)],
    },
    type: 'Opaque',
    data,
  };
}

/**
 * `existing` with our label, our ownerReference (replacing a stale one to an earlier MSA of that
 * name, and any other controller reference: only one may be controller) and `data` merged in;
 * undefined when it already has all of them.
 */
export function mergeTokenSecret(
  existing: Secret,
  msa: ManagedServiceAccount,
  data: Record<string, string>,
): Secret | undefined {
  const ref = ownerReferenceTo(msa);
  const labels = existing.metadata.labels ?? {};
  const refs = existing.metadata.ownerReferences ?? [];
  const ours = refs.find((r) => r.uid === ref.uid);
  const refOk = ours?.controller === true && ours.blockOwnerDeletion === true && ours.kind === ref.kind;
  const labelOk = labels[managedServiceAccountLabel] === 'true';
  const dataOk = Object.entries(data).every(([key, value]) => existing.data?.[key] === value);
  if (refOk && labelOk && dataOk) return undefined;
  const others = refs.filter(
    (r) => r.uid !== ref.uid && r.controller !== true && !(r.kind === ref.kind && r.name === ref.name),
  );
  return {
    ...existing,
    metadata: {
      ...existing.metadata,
      labels: { ...labels, [managedServiceAccountLabel]: 'true' },
      ownerReferences: [...others, ref],
    },
    data: { ...existing.data, ...data },
  };
}
