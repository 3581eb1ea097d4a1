// The managed-serviceaccount add-on run inside the klusterlet agent: tether's ManagedServiceAccount
// agent (src/serviceaccount/agent) with the add-on's own hub credential (the identity and hub RBAC
// the add-on's Deployment would have had) and the klusterlet's credential on its own cluster (one
// process holds both either way). Where the hub runs a user-server, the token Secrets' kubeconfig
// points at it: server and CA from the hub's ConfigMap. A new certificate restarts it, as a rotation
// of the cluster's credential restarts the klusterlet's own agents. Healthy once its caches synced.
import type { KubeConfig } from '@kubernetes/client-node';
import { InProcessConfigKey } from '../../api/addon-in-process.ts';
import { InvalidArgumentError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { managedServiceAccountAddonName } from '../../serviceaccount/rbac.ts';
import { type AddonRunner, addonHubKubeconfig, type HostedAddonInput } from './runner.ts';

export interface ServiceAccountRunnerOptions {
  clusterName: string;
  managedKubeConfig: KubeConfig;
  log: Logger;
}

/**
 * The token Secrets' kubeconfig server and CA from the ConfigMap (the user-server's `<url>/<cluster>`
 * and its CA, both or neither); none: the managed apiserver, as the agent sees it.
 */
export function kubeconfigEndpointOf(
  input: HostedAddonInput,
): { kubeconfigServerUrl: string; kubeconfigCaPem: string } | undefined {
  const kubeconfigServerUrl = input.config[InProcessConfigKey.KubeconfigServerUrl];
  const kubeconfigCaPem = input.config[InProcessConfigKey.KubeconfigCaCert];
  if (!kubeconfigServerUrl && !kubeconfigCaPem) return undefined;
  if (!kubeconfigServerUrl || !kubeconfigCaPem) {
    const { KubeconfigServerUrl: url, KubeconfigCaCert: ca } = InProcessConfigKey;
    throw new InvalidArgumentError(
      `the managed-serviceaccount ConfigMap has no ${kubeconfigServerUrl ? ca : url}: the hub renders ${url} and ${ca} together`,
    );
  }
  return { kubeconfigServerUrl, kubeconfigCaPem };
}

export function serviceAccountRunner(o: ServiceAccountRunnerOptions): AddonRunner {
  return async (input) => {
    const kubeconfigEndpoint = kubeconfigEndpointOf(input);
    const { startServiceAccountAgent } = await import('../../serviceaccount/index.ts');
    const agent = await startServiceAccountAgent({
      clusterName: o.clusterName,
      hubKubeConfig: addonHubKubeconfig(managedServiceAccountAddonName, input.credential),
      managedKubeConfig: o.managedKubeConfig,
      installNamespace: input.namespace,
      ...kubeconfigEndpoint,
      log: o.log,
    });
    let synced = false;
    agent.ready.then(
      (ok) => {
        synced = ok;
      },
      () => {},
    );
    return { healthy: () => synced, stop: () => agent.stop() };
  };
}
