// ResourceClients for arbitrary kinds on the managed cluster, one per group/version/resource and
// reused, so applying hundreds of works does not build hundreds of identical API clients.
import type { KubeConfig } from '@kubernetes/client-node';
import { type KubeObject, ResourceClient, type ResourceDescriptor } from '../../kube/index.ts';

export class ManagedClients {
  private readonly kc: KubeConfig;
  private readonly clients = new Map<string, ResourceClient<KubeObject>>();

  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  /** The client for a kind discovery resolved. */
  forDescriptor(d: ResourceDescriptor): ResourceClient<KubeObject> {
    const key = `${d.group}/${d.version}/${d.plural}/${d.namespaced}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new ResourceClient<KubeObject>(this.kc, d);
      this.clients.set(key, client);
    }
    return client;
  }

  /**
   * The client for a resource recorded in an AppliedManifestWork (group, version, plural and
   * whether it had a namespace; the kind is not recorded, so the plural stands in for messages).
   */
  forApplied(r: {
    group?: string;
    version: string;
    resource: string;
    namespace?: string;
  }): ResourceClient<KubeObject> {
    return this.forDescriptor({
      group: r.group ?? '',
      version: r.version,
      plural: r.resource,
      kind: r.resource,
      namespaced: Boolean(r.namespace),
    });
  }
}
