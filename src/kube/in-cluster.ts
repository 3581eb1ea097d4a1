// In-cluster configuration: a tether process running as a pod (installed by `tether init` / `tether
// join` or the Helm charts) talks to the cluster it runs in with its ServiceAccount, the way
// kubectl and client-go do: when no kubeconfig is given and the pod's ServiceAccount token and the
// KUBERNETES_SERVICE_HOST/PORT variables are there. client-node's loadFromCluster reads the token
// file on every request, so the kubelet's token rotation needs nothing from us.
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Whether this process runs in a pod with a ServiceAccount token (in-cluster config is usable). */
export function runningInCluster(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(
    env.KUBERNETES_SERVICE_HOST &&
      env.KUBERNETES_SERVICE_PORT &&
      existsSync(`${SERVICE_ACCOUNT_DIR}/token`) &&
      existsSync(`${SERVICE_ACCOUNT_DIR}/ca.crt`),
  );
}

/** The pod's own cluster, or undefined outside a pod. */
export function inClusterKubeConfig(): KubeConfig | undefined {
  if (!runningInCluster()) return undefined;
  const kc = new KubeConfig();
  kc.loadFromCluster();
  return kc;
}
