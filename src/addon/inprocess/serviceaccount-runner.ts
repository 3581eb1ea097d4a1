// The managed-serviceaccount add-on run inside the klusterlet agent: tether's ManagedServiceAccount
// agent (src/serviceaccount/agent) with the add-on's own hub credential (the identity and hub RBAC
// the add-on's Deployment would have had) and the klusterlet's credential on its own cluster (one
// process holds both either way). A new certificate restarts it, as a rotation of the cluster's
// credential restarts the klusterlet's own agents. Healthy once its caches synced.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../log.ts';
import { managedServiceAccountAddonName } from '../../serviceaccount/rbac.ts';
import { type AddonRunner, addonHubKubeconfig } from './runner.ts';

export interface ServiceAccountRunnerOptions {
  clusterName: string;
  managedKubeConfig: KubeConfig;
  log: Logger;
}

export function serviceAccountRunner(o: ServiceAccountRunnerOptions): AddonRunner {
  return async (input) => {
    const { startServiceAccountAgent } = await import('../../serviceaccount/index.ts');
    const agent = await startServiceAccountAgent({
      clusterName: o.clusterName,
      hubKubeConfig: addonHubKubeconfig(managedServiceAccountAddonName, input.credential),
      managedKubeConfig: o.managedKubeConfig,
      installNamespace: input.namespace,
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
