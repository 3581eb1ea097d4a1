// Where the config manager reads the objects add-ons reference, to hash them.
// AddOnDeploymentConfigs come from an informer (a change re-queues the add-ons at once); any
// other kind a ClusterManagementAddOn supports is found through discovery (the group's preferred
// version, cached for discoveryMaxAgeMs) and read on demand, so its changes are seen on the next
// pass (an add-on event or the resync period). Reads only.
import { ApisApi, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { type AddOnDeploymentConfig, addOnDeploymentConfigResource } from '../../api/addon.ts';
import {
  type Informer,
  isNotFound,
  type KubeObject,
  ResourceClient,
  type ResourceDescriptor,
} from '../../kube/index.ts';
import {
  type ConfigSelection,
  configSpecHash,
  groupResourceKey,
  type ResolvedSelection,
} from './config-references.ts';

/** How long a discovered kind (or the knowledge that nobody serves it) is trusted. */
const discoveryMaxAgeMs = 5 * 60_000;

export const addOnDeploymentConfigKind = {
  group: addOnDeploymentConfigResource.group,
  resource: addOnDeploymentConfigResource.plural,
} as const;

/** Reads config objects and hashes them; one instance per controller. */
export class ConfigObjects {
  private readonly kc: KubeConfig;
  private readonly deploymentConfigs: Informer<AddOnDeploymentConfig>;
  private readonly discovered = new Map<string, { descriptor?: ResourceDescriptor; at: number }>();

  constructor(kc: KubeConfig, deploymentConfigs: Informer<AddOnDeploymentConfig>) {
    this.kc = kc;
    this.deploymentConfigs = deploymentConfigs;
  }

  /** A resolver for one reconcile pass: every object is read at most once per pass. */
  pass(): (s: ConfigSelection) => Promise<ResolvedSelection> {
    const seen = new Map<string, Promise<ResolvedSelection>>();
    return (s) => {
      const key = `${groupResourceKey(s)}/${s.referent.namespace ?? ''}/${s.referent.name}`;
      let found = seen.get(key);
      if (!found) {
        found = this.resolve(s);
        seen.set(key, found);
      }
      return found;
    };
  }

  private async resolve(s: ConfigSelection): Promise<ResolvedSelection> {
    const obj = await this.read(s);
    if (!obj) return { ...s, specHash: '' };
    const generation = obj.metadata?.generation;
    return {
      ...s,
      specHash: configSpecHash(obj as Record<string, unknown>),
      ...(generation !== undefined ? { generation } : {}),
    };
  }

  private async read(s: ConfigSelection): Promise<KubeObject | undefined> {
    const { name, namespace } = s.referent;
    if (s.group === addOnDeploymentConfigKind.group && s.resource === addOnDeploymentConfigKind.resource) {
      return this.deploymentConfigs.getByName(name, namespace);
    }
    const descriptor = await this.discover(s);
    if (!descriptor) return undefined;
    if (descriptor.namespaced && !namespace) return undefined;
    return new ResourceClient(this.kc, descriptor).get(name, descriptor.namespaced ? namespace : undefined);
  }

  private async discover(gr: { group: string; resource: string }): Promise<ResourceDescriptor | undefined> {
    const key = groupResourceKey(gr);
    const cached = this.discovered.get(key);
    if (cached && Date.now() - cached.at < discoveryMaxAgeMs) return cached.descriptor;
    let descriptor: ResourceDescriptor | undefined;
    try {
      const version = gr.group
        ? (await this.kc.makeApiClient(ApisApi).getAPIVersions()).groups.find((g) => g.name === gr.group)
            ?.preferredVersion?.version
        : 'v1';
      if (version) {
        const list = gr.group
          ? await this.kc.makeApiClient(CustomObjectsApi).getAPIResources({ group: gr.group, version })
          : await this.kc.makeApiClient(CoreV1Api).getAPIResources();
        const r = list?.resources?.find((x) => x.name === gr.resource);
        if (r)
          descriptor = { group: gr.group, version, plural: r.name, kind: r.kind, namespaced: r.namespaced };
      }
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.discovered.set(key, { ...(descriptor ? { descriptor } : {}), at: Date.now() });
    return descriptor;
  }
}
