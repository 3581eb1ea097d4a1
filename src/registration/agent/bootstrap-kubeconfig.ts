// The bootstrap hub kubeconfig: the short-lived credential an agent joins the hub with. Read from a
// file or from Secret `bootstrap-hub-kubeconfig` (key `kubeconfig`) in the agent namespace on the
// managed cluster. Owns the proxy rules for every hub connection the agent makes: an explicit
// proxy URL (agent option) wins, then the kubeconfig's own `proxy-url`, then HTTPS_PROXY/NO_PROXY.
// Only the first two are written into the hub kubeconfig the agent stores; the environment is
// applied again whenever a kubeconfig is loaded, the way client-go picks it up.
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { bootstrapHubKubeconfigSecretName, HubKubeconfigSecretKey } from '../../api/index.ts';
import { errorMessage, InvalidKubeconfigError } from '../../errors.ts';
import {
  applyEnvProxy,
  checkKubeconfig,
  loadKubeconfig,
  type ProxyEnv,
  ResourceClient,
} from '../../kube/index.ts';
import { type Secret, secretResource, unb64 } from './kinds.ts';

/** What the agent takes from the bootstrap kubeconfig to build its own hub kubeconfig. */
export interface HubEndpoint {
  /** https URL of the hub kube-apiserver */
  server: string;
  /** PEM of the CA that signed the hub apiserver's serving certificate */
  caPem: string;
  /** forward proxy configured for the hub (not the one from the environment) */
  proxyUrl?: string;
  tlsServerName?: string;
}

export interface BootstrapKubeconfig {
  /** ready for hub calls: the configured proxy, else the environment's */
  kubeconfig: KubeConfig;
  hub: HubEndpoint;
  /** where it came from, for logs and errors */
  source: string;
}

export interface BootstrapSource {
  /** the cluster that keeps the agent's Secrets: the managed cluster, or the hosting one in hosted mode */
  agentKubeConfig: KubeConfig;
  agentNamespace: string;
  /** a kubeconfig file; without it the Secret in the agent namespace */
  bootstrapKubeconfigPath?: string;
  /** forward proxy for every hub call; overrides the kubeconfig's proxy-url */
  proxyUrl?: string;
  proxyEnv?: ProxyEnv;
}

/** Load the bootstrap kubeconfig; throws InvalidKubeconfigError saying what is missing or wrong. */
export async function loadBootstrapKubeconfig(
  source: BootstrapSource,
  signal?: AbortSignal,
): Promise<BootstrapKubeconfig> {
  if (source.bootstrapKubeconfigPath) {
    const kc = loadKubeconfig(source.bootstrapKubeconfigPath, { proxyEnv: false });
    return bootstrapFromKubeConfig(kc, source.bootstrapKubeconfigPath, source);
  }
  const where = `secret ${source.agentNamespace}/${bootstrapHubKubeconfigSecretName}`;
  const secrets = new ResourceClient<Secret>(source.agentKubeConfig, secretResource);
  const secret = await secrets.get(bootstrapHubKubeconfigSecretName, source.agentNamespace, { signal });
  if (!secret) {
    throw new InvalidKubeconfigError(
      where,
      'not found on the managed cluster: create it (tether join) or pass a bootstrap kubeconfig file',
    );
  }
  const text = unb64(secret.data?.[HubKubeconfigSecretKey.Kubeconfig]);
  if (!text.trim())
    throw new InvalidKubeconfigError(where, `has no "${HubKubeconfigSecretKey.Kubeconfig}" key`);
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (err) {
    throw new InvalidKubeconfigError(where, `cannot parse: ${errorMessage(err)}`, { cause: err });
  }
  return bootstrapFromKubeConfig(kc, where, source);
}

/**
 * The hub apiserver URL as the agent uses it (and hashes it for AppliedManifestWork names): the
 * kubeconfig cluster's server without a trailing slash.
 */
export function hubServerOf(cluster: { server: string }): string {
  return cluster.server.replace(/\/$/, '');
}

/** Check a parsed bootstrap kubeconfig, settle its proxy and pull out the hub endpoint. */
export function bootstrapFromKubeConfig(
  kc: KubeConfig,
  source: string,
  options: Pick<BootstrapSource, 'proxyUrl' | 'proxyEnv'> = {},
): BootstrapKubeconfig {
  if (options.proxyUrl) {
    kc.clusters = kc.clusters.map((c) => ({ ...c, proxyUrl: options.proxyUrl }));
  }
  checkKubeconfig(kc, source);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new InvalidKubeconfigError(source, 'no current cluster');
  const hub: HubEndpoint = {
    server: hubServerOf(cluster),
    caPem: caPemOf(cluster, source),
    ...(cluster.proxyUrl ? { proxyUrl: cluster.proxyUrl } : {}),
    ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
  };
  applyEnvProxy(kc, options.proxyEnv ?? process.env);
  return { kubeconfig: kc, hub, source };
}

function caPemOf(cluster: { caData?: string; caFile?: string }, source: string): string {
  let pem = '';
  if (cluster.caData) pem = unb64(cluster.caData);
  else if (cluster.caFile) {
    try {
      pem = readFileSync(cluster.caFile, 'utf8');
    } catch (err) {
      throw new InvalidKubeconfigError(source, `cannot read certificate-authority ${cluster.caFile}`, {
        cause: err,
      });
    }
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new InvalidKubeconfigError(
      source,
      'the hub cluster has no certificate-authority(-data): the agent verifies the hub and needs its CA',
    );
  }
  return pem;
}
