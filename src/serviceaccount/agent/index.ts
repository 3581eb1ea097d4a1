// serviceaccount-agent: runs on (or for) one managed cluster. Watches the ManagedServiceAccounts in
// the cluster's namespace on the hub, keeps a labelled ServiceAccount per MSA in the install
// namespace of the managed cluster, and projects its TokenRequest token into the hub Secret of the
// same name (see projection.ts). Touches only: MSAs (+status) and their token Secrets, by name, in
// the cluster namespace on the hub (it may not list or watch Secrets there, see ../rbac.ts); the install namespace and labelled ServiceAccounts in it on the managed
// cluster; TokenRequest / TokenReview there. Never ServiceAccounts without the label.
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  addonAgentNamespace,
  type ManagedServiceAccount,
  managedServiceAccountLabel,
  managedServiceAccountResource,
} from '../../api/index.ts';
import { errorMessage, InvalidArgumentError } from '../../errors.ts';
import { Informer, type KubeObject, ResourceClient, runController } from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import {
  type Namespace,
  namespaceResource,
  type Secret,
  type ServiceAccount,
  secretResource,
  serviceAccountResource,
} from '../core.ts';
import { parseAudiences } from '../token.ts';
import { ManagedServiceAccountProjectionReconciler } from './projection.ts';
import { type ManagedClusterEndpoint, tokenKubeconfig } from './token-secret.ts';

export { ServiceAccountNotManagedError } from './projection.ts';
export { kubeconfigSecretKey, type ManagedClusterEndpoint, tokenKubeconfig } from './token-secret.ts';

export interface ServiceAccountAgentOptions {
  /** the managed cluster's name = its namespace on the hub */
  clusterName: string;
  /** the cluster's registration identity (see rbac.ts for what it needs) */
  hubKubeConfig: KubeConfig;
  /** needs: namespaces get/create; serviceaccounts get/list/watch/create/delete and serviceaccounts/token
   * create in the install namespace; tokenreviews create */
  managedKubeConfig: KubeConfig;
  /** where the ServiceAccounts live (default `open-cluster-management-agent-addon`; created if missing) */
  installNamespace?: string;
  /**
   * server of the Secret's `kubeconfig` key (default: the managed KubeConfig's server), e.g. the
   * user-server's `https://<host>:<port>/<cluster>`
   */
  kubeconfigServerUrl?: string;
  /** PEM CA the `kubeconfig` key trusts for kubeconfigServerUrl (default: the managed apiserver's CA) */
  kubeconfigCaPem?: string;
  /** audiences of every token unless an MSA's token-audiences annotation says otherwise (default: the apiserver's) */
  audiences?: readonly string[];
  /** refresh a token once this fraction of its real lifetime has passed, 0 < f ≤ 1 (default 0.8) */
  refreshAtFraction?: number;
  /** the hub Secrets are not watched: each is read again at least this often (default 30 s) */
  tokenSecretCheckPeriodMs?: number;
  /** concurrent reconciles (default 2) */
  workers?: number;
  log?: Logger;
}

export interface ServiceAccountAgent {
  /** true once the hub and managed caches synced and reconciling started */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** How often a token Secret is read again at the latest: a deleted or altered one is put back by then. */
export const defaultTokenSecretCheckPeriodMs = 30_000;

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The managed apiserver's CA as PEM, from the KubeConfig's cluster (inline data or file). */
function managedClusterCa(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  if (cluster?.caData) return Buffer.from(cluster.caData, 'base64').toString('utf8');
  if (cluster?.caFile) return readFileSync(cluster.caFile, 'utf8');
  throw new InvalidArgumentError(
    'the managed kubeconfig has no certificate-authority(-data): the agent needs the managed apiserver CA for ca.crt',
  );
}

/** The kubeconfig server must be an https:// URL without query or fragment (a path is the user-server's /<cluster>). */
export function checkKubeconfigServerUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new InvalidArgumentError(`kubeconfig server URL "${url}" is not a URL`);
  }
  if (u.protocol !== 'https:' || u.search || u.hash || u.username || u.password)
    throw new InvalidArgumentError(
      `kubeconfig server URL "${url}" must be an https:// URL without credentials, query or fragment`,
    );
}

