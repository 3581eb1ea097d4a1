// Where the add-on controllers read the config objects add-ons reference. The config manager
// (install-strategy/controller.ts) hashes them and learns that one changed; the deploy controller
// reads them to render. AddOnDeploymentConfigs come from the controller's own informer; every
// other kind a ClusterManagementAddOn lists in supportedConfigs gets an informer of its own the
// first time a config-manager pass meets it (watch()), so an edit re-queues the add-ons that support
// the kind, as OCM's dynamic config informers do. Where no informer has synced, the object is read
// directly at its group's preferred version that serves it, found through discovery (remembered for
// discoveryMaxAgeMs, a kind nobody serves for discoveryMissMaxAgeMs). Reads only; stop() ends the
// informers it started.
import { ApisApi, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { AddOnDeploymentConfig } from '../../../api/addon.ts';
import {
  Informer,
  isNotFound,
  type KubeObject,
  ResourceClient,
  type ResourceDescriptor,
} from '../../../kube/index.ts';
import type { Logger } from '../../../log.ts';
import {
  addOnDeploymentConfigKind,
  type ConfigSelection,
  configSpecHash,
  type GroupResource,
  groupResourceKey,
  type ResolvedSelection,
} from './references.ts';

/** How long what discovery said about a kind is trusted (also: how long an unserved kind is not watched). */
const discoveryMaxAgeMs = 5 * 60_000;
/** A kind discovery did not find is looked up again at most this often when read. */
const discoveryMissMaxAgeMs = 10_000;
/** At most this many config kinds besides AddOnDeploymentConfig get an informer (a peer writes supportedConfigs). */
const maxWatchedKinds = 32;

const isDeploymentConfigKind = (gr: GroupResource) =>
  gr.group === addOnDeploymentConfigKind.group && gr.resource === addOnDeploymentConfigKind.resource;

export interface ConfigObjectsOptions {
  kubeconfig: KubeConfig;
  /** the controller's informer of AddOnDeploymentConfigs */
  deploymentConfigs: Informer<AddOnDeploymentConfig>;
  /** called when an object of a watched kind (not AddOnDeploymentConfig) is added, changed or deleted */
  onChange?(kind: GroupResource): void;
  resyncPeriodMs?: number;
  log: Logger;
}

/** A config object as read: any kind, so its fields are not known. */
export type ConfigObject = KubeObject & Record<string, unknown>;

/** One config object: its kind, name and namespace ('' or absent: cluster-scoped). */
export interface ConfigObjectRef extends GroupResource {
  name: string;
  namespace?: string;
}

/** Reads config objects and hashes them; one instance per controller. */
export class ConfigObjects {
  private readonly opts: ConfigObjectsOptions;
  private readonly watched = new Map<string, Informer<KubeObject>>();
  private readonly unserved = new Map<string, number>();
  private readonly discovered = new Map<string, { descriptor: ResourceDescriptor | undefined; at: number }>();
  private stopped = false;

  constructor(opts: ConfigObjectsOptions) {
    this.opts = opts;
  }

  /** Keep an informer on each of `kinds` (AddOnDeploymentConfig has one already). */
  async watch(kinds: readonly GroupResource[]): Promise<void> {
    for (const kind of kinds) {
      const key = groupResourceKey(kind);
      if (isDeploymentConfigKind(kind) || this.watched.has(key) || this.stopped) continue;
      if (Date.now() - (this.unserved.get(key) ?? 0) < discoveryMaxAgeMs) continue;
      if (this.watched.size >= maxWatchedKinds) {
        this.opts.log.warn(
          { kind: key, max: maxWatchedKinds },
          'too many config kinds: this one is read, not watched',
        );
        continue;
      }
      const descriptor = await this.discover(kind);
      if (!descriptor) {
        this.unserved.set(key, Date.now());
        continue;
      }
      if (this.watched.has(key) || this.stopped) continue;
      const informer = new Informer<KubeObject>(new ResourceClient(this.opts.kubeconfig, descriptor), {
        resyncPeriodMs: this.opts.resyncPeriodMs,
        log: this.opts.log.child({ informer: key }),
      });
      const changed = () => this.opts.onChange?.(kind);
      informer.addHandlers({ add: changed, update: changed, delete: changed });
      informer.start();
      this.watched.set(key, informer);
    }
  }

  /** Stop the informers `watch` started. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.watched.values()].map((i) => i.stop()));
    this.watched.clear();
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
    const obj = await this.read({ group: s.group, resource: s.resource, ...s.referent });
    if (!obj) return { ...s, specHash: '' };
    const generation = obj.metadata?.generation;
    return {
      ...s,
      specHash: configSpecHash(obj),
      ...(generation !== undefined ? { generation } : {}),
    };
  }

  /** The config object, or undefined when it (or its kind) does not exist. */
  async read(ref: ConfigObjectRef): Promise<ConfigObject | undefined> {
    const { name, namespace } = ref;
    if (isDeploymentConfigKind(ref)) {
      return this.opts.deploymentConfigs.getByName(name, namespace) as ConfigObject | undefined;
    }
    const informer = this.watched.get(groupResourceKey(ref));
    if (informer?.hasSynced()) {
      return (informer.getByName(name, namespace) ?? informer.getByName(name)) as ConfigObject | undefined;
    }
    const descriptor = await this.discoverCached(ref);
    if (!descriptor || (descriptor.namespaced && !namespace)) return undefined;
    return new ResourceClient<ConfigObject>(this.opts.kubeconfig, descriptor).get(
      name,
      descriptor.namespaced ? namespace : undefined,
    );
  }

  private async discoverCached(gr: GroupResource): Promise<ResourceDescriptor | undefined> {
    const key = groupResourceKey(gr);
    const known = this.discovered.get(key);
    const maxAge = known?.descriptor ? discoveryMaxAgeMs : discoveryMissMaxAgeMs;
    if (known && Date.now() - known.at < maxAge) return known.descriptor;
    const descriptor = await this.discover(gr);
    this.discovered.set(key, { descriptor, at: Date.now() });
    return descriptor;
  }

  /**
   * Where a kind is served: the preferred version of its group if it serves the kind, else the first
   * other version that does (addontemplates exist only at v1alpha1 while the group prefers v1beta1);
   * undefined when nobody serves it.
   */
  private async discover(gr: GroupResource): Promise<ResourceDescriptor | undefined> {
    const kc = this.opts.kubeconfig;
    try {
      if (!gr.group) {
        const r = (await kc.makeApiClient(CoreV1Api).getAPIResources()).resources?.find(
          (x) => x.name === gr.resource,
        );
        return r
          ? { group: '', version: 'v1', plural: r.name, kind: r.kind, namespaced: r.namespaced }
          : undefined;
      }
      const group = (await kc.makeApiClient(ApisApi).getAPIVersions()).groups.find(
        (g) => g.name === gr.group,
      );
      const preferred = group?.preferredVersion?.version;
      const versions = [
        ...(preferred ? [preferred] : []),
        ...(group?.versions ?? []).map((v) => v.version).filter((v) => v !== preferred),
      ];
      for (const version of versions) {
        const list = await kc.makeApiClient(CustomObjectsApi).getAPIResources({ group: gr.group, version });
        const r = list.resources?.find((x) => x.name === gr.resource);
        if (r) return { group: gr.group, version, plural: r.name, kind: r.kind, namespaced: r.namespaced };
      }
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
