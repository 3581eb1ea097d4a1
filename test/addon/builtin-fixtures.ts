// Shared by the built-in addon unit tests: a render context for one cluster, and typed access to
// the objects an addon renders.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { AddonRenderContext, AgentAddon } from '../../src/addon/sdk/types.ts';
import type { AddOnDeploymentConfigSpec, ManagedClusterAddOn } from '../../src/api/addon.ts';
import type { ManagedCluster } from '../../src/api/cluster.ts';

export function cluster(name: string, hubAcceptsClient = true): ManagedCluster {
  return {
    apiVersion: 'cluster.open-cluster-management.io/v1',
    kind: 'ManagedCluster',
    metadata: { name },
    spec: { hubAcceptsClient },
  } as ManagedCluster;
}

export function managedClusterAddOn(name: string, clusterName: string): ManagedClusterAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ManagedClusterAddOn',
    metadata: { name, namespace: clusterName, uid: `uid-${name}-${clusterName}` },
    spec: {},
  };
}

export function renderContext(
  addon: string,
  clusterName: string,
  opts: {
    installNamespace?: string;
    deploymentConfig?: AddOnDeploymentConfigSpec;
    /** hosted mode on this hosting cluster */
    hostingCluster?: string;
    /** the managed apiserver the klusterlet reports (spec.managedClusterClientConfigs[0].url) */
    apiserverUrl?: string;
  } = {},
): AddonRenderContext {
  const c = cluster(clusterName);
  if (opts.apiserverUrl) c.spec = { ...c.spec, managedClusterClientConfigs: [{ url: opts.apiserverUrl }] };
  return {
    cluster: c,
    addon: managedClusterAddOn(addon, clusterName),
    installNamespace: opts.installNamespace ?? 'open-cluster-management-agent-addon',
    installMode: opts.hostingCluster ? 'Hosted' : 'Default',
    ...(opts.hostingCluster ? { hostingClusterName: opts.hostingCluster } : {}),
    ...(opts.deploymentConfig ? { deploymentConfig: opts.deploymentConfig } : {}),
    variables: {},
    configs: [],
  };
}

export async function render(addon: AgentAddon, ctx: AddonRenderContext): Promise<KubernetesObject[]> {
  return await addon.manifests(ctx);
}

/** The one object of `kind` (and `name`, when given); fails the test when there is not exactly one. */
export function one<T = Record<string, unknown>>(
  objects: KubernetesObject[],
  kind: string,
  name?: string,
): T & KubernetesObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0] as T & KubernetesObject;
}

export interface PodTemplate {
  spec: {
    replicas: number;
    template: {
      spec: {
        serviceAccountName: string;
        automountServiceAccountToken?: boolean;
        containers: {
          args: string[];
          image: string;
          imagePullPolicy: string;
          volumeMounts: { name: string; mountPath: string }[];
        }[];
        volumes: {
          name: string;
          secret?: { secretName: string; items?: { key: string }[] };
          configMap?: { name: string };
        }[];
      };
    };
  };
}

/** mount path → the Secret or ConfigMap mounted there. */
export function mountsOf(d: PodTemplate): Record<string, string> {
  const pod = d.spec.template.spec;
  const out: Record<string, string> = {};
  for (const m of pod.containers[0]?.volumeMounts ?? []) {
    const v = pod.volumes.find((x) => x.name === m.name);
    if (v?.secret) out[m.mountPath] = `Secret/${v.secret.secretName}`;
    if (v?.configMap) out[m.mountPath] = `ConfigMap/${v.configMap.name}`;
  }
  return out;
}
