// Reading an addon's referenced configs on the hub. AddOnDeploymentConfigs come from an informer's
// cache (every deploy controller watches them); any other supported config kind is read from the
// apiserver at its group's preferred version, found once per group through discovery (/apis).
// Read-only.
import { ApisApi, type KubeConfig } from '@kubernetes/client-node';
import { addOnDeploymentConfigResource } from '../../api/addon.ts';
import type { Informer } from '../../kube/informer.ts';
import { ResourceClient } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import type { ConfigRef } from './deploy-configs.ts';

/** How long a group's preferred version is trusted before discovery is asked again. */
const discoveryMaxAgeMs = 5 * 60_000;
/** A group discovery did not list is looked up again at most this often. */
const discoveryMissRefreshMs = 10_000;

export type ConfigObject = KubeObject & Record<string, unknown>;

export class AddonConfigReader {
  private readonly kc: KubeConfig;
  private readonly deploymentConfigs: Informer<KubeObject>;
  private versions: { byGroup: Map<string, string>; at: number } | undefined;

  constructor(kc: KubeConfig, deploymentConfigs: Informer<KubeObject>) {
    this.kc = kc;
    this.deploymentConfigs = deploymentConfigs;
  }

  /** The config object, or undefined when it (or its kind) does not exist. */
  async read(ref: ConfigRef): Promise<ConfigObject | undefined> {
    if (
      ref.group === addOnDeploymentConfigResource.group &&
      ref.resource === addOnDeploymentConfigResource.plural
    ) {
      return this.deploymentConfigs.getByName(ref.name, ref.namespace) as ConfigObject | undefined;
    }
    const version = ref.group === '' ? 'v1' : await this.preferredVersion(ref.group);
    if (!version) return undefined;
    const client = new ResourceClient<ConfigObject>(this.kc, {
      group: ref.group,
      version,
      plural: ref.resource,
      kind: '',
      namespaced: !!ref.namespace,
    });
    return client.get(ref.name, ref.namespace);
  }

  private async preferredVersion(group: string): Promise<string | undefined> {
    const now = Date.now();
    const age = this.versions ? now - this.versions.at : Number.POSITIVE_INFINITY;
    const miss = !this.versions?.byGroup.has(group);
    if (age > discoveryMaxAgeMs || (miss && age > discoveryMissRefreshMs)) {
      const list = await this.kc.makeApiClient(ApisApi).getAPIVersions();
      const byGroup = new Map<string, string>();
      for (const g of list.groups ?? []) {
        const v = g.preferredVersion?.version ?? g.versions?.[0]?.version;
        if (v) byGroup.set(g.name, v);
      }
      this.versions = { byGroup, at: now };
    }
    return this.versions?.byGroup.get(group);
  }
}
