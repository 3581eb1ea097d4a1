// An AddOnDeploymentConfig applied to an addon agent's rendered objects, as OCM's addon framework
// does for template addons: proxy settings become env (and the proxy CA a mounted ConfigMap),
// nodePlacement sets the pods' nodeSelector and tolerations, registries rewrite images, and
// resourceRequirements replace the resources of the containers their containerID matches.
// customizedVariables are not applied here: the manager hands them to the addon as ctx.variables.
// Pure: the input objects are not modified; bad input (a malformed containerID) throws, and the
// deploy controller reports it on that addon's ManifestApplied condition.
import type { KubernetesObject, V1Container, V1PodSpec } from '@kubernetes/client-node';
import type { AddOnDeploymentConfigSpec, ContainerResourceRequirements } from '../../../api/addon.ts';

/** Annotation on a ManagedCluster with image mirrors for every addon of it (JSON `{"registries":[…]}`). */
export const clusterImageRegistriesAnnotation = 'open-cluster-management.io/image-registries';

/** Where the proxy CA bundle is mounted in every agent container (OCM's template addons' path). */
export const proxyCaMountPath = '/managed/proxy-ca';
export const proxyCaVolumeName = 'proxy-ca-bundle';
export const proxyCaKey = 'ca-bundle.crt';
/** The ConfigMap in the install namespace holding the proxy CA bundle. */
export function proxyCaConfigMapName(addonName: string): string {
  return `${addonName}-proxy-ca`;
}

export type ImageMirror = { mirror: string; source?: string };

export interface DeploymentConfigInput {
  addonName: string;
  installNamespace: string;
  /** the addon's AddOnDeploymentConfig spec (none: only the cluster's registries apply) */
  config?: AddOnDeploymentConfigSpec;
  /** registries from the ManagedCluster's annotation; used when the config names none */
  clusterRegistries?: readonly ImageMirror[];
}

/** Thrown for a config that cannot be applied; its message goes to the addon's status. */
export class DeploymentConfigError extends Error {
  override name = 'DeploymentConfigError';
}

/** Pod template locations by kind, and the plural used in resourceRequirements' containerIDs. */
const workloads: Record<string, { resource: string; podSpec: (o: Record<string, unknown>) => unknown }> = {
  Deployment: { resource: 'deployments', podSpec: (o) => dig(o, ['spec', 'template', 'spec']) },
  DaemonSet: { resource: 'daemonsets', podSpec: (o) => dig(o, ['spec', 'template', 'spec']) },
  StatefulSet: { resource: 'statefulsets', podSpec: (o) => dig(o, ['spec', 'template', 'spec']) },
  ReplicaSet: { resource: 'replicasets', podSpec: (o) => dig(o, ['spec', 'template', 'spec']) },
  Job: { resource: 'jobs', podSpec: (o) => dig(o, ['spec', 'template', 'spec']) },
  CronJob: {
    resource: 'cronjobs',
    podSpec: (o) => dig(o, ['spec', 'jobTemplate', 'spec', 'template', 'spec']),
  },
  Pod: { resource: 'pods', podSpec: (o) => dig(o, ['spec']) },
};

function dig(o: Record<string, unknown>, path: string[]): unknown {
  let v: unknown = o;
  for (const p of path) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

/**
 * The objects with `input.config` applied (copies; the inputs are untouched), plus the proxy CA
 * ConfigMap when the config carries a CA bundle.
 */
export function applyDeploymentConfig(
  objects: readonly KubernetesObject[],
  input: DeploymentConfigInput,
): KubernetesObject[] {
  const config = input.config ?? {};
  const matchers = resourceMatchers(config.resourceRequirements ?? []);
  const registries = config.registries?.length ? config.registries : (input.clusterRegistries ?? []);
  const proxyEnv = proxyEnvOf(config);
  const caBundle = config.proxyConfig?.caBundle ? decodeCaBundle(config.proxyConfig.caBundle) : undefined;
  const out: KubernetesObject[] = [];
  for (const original of objects) {
    const obj = structuredClone(original) as KubernetesObject & Record<string, unknown>;
    out.push(obj);
    const workload = workloads[obj.kind ?? ''];
    if (!workload) continue;
    const podSpec = workload.podSpec(obj) as V1PodSpec | undefined;
    if (!podSpec || typeof podSpec !== 'object') continue;
    const name = obj.metadata?.name ?? '';
    // The CA ConfigMap lives in the install namespace; only pods there can mount it.
    const mountsCa =
      caBundle !== undefined &&
      (obj.metadata?.namespace ?? input.installNamespace) === input.installNamespace;
    if (config.nodePlacement?.nodeSelector) podSpec.nodeSelector = { ...config.nodePlacement.nodeSelector };
    if (config.nodePlacement?.tolerations)
      podSpec.tolerations = structuredClone(config.nodePlacement.tolerations);
    if (mountsCa) {
      podSpec.volumes = [
        ...(podSpec.volumes ?? []).filter((v) => v.name !== proxyCaVolumeName),
        { name: proxyCaVolumeName, configMap: { name: proxyCaConfigMapName(input.addonName) } },
      ];
    }
    for (const container of [...(podSpec.initContainers ?? []), ...(podSpec.containers ?? [])]) {
      if (container.image) container.image = overrideImage(registries, container.image);
    }
    for (const container of podSpec.containers ?? []) {
      if (proxyEnv.length > 0 || mountsCa) {
        const env = [...proxyEnv];
        if (mountsCa) env.push({ name: 'CA_BUNDLE_FILE_PATH', value: `${proxyCaMountPath}/${proxyCaKey}` });
        setEnv(container, env);
      }
      if (mountsCa) {
        container.volumeMounts = [
          ...(container.volumeMounts ?? []).filter((m) => m.name !== proxyCaVolumeName),
          { name: proxyCaVolumeName, mountPath: proxyCaMountPath },
        ];
      }
      const resources = matchResources(matchers, `${workload.resource}:${name}:${container.name}`);
      if (resources) container.resources = structuredClone(resources) as V1Container['resources'];
    }
  }
  if (caBundle !== undefined) {
    out.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: proxyCaConfigMapName(input.addonName), namespace: input.installNamespace },
      data: { [proxyCaKey]: caBundle },
    } as KubernetesObject);
  }
  return out;
}

