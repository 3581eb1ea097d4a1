// Where the config manager reads the objects add-ons reference, to hash them, and how it learns
// that one changed. AddOnDeploymentConfigs come from the controller's own informer; every other
// kind a ClusterManagementAddOn lists in supportedConfigs gets an informer of its own the first
// time a pass meets it (found through discovery at its group's preferred version; a kind nobody
// serves is looked up again after discoveryMaxAgeMs), so an edit re-queues the add-ons that
// support the kind, as OCM's dynamic config informers do. Until such an informer has synced the
// object is read directly. Reads only; stop() ends the informers it started.
import { ApisApi, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { type AddOnDeploymentConfig, addOnDeploymentConfigResource } from '../../api/addon.ts';
import {
  Informer,
  isNotFound,
  type KubeObject,
  ResourceClient,
  type ResourceDescriptor,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import {
  type ConfigSelection,
  configSpecHash,
  type GroupResource,
  groupResourceKey,
  type ResolvedSelection,
} from './config-references.ts';

/** How long the knowledge that nobody serves a kind is trusted. */
const discoveryMaxAgeMs = 5 * 60_000;
/** At most this many config kinds besides AddOnDeploymentConfig get an informer (a peer writes supportedConfigs). */
const maxWatchedKinds = 32;

export const addOnDeploymentConfigKind = {
  group: addOnDeploymentConfigResource.group,
  resource: addOnDeploymentConfigResource.plural,
} as const;

const isDeploymentConfigKind = (gr: GroupResource) =>
  gr.group === addOnDeploymentConfigKind.group && gr.resource === addOnDeploymentConfigKind.resource;

export interface ConfigObjectsOptions {
  kubeconfig: KubeConfig;
  /** the controller's informer of AddOnDeploymentConfigs */
  deploymentConfigs: Informer<AddOnDeploymentConfig>;
  /** called when an object of a watched kind (not AddOnDeploymentConfig) is added, changed or deleted */
  onChange(kind: GroupResource): void;
  resyncPeriodMs?: number;
  log: Logger;
}

/** Reads config objects and hashes them; one instance per controller. */
export class ConfigObjects {
  private readonly opts: ConfigObjectsOptions;
  private readonly watched = new Map<string, Informer<KubeObject>>();
  private readonly unserved = new Map<string, number>();
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
      const changed = () => this.opts.onChange(kind);
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
    if (isDeploymentConfigKind(s)) return this.opts.deploymentConfigs.getByName(name, namespace);
    const informer = this.watched.get(groupResourceKey(s));
    if (informer?.hasSynced()) {
      return informer.getByName(name, namespace) ?? informer.getByName(name);
    }
    const descriptor = await this.discover(s);
    if (!descriptor || (descriptor.namespaced && !namespace)) return undefined;
    return new ResourceClient(this.opts.kubeconfig, descriptor).get(
      name,
      descriptor.namespaced ? namespace : undefined,
    );
  }

  /** Where a kind is served (preferred version of its group), undefined when nobody serves it. */
  private async discover(gr: GroupResource): Promise<ResourceDescriptor | undefined> {
    const kc = this.opts.kubeconfig;
    try {
      const version = gr.group
        ? (await kc.makeApiClient(ApisApi).getAPIVersions()).groups.find((g) => g.name === gr.group)
            ?.preferredVersion?.version
        : 'v1';
      if (!version) return undefined;
      const list = gr.group
        ? await kc.makeApiClient(CustomObjectsApi).getAPIResources({ group: gr.group, version })
        : await kc.makeApiClient(CoreV1Api).getAPIResources();
      const r = list.resources?.find((x) => x.name === gr.resource);
      return r
        ? { group: gr.group, version, plural: r.name, kind: r.kind, namespaced: r.namespaced }
        : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