/** Start the agent; resolves once its informers are started (see `ready` for the first sync). */
export async function startServiceAccountAgent(
  opts: ServiceAccountAgentOptions,
): Promise<ServiceAccountAgent> {
  const { clusterName, hubKubeConfig, managedKubeConfig } = opts;
  const installNamespace = opts.installNamespace ?? addonAgentNamespace;
  const refreshAtFraction = opts.refreshAtFraction ?? 0.8;
  if (!dnsLabel.test(clusterName))
    throw new InvalidArgumentError(`cluster name "${clusterName}" is not a DNS label`);
  if (!dnsLabel.test(installNamespace)) {
    throw new InvalidArgumentError(`install namespace "${installNamespace}" is not a DNS label`);
  }
  if (!(refreshAtFraction > 0 && refreshAtFraction <= 1)) {
    throw new InvalidArgumentError(`refreshAtFraction ${refreshAtFraction} must be in (0, 1]`);
  }
  const tokenSecretCheckPeriodMs = opts.tokenSecretCheckPeriodMs ?? defaultTokenSecretCheckPeriodMs;
  if (!(Number.isFinite(tokenSecretCheckPeriodMs) && tokenSecretCheckPeriodMs >= 100)) {
    throw new InvalidArgumentError(`tokenSecretCheckPeriodMs ${tokenSecretCheckPeriodMs} must be ≥ 100`);
  }
  const log = opts.log ?? logger('serviceaccount-agent', { cluster: clusterName });
  const managedCluster = managedKubeConfig.getCurrentCluster();
  if (!managedCluster) throw new InvalidArgumentError('the managed kubeconfig has no current cluster');
  const server = opts.kubeconfigServerUrl ?? managedCluster.server;
  if (opts.kubeconfigServerUrl !== undefined) checkKubeconfigServerUrl(opts.kubeconfigServerUrl);
  if (opts.kubeconfigCaPem !== undefined) {
    if (opts.kubeconfigServerUrl === undefined)
      throw new InvalidArgumentError('kubeconfigCaPem goes with kubeconfigServerUrl: the CA of that server');
    if (!/-----BEGIN CERTIFICATE-----/.test(opts.kubeconfigCaPem))
      throw new InvalidArgumentError('kubeconfigCaPem is not a PEM certificate');
  }
  const endpoint: ManagedClusterEndpoint = {
    name: clusterName,
    server,
    caPem: managedClusterCa(managedKubeConfig),
    ...(opts.kubeconfigCaPem !== undefined ? { kubeconfigCaPem: opts.kubeconfigCaPem } : {}),
    ...(opts.kubeconfigServerUrl === undefined && managedCluster.tlsServerName
      ? { tlsServerName: managedCluster.tlsServerName }
      : {}),
  };

  const msaClient = new ResourceClient<ManagedServiceAccount>(hubKubeConfig, managedServiceAccountResource);
  const hubSecrets = new ResourceClient<Secret>(hubKubeConfig, secretResource);
  const serviceAccounts = new ResourceClient<ServiceAccount>(managedKubeConfig, serviceAccountResource);
  const namespaces = new ResourceClient<Namespace>(managedKubeConfig, namespaceResource);
  // A bad kubeconfigServerUrl or CA fails here, not on every MSA.
  tokenKubeconfig(endpoint, 'probe');

  const msaInformer = new Informer(msaClient, {
    namespace: clusterName,
    log: log.child({ resource: 'managedserviceaccounts' }),
  });
  // Only its change events matter (the MSA informer's resync revisits every key). Every
  // ServiceAccount of the namespace, so one without our label is seen (and left alone).
  const serviceAccountInformer = new Informer(serviceAccounts, {
    namespace: installNamespace,
    resyncPeriodMs: 0,
    log: log.child({ resource: 'serviceaccounts' }),
  });
  const reconciler = new ManagedServiceAccountProjectionReconciler({
    clusterName,
    installNamespace,
    endpoint,
    managedKubeConfig,
    audiences: parseAudiences(opts.audiences),
    refreshAtFraction,
    tokenSecretCheckPeriodMs,
    msaInformer,
    serviceAccountInformer,
    msaClient,
    hubSecrets,
    serviceAccounts,
    namespaces,
    log,
  });
  const controller = runController({
    name: 'managedserviceaccount-projection',
    informers: [msaInformer, serviceAccountInformer] as unknown as Informer<KubeObject>[],
    // An MSA's key is "<cluster>/<name>"; a ServiceAccount maps to its MSA's key when it is
    // ours (labelled: maybe orphaned by an MSA deleted while the agent was down) or an MSA wants it.
    keyFunc: (obj, informer) => {
      const name = obj.metadata?.name ?? '';
      if ((informer as unknown) !== serviceAccountInformer) return `${clusterName}/${name}`;
      const labelled = obj.metadata?.labels?.[managedServiceAccountLabel] === 'true';
      return labelled || msaInformer.getByName(name, clusterName) ? `${clusterName}/${name}` : undefined;
    },
    reconcile: (key) => reconciler.reconcile(key),
    workers: opts.workers ?? 2,
    log,
  });
  controller.ready.then(
    (ok) => ok && log.info({ installNamespace }, 'serviceaccount agent ready'),
    (err: unknown) => log.error({ err: errorMessage(err) }, 'serviceaccount agent failed to start'),
  );
  return { ready: controller.ready, stop: () => controller.stop() };
}
