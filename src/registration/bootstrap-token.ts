// Kubernetes bootstrap tokens for joining clusters: `tether init --use-bootstrap-token`, in the
// form OCM's cluster-manager and `clusteradm init --use-bootstrap-token` leave on a hub, so that
// `clusteradm get token --use-bootstrap-token` (newest Secret `bootstrap-token-*` in kube-system
// with label app=cluster-manager; token `<token-id>.<token-secret>`) and automation built on
// Kubernetes bootstrap tokens work against a tether hub. The token authenticates as
// `system:bootstrap:<token-id>` in groups `system:bootstrappers` and
// `system:bootstrappers:managedcluster`, which the bootstrap ClusterRoleBinding grants exactly the
// bootstrap rights (bootstrap.ts); it expires (`expiration`, checked by the apiserver's bootstrap
// authenticator, which the hub apiserver needs: --enable-bootstrap-token-auth). Pure parts apart
// from createBootstrapTokenSecret.
import { randomInt } from 'node:crypto';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { ResourceClient } from '../kube/index.ts';
import { secretResource } from '../kube/kinds.ts';
import { BOOTSTRAP_TOKEN_GROUP } from './bootstrap.ts';

export const BOOTSTRAP_TOKEN_NAMESPACE = 'kube-system';
/** The label clusteradm selects bootstrap-token Secrets by. */
export const BOOTSTRAP_TOKEN_LABEL = { app: 'cluster-manager' } as const;
export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const randomString = (n: number, pick: (max: number) => number = randomInt): string =>
  Array.from({ length: n }, () => ALPHABET[pick(ALPHABET.length)]).join('');

export interface BootstrapTokenSecret {
  secret: KubernetesObject & { type: string; stringData: Record<string, string> };
  /** `<token-id>.<token-secret>` */
  token: string;
  expires: Date;
}

/** A new bootstrap token (6 + 16 random characters, Kubernetes' format) valid for `expirationSeconds`. */
export function newBootstrapTokenSecret(
  expirationSeconds: number,
  now = new Date(),
  pick?: (max: number) => number,
): BootstrapTokenSecret {
  const id = randomString(6, pick);
  const secretPart = randomString(16, pick);
  const expires = new Date(now.getTime() + expirationSeconds * 1000);
  return {
    token: `${id}.${secretPart}`,
    expires,
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: `bootstrap-token-${id}`,
        namespace: BOOTSTRAP_TOKEN_NAMESPACE,
        labels: { ...BOOTSTRAP_TOKEN_LABEL },
      },
      type: BOOTSTRAP_TOKEN_SECRET_TYPE,
      stringData: {
        description: 'tether: joins managed clusters (tether init --use-bootstrap-token)',
        'token-id': id,
        'token-secret': secretPart,
        expiration: expires.toISOString().replace(/\.\d{3}Z$/, 'Z'),
        'usage-bootstrap-authentication': 'true',
        'auth-extra-groups': BOOTSTRAP_TOKEN_GROUP,
      },
    },
  };
}

/** Creates a new bootstrap-token Secret on the hub; resolves with the token and its expiry. */
export async function createBootstrapTokenSecret(
  hub: KubeConfig,
  expirationSeconds: number,
): Promise<{ token: string; expires: Date; name: string }> {
  const made = newBootstrapTokenSecret(expirationSeconds);
  await new ResourceClient(hub, secretResource).create(made.secret as never);
  return { token: made.token, expires: made.expires, name: made.secret.metadata?.name ?? '' };
}
