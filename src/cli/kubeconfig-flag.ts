// `--kubeconfig` for the verbs that talk to a cluster through the Kubernetes client. Apart from
// options.ts so that verbs without a cluster client (proxy-agent, proxy-server without a hub) do not
// load it.
import type { KubeConfig } from '@kubernetes/client-node';
import { InvalidArgumentError as TetherInvalidArgument } from '../errors.ts';
import { inClusterKubeConfig, loadKubeconfig } from '../kube/index.ts';

/**
 * Loads the kubeconfig a `--kubeconfig` flag (or KUBECONFIG) names; `of` says whose it must be.
 * Without one, a process running in a pod uses its ServiceAccount (in-cluster config), like kubectl.
 */
export function kubeconfigFlag(
  path: string | undefined,
  of: 'hub' | 'managed cluster' | 'hosting cluster',
): KubeConfig {
  if (path) return loadKubeconfig(path, { proxyEnv: false });
  const inCluster = inClusterKubeConfig();
  if (inCluster) return inCluster;
  throw new TetherInvalidArgument(
    `--kubeconfig (or KUBECONFIG) must name the ${of} kubeconfig (in a pod, its ServiceAccount is used instead)`,
  );
}
