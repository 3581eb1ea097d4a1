// `tether join` / `tether unjoin` as flows on the managed cluster: the managed CRDs
// (AppliedManifestWork, ClusterClaim) and agent.ts's objects, applied or returned for printing; the
// wait for the agent to be available; and removal of everything join installed plus the hub
// credential the agent wrote (`hub-kubeconfig-secret`) and the addon agents' namespace
// (open-cluster-management-agent-addon: without the klusterlet nobody removes what its work agent
// applied there, so it goes with it, as OCM's klusterlet removal takes its addon namespace along).
// In hosted mode the agent's objects go to the hosting cluster and the managed CRDs to the managed
// cluster (the agent also installs them itself when it starts).
import { AppsV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { addonAgentNamespace, managedCrdManifests, managedCrds } from '../api/index.ts';
import { installCrds } from '../localenv/crds.ts';
import { pollUntil } from '../wait.ts';
import { type AgentInstallOptions, agentManifests, agentNamespaceOf } from './agent.ts';
import { applyAll, deleteAll } from './apply.ts';
import { agentNames, agentNamespace as defaultAgentNamespace, hubKubeconfigSecretName } from './names.ts';

/** What join applies: the managed CRDs (not in hosted mode: they go to the other cluster) and the agent. */
export function planAgentInstall(opts: AgentInstallOptions): KubernetesObject[] {
  if (opts.managedClusterKubeconfig !== undefined) return agentManifests(opts);
  return [
    // the plain manifests (client-node's models print keys that are not the API's)
    ...(managedCrdManifests() as unknown as KubernetesObject[]),
    ...agentManifests(opts),
  ] as KubernetesObject[];
}

/** Applies `objects` to `kc`; the managed CRDs to `managedKc` (the managed cluster in hosted mode). */
export async function applyAgentInstall(
  kc: KubeConfig,
  objects: KubernetesObject[],
  managedKc: KubeConfig = kc,
): Promise<void> {
  await installCrds(managedKc, managedCrds());
  await applyAll(
    kc,
    objects.filter((o) => o.kind !== 'CustomResourceDefinition'),
  );
}

export async function waitForAgent(
  kc: KubeConfig,
  timeoutMs: number,
  agentNamespace = defaultAgentNamespace,
): Promise<void> {
  const apps = kc.makeApiClient(AppsV1Api);
  let last = 'not found';
  await pollUntil(
    async () => {
      const d = await apps.readNamespacedDeployment({
        name: agentNames.deployment,
        namespace: agentNamespace,
      });
      last = `${d.status?.availableReplicas ?? 0}/1 available`;
      return (d.status?.availableReplicas ?? 0) >= 1;
    },
    {
      timeoutMs,
      intervalMs: 500,
      description: `Deployment ${agentNamespace}/${agentNames.deployment} to be available`,
    },
  ).catch((err: Error) => {
    throw new Error(
      `${err.message} (${last}); see kubectl -n ${agentNamespace} logs deployment/${agentNames.deployment}`,
    );
  });
}

/**
 * Removes what join installed (the agent first, so it stops using its credential) and the agent's
 * hub credential; the namespace last. The managed CRDs stay: AppliedManifestWorks of resources the
 * agent applied keep their owner records, as OCM's klusterlet removal leaves them.
 */
export async function removeAgentInstall(
  kc: KubeConfig,
  where: { namespace?: string; hosted?: boolean } = {},
): Promise<string[]> {
  const shape = {
    clusterName: 'unused',
    namespace: where.namespace,
    managedClusterKubeconfig: where.hosted ? '' : undefined,
  };
  const agentNamespace = agentNamespaceOf(shape);
  const objects = agentManifests({
    ...shape,
    image: 'unused',
    imagePullPolicy: 'IfNotPresent',
    clusterName: 'unused',
    bootstrapKubeconfig: '',
    proxyServer: 'unused:1',
    proxyServerCaPem: 'unused',
    proxyCaPem: 'unused',
  });
  const hubSecret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: hubKubeconfigSecretName, namespace: agentNamespace },
  } as KubernetesObject;
  const addonNamespace = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: addonAgentNamespace },
  } as KubernetesObject;
  // deleteAll goes in reverse: Deployment first, then the Secrets (hub credential included), the
  // RBAC, the agent's namespace, and the addon agents' namespace last (hosted: on the managed
  // cluster, removed by the caller)
  return deleteAll(kc, [
    // the add-on agents' namespace is this agent's only when it is the cluster's first (default) one
    ...(where.hosted || agentNamespace !== defaultAgentNamespace ? [] : [addonNamespace]),
    ...objects.slice(0, 1),
    hubSecret,
    ...objects.slice(1),
  ]);
}
