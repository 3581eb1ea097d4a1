// Kubeconfigs that reach a managed cluster through the gateway: the hub kubeconfig with the server
// URL extended by /apis/cluster.core.oam.dev/v1alpha1/clustergateways/<cluster>/proxy. The hub
// authenticates the caller as usual; the gateway forwards with the cluster's own credential.
import { type Cluster, type Context, KubeConfig, type User } from '@kubernetes/client-node';
import { InvalidArgumentError } from '../errors.ts';
import { kubeconfigToYaml } from '../kube/index.ts';
import { gatewayGroup, gatewayVersion } from './types.ts';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The gateway URL of `cluster` on a hub reached at `hubServer`. */
export function gatewayServerUrl(hubServer: string, cluster: string): string {
  if (!DNS_SUBDOMAIN.test(cluster)) {
    throw new InvalidArgumentError(`"${cluster}" is not a valid managed cluster name`);
  }
  return `${hubServer.replace(/\/+$/, '')}/apis/${gatewayGroup}/${gatewayVersion}/clustergateways/${cluster}/proxy`;
}

/**
 * A KubeConfig for `cluster` made from the current context of a hub KubeConfig: same user and CA,
 * server URL pointing at the cluster's gateway proxy. Names (cluster, user, context) become `cluster`.
 */
export function kubeConfigForCluster(hubKc: KubeConfig, cluster: string): KubeConfig {
  const current = hubKc.getCurrentContext();
  const context = current ? hubKc.getContextObject(current) : null;
  const hubCluster = context ? hubKc.getCluster(context.cluster) : null;
  const user = context?.user ? hubKc.getUser(context.user) : null;
  if (!context || !hubCluster || !user) {
    throw new InvalidArgumentError('the hub kubeconfig has no usable current context (cluster and user)');
  }
  const c: Cluster = { ...hubCluster, name: cluster, server: gatewayServerUrl(hubCluster.server, cluster) };
  const u: User = { ...user, name: cluster };
  const ctx: Context = {
    name: cluster,
    cluster,
    user: cluster,
    ...(context.namespace ? { namespace: context.namespace } : {}),
  };
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [c], users: [u], contexts: [ctx], currentContext: cluster });
  return kc;
}

/** `tether kubeconfig --cluster <c>`: the hub kubeconfig (YAML text or KubeConfig) → YAML for `c`. */
export function gatewayKubeconfig(hubKubeconfig: string | KubeConfig, cluster: string): string {
  let kc: KubeConfig;
  if (typeof hubKubeconfig === 'string') {
    kc = new KubeConfig();
    kc.loadFromString(hubKubeconfig);
  } else {
    kc = hubKubeconfig;
  }
  return kubeconfigToYaml(kubeConfigForCluster(kc, cluster));
}