/** HTTP_PROXY, HTTPS_PROXY and NO_PROXY in both spellings, for the values the config sets. */
function proxyEnvOf(config: AddOnDeploymentConfigSpec): { name: string; value: string }[] {
  const p = config.proxyConfig;
  if (!p) return [];
  const env: { name: string; value: string }[] = [];
  for (const [name, value] of [
    ['HTTP_PROXY', p.httpProxy],
    ['HTTPS_PROXY', p.httpsProxy],
    ['NO_PROXY', p.noProxy],
  ] as const) {
    if (!value) continue;
    env.push({ name, value }, { name: name.toLowerCase(), value });
  }
  return env;
}

/** Replace entries of the same name, append the others (the container's other env stays as is). */
function setEnv(container: V1Container, env: readonly { name: string; value: string }[]): void {
  const names = new Set(env.map((e) => e.name));
  container.env = [...(container.env ?? []).filter((e) => !names.has(e.name)), ...env];
}

/** caBundle is `[]byte` in the API, so base64 in JSON; a PEM given as is is taken as is. */
function decodeCaBundle(caBundle: string): string {
  if (caBundle.includes('-----BEGIN')) return caBundle;
  return Buffer.from(caBundle, 'base64').toString('utf8');
}

/**
 * OCM's image override: for every mirror (the last matching one wins), an image starting with
 * `source` gets that prefix replaced by `mirror`; a mirror without source takes every image, as
 * `mirror/<last path segment>`.
 */
export function overrideImage(registries: readonly ImageMirror[], image: string): string {
  let result = image;
  for (const r of registries) {
    const source = (r.source ?? '').replace(/\/$/, '');
    const mirror = (r.mirror ?? '').replace(/\/$/, '');
    let candidate: string;
    if (!source) {
      const last = image.split('/').at(-1) ?? image;
      candidate = mirror ? `${mirror}/${last}` : last;
    } else if (image.startsWith(source)) {
      candidate = mirror + image.slice(source.length);
    } else {
      candidate = image;
    }
    if (candidate !== image) result = candidate;
  }
  return result;
}

interface ResourceMatcher {
  pattern: RegExp;
  resources: ContainerResourceRequirements['resources'];
}

/** containerID `<resource>:<name>:<container>`, each part a name or `*`. */
function resourceMatchers(entries: readonly ContainerResourceRequirements[]): ResourceMatcher[] {
  return entries.map((entry) => {
    const parts = entry.containerID.split(':');
    if (parts.length !== 3 || parts.some((p) => p === '')) {
      throw new DeploymentConfigError(
        `resourceRequirements containerID ${JSON.stringify(entry.containerID)} is not <resource>:<name>:<container>`,
      );
    }
    const regex = parts.map((p) => (p === '*' ? '.+' : escapeRegExp(p))).join(':');
    return { pattern: new RegExp(`^${regex}$`), resources: entry.resources };
  });
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The last entry matching wins (later entries are more specific by convention, as in OCM). */
function matchResources(matchers: readonly ResourceMatcher[], id: string) {
  for (let i = matchers.length - 1; i >= 0; i--) {
    const m = matchers[i];
    if (m?.pattern.test(id)) return m.resources;
  }
  return undefined;
}

/** The registries of a ManagedCluster's image-registries annotation ([] when absent or malformed). */
export function clusterRegistriesOf(
  annotations: Readonly<Record<string, string>> | undefined,
): ImageMirror[] {
  const raw = annotations?.[clusterImageRegistriesAnnotation];
  if (!raw) return [];
  try {
    const parsed = JSON.parse(raw) as { registries?: unknown };
    if (!Array.isArray(parsed.registries)) return [];
    return parsed.registries.filter(
      (r): r is ImageMirror => !!r && typeof r === 'object' && typeof (r as ImageMirror).mirror === 'string',
    );
  } catch {
    return [];
  }
}
