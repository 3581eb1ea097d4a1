// What tether's built-in addons (cluster-proxy, managed-serviceaccount, cluster-gateway) render
// alike on a managed cluster (their install namespace is the manager's sharedInstallNamespace): the
// hub credential Secret `<addon>-hub-kubeconfig` mounted where OCM's template addons mount it; the
// flag naming the forward proxy's CA the manager mounts from an AddOnDeploymentConfig; in hosted
// mode, what goes to the hosting cluster and how the agent there reaches the managed one. Pure data.
import type { KubernetesObject } from '@kubernetes/client-node';
import { addonManagedKubeconfigSecretName, type ConfigMeta } from '../../api/addon.ts';
import { hostsInProcess, inProcessAddonLabel, inProcessConfigMapName } from '../../api/addon-in-process.ts';
import type { ManagedCluster } from '../../api/cluster.ts';
import type { SecretMount } from '../../kube/workload.ts';
import { HostedManifestLocation, hostedManifestLocationKey } from '../hub/addon-conditions.ts';
import { proxyCaKey, proxyCaMountPath } from '../hub/config/deployment-config.ts';
import { hubKubeconfigMountPath, hubKubeconfigSecretName } from '../sdk/agent.ts';
import type { AddonHealthProber, AddonRenderContext } from '../sdk/types.ts';

/** What the hub shows of a built-in addon: its ClusterManagementAddOn's addOnMeta and supportedConfigs. */
export interface BuiltinAddonMeta {
  name: string;
  displayName: string;
  description: string;
  supportedConfigs: readonly ConfigMeta[];
}

/** A ServiceAccount for an addon agent; no API token unless the agent talks to its own cluster. */
export function agentServiceAccount(
  name: string,
  namespace: string,
  automountToken: boolean,
): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace },
    ...(automountToken ? {} : { automountServiceAccountToken: false }),
  } as KubernetesObject;
}

/** A ConfigMap holding one PEM bundle under `ca.crt`. */
export function caConfigMap(name: string, namespace: string, pem: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data: { 'ca.crt': pem },
  } as KubernetesObject;
}

/**
 * The flag that hands tether's agents the forward proxy's CA bundle of an AddOnDeploymentConfig
 * (proxyConfig.caBundle). The manager puts the bundle in ConfigMap `<addon>-proxy-ca` and mounts it
 * in every agent container at OCM's template path (src/addon/hub/config/deployment-config.ts), and sets
 * HTTPS_PROXY / NO_PROXY, which the agents read themselves.
 */
export function forwardProxyCaArgs(ctx: AddonRenderContext): string[] {
  return ctx.deploymentConfig?.proxyConfig?.caBundle
    ? [`--proxy-ca-file=${proxyCaMountPath}/${proxyCaKey}`]
    : [];
}

/** The mount of the addon's hub credential (tls.crt, tls.key, kubeconfig). */
export function hubKubeconfigMount(addon: string): SecretMount {
  return { kind: 'Secret', name: hubKubeconfigSecretName(addon), mountPath: hubKubeconfigMountPath };
}

/** Sets a field on the pod template of a Deployment `deployment()` rendered. */
export function withPodSpec(deployment: KubernetesObject, fields: Record<string, unknown>): KubernetesObject {
  const d = deployment as KubernetesObject & { spec: { template: { spec: Record<string, unknown> } } };
  Object.assign(d.spec.template.spec, fields);
  return d;
}

/**
 * What the hub renders instead of the agent's Deployment, ServiceAccount and RBAC when the cluster's
 * klusterlet agent hosts the add-on in its own process (src/api/addon-in-process.ts): ConfigMap
 * `<addon>-in-process` with what the agent needs of the hub's options.
 */
export function inProcessConfigMap(
  addon: string,
  namespace: string,
  data: Record<string, string>,
): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: inProcessConfigMapName(addon), namespace, labels: { [inProcessAddonLabel]: addon } },
    data,
  } as KubernetesObject;
}

/** A built-in add-on's probe on `cluster`: its Lease where the klusterlet hosts it, else its Deployment. */
export function builtinAddonHealth(addon: string, cluster: ManagedCluster): AddonHealthProber {
  return hostsInProcess(cluster, addon) ? { type: 'Lease' } : { type: 'DeploymentAvailability' };
}

/** Hosted mode: `obj` goes to the hosting cluster (OCM's hosted-manifest-location annotation). */
export function onHostingCluster(obj: KubernetesObject): KubernetesObject {
  return {
    ...obj,
    metadata: {
      ...(obj.metadata ?? {}),
      annotations: {
        ...(obj.metadata?.annotations ?? {}),
        [hostedManifestLocationKey]: HostedManifestLocation.Hosting,
      },
    },
  } as KubernetesObject;
}

/** Where a hosted agent mounts its managed cluster's kubeconfig (Secret `<addon>-managed-kubeconfig`). */
export const managedKubeconfigMountPath = '/managed/managed-kubeconfig';

export function managedKubeconfigMount(addon: string): SecretMount {
  return {
    kind: 'Secret',
    name: addonManagedKubeconfigSecretName(addon),
    mountPath: managedKubeconfigMountPath,
  };
}

/**
 * The managed apiserver's host:port as its klusterlet reports it (ManagedCluster
 * spec.managedClusterClientConfigs[0].url): what a hosted add-on agent dials. Throws, for the
 * add-on's status, until the agent has reported one.
 */
export function managedApiserverAddress(cluster: ManagedCluster): string {
  const url = cluster.spec?.managedClusterClientConfigs?.[0]?.url;
  if (!url)
    throw new Error(
      `ManagedCluster ${cluster.metadata?.name ?? ''} has no spec.managedClusterClientConfigs[0].url yet: a hosted agent dials the apiserver its klusterlet reports`,
    );
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(
      `spec.managedClusterClientConfigs[0].url is not a URL: ${JSON.stringify(url).slice(0, 200)}`,
    );
  }
  if (parsed.protocol !== 'https:')
    throw new Error(
      `spec.managedClusterClientConfigs[0].url must be https://, got ${JSON.stringify(url).slice(0, 200)}`,
    );
  return parsed.port ? parsed.host : `${parsed.host}:443`;
}
