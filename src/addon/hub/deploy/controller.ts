// The deploy controller of one addon (OCM addon-framework's agentdeploy + healthcheck + OCM's
// addon-progressing, for the default install mode): for every ManagedClusterAddOn named after the
// addon in a cluster namespace whose ManagedCluster exists, render the agent (AgentAddon.manifests
// with the resolved configs), apply the AddOnDeploymentConfig, and keep ManifestWorks
// `addon-<addon>-deploy-<i>` equal to it; then report ManifestApplied, Progressing (with
// configReferences[].lastAppliedConfig), Available for the hub-probed modes, status.namespace,
// healthCheck.mode, addOnMeta and supportedConfigs. The finalizer
// addon.open-cluster-management.io/work-cleanup holds a deleted ManagedClusterAddOn until its works
// are gone (the work agent removed what they applied) while its cluster is available; a cluster
// being deleted loses them too.
// Touches only works labelled with this addon's name, and only its own parts of the addon's status
// (read → change → update with resourceVersion, retried on conflict).
//
// Hub identity needs: see addonDeployHubRules (deploy-rbac.ts).
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  addonDeployWorkPrefix,
  addonNameLabel,
  addonWorkCleanupFinalizer,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../../api/addon.ts';
import {
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../../api/cluster.ts';
import { type ManifestWork, manifestWorkResource } from '../../../api/work.ts';
import { errorMessage } from '../../../errors.ts';
import {
  type ConditionUpdate,
  type Controller,
  findCondition,
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeObject,
  objectKey,
  type ReconcileResult,
  ResourceClient,
  runController,
  splitKey,
} from '../../../kube/index.ts';
import { type Logger, logger } from '../../../log.ts';
import type { AddonRenderContext, AgentAddon } from '../../sdk/types.ts';
import {
  AddonConditionType,
  HostingClusterValidityReason,
  hostingClusterNameAnnotation,
  ManifestAppliedReason,
} from '../addon-conditions.ts';
import { applyDeploymentConfig, clusterRegistriesOf } from '../config/deployment-config.ts';
import { ConfigObjects } from '../config/references-source.ts';
import {
  configRefsOf,
  configSpecHashAnnotationValue,
  deploymentConfigOf,
  installNamespaceOf,
  resolveConfigs,
  variablesOf,
} from './configs.ts';
import { type AddonStatusChange, updateAddonStatus } from './status.ts';
import { desiredDeployWorks, placeInNamespace, updatedWork, workIsCurrent } from './work.ts';
import { availableCondition, manifestAppliedCondition, probeManifestConfigs } from './work-health.ts';

export interface AddonDeployControllerOptions {
  hubKubeConfig: KubeConfig;
  addon: AgentAddon;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /** concurrent reconciles of different clusters (default 2) */
  workers?: number;
  /** manifests per work before the next work starts (default OCM's 500 KiB of JSON) */
  maxWorkBytes?: number;
  /** a failed render is retried after this long (default 30 s) */
  renderRetryMs?: number;
  /** an addon's manifests() that has not returned after this long fails the render (default 60 s) */
  renderTimeoutMs?: number;
  log?: Logger;
}

export interface AddonDeployController {
  /** true once the caches synced and the controller reconciles */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** Start the deploy controller of `opts.addon` (this replica leads, or runs alone). */
export function startAddonDeployController(opts: AddonDeployControllerOptions): AddonDeployController {
  const addon = opts.addon;
  const name = addon.name;
  const log = opts.log ?? logger('addon-deploy', { addon: name });
  const kc = opts.hubKubeConfig;
  const mcaClient = new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnResource);
  const workClient = new ResourceClient<ManifestWork>(kc, manifestWorkResource);
  const informer = <T extends KubeObject>(
    client: ResourceClient<T>,
    informerName: string,
    selectors: { fieldSelector?: string; labelSelector?: string } = {},
  ) =>
    new Informer<T>(client, {
      resyncPeriodMs: opts.resyncPeriodMs,
      log: log.child({ informer: informerName }),
      ...selectors,
    });
  const byName = { fieldSelector: `metadata.name=${name}` };
  const mcas = informer(mcaClient, 'managedclusteraddons', byName);
  const works = informer(workClient, 'manifestworks', { labelSelector: `${addonNameLabel}=${name}` });
  const clusters = informer(
    new ResourceClient<ManagedCluster>(kc, managedClusterResource),
    'managedclusters',
  );
  const cmas = informer(
    new ResourceClient<ClusterManagementAddOn>(kc, clusterManagementAddOnResource),
    'cma',
    byName,
  );
  const adcs = informer(
    new ResourceClient<AddOnDeploymentConfig>(kc, addOnDeploymentConfigResource),
    'addondeploymentconfigs',
  );
  const configObjects = new ConfigObjects({ kubeconfig: kc, deploymentConfigs: adcs, log });
  const prefix = addonDeployWorkPrefix(name);
  const isDeployWork = (w: ManifestWork) => (w.metadata.name ?? '').startsWith(prefix);

  const addonsUsingConfig = (obj: KubeObject) =>
    mcas
      .list()
      .filter((mca) =>
        configRefsOf(mca, cmas.getByName(name)).some(
          (r) => r.name === obj.metadata?.name && (r.namespace ?? '') === (obj.metadata?.namespace ?? ''),
        ),
      )
      .map(objectKey);

  const controller: Controller = runController({
    name: `addon-deploy-${name}`,
    informers: [mcas, works, clusters, cmas, adcs] as Informer<KubeObject>[],
    keyFunc: (obj, from) => {
      if (from === (mcas as Informer<KubeObject>)) return objectKey(obj);
      if (from === (works as Informer<KubeObject>)) return `${obj.metadata?.namespace}/${name}`;
      if (from === (clusters as Informer<KubeObject>)) return `${obj.metadata?.name}/${name}`;
      if (from === (cmas as Informer<KubeObject>)) return mcas.list().map(objectKey);
      return addonsUsingConfig(obj);
    },
    workers: opts.workers ?? 2,
    log,
    reconcile: (key) => reconcile(key),
  });

  async function reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name: mcaName } = splitKey(key);
    if (mcaName !== name) return undefined;
    const mca = mcas.getByName(name, namespace);
    if (!mca) return undefined;
    const cluster = clusters.getByName(namespace);
    const clusterGone = !cluster || !!cluster.metadata.deletionTimestamp;
    if (mca.metadata.deletionTimestamp || clusterGone) {
      // An agent that cannot be reached would hold the addon forever: wait for it only while its
      // cluster is available.
      const agentReachable =
        !clusterGone &&
        findCondition(cluster?.status?.conditions, ManagedClusterCondition.Available)?.status === 'True';
      await cleanUp(mca, agentReachable);
      return undefined;
    }
    const finalizers = mca.metadata.finalizers ?? [];
    if (!finalizers.includes(addonWorkCleanupFinalizer)) {
      // The update brings the addon back through the informer with the finalizer, before any work.
      await patchAddon(mca, { metadata: { finalizers: [...finalizers, addonWorkCleanupFinalizer] } });
      return undefined;
    }
    return deploy(mca, cluster);
  }

  async function deploy(
    mca: ManagedClusterAddOn,
    cluster: ManagedCluster,
  ): Promise<ReconcileResult | undefined> {
    const cma = cmas.getByName(name);
    const configs = await resolveConfigs(configRefsOf(mca, cma), (ref) => configObjects.read(ref));
    const deploymentConfig = deploymentConfigOf(configs);
    const installNamespace = installNamespaceOf(mca, deploymentConfig);
    const health = addon.healthFor?.(cluster) ?? addon.health;
    const common: AddonStatusChange = { addon, cma, installNamespace, ...(health ? { health } : {}) };
    const hostingCluster = mca.metadata.annotations?.[hostingClusterNameAnnotation];
    if (hostingCluster !== undefined) return refuseHosted(mca, common, hostingCluster);
    common.hostingClusterValidity = 'none';
    let objects: KubernetesObject[];
    try {
      const ctx: AddonRenderContext = {
        cluster,
        addon: mca,
        installNamespace,
        ...(deploymentConfig ? { deploymentConfig } : {}),
        variables: variablesOf(deploymentConfig),
        configs,
      };
      const rendered = await withTimeout(
        Promise.resolve(addon.manifests(ctx)),
        opts.renderTimeoutMs ?? 60_000,
        'manifests() did not return',
      );
      if (!Array.isArray(rendered)) throw new Error('manifests() did not return an array of objects');
      objects = placeInNamespace(
        applyDeploymentConfig(rendered, {
          addonName: name,
          installNamespace,
          ...(deploymentConfig ? { config: deploymentConfig } : {}),
          clusterRegistries: clusterRegistriesOf(cluster.metadata.annotations),
        }),
        installNamespace,
      );
    } catch (err) {
      // Bad input fails this addon's status on this cluster, nothing else; the works stay as they are.
      log.warn(
        { cluster: mca.metadata.namespace, err: errorMessage(err) },
        'addon manifests could not be rendered',
      );
      await writeStatus(mca, {
        ...common,
        manifestApplied: workApplyFailed(`failed to get manifest from agent interface: ${errorMessage(err)}`),
      });
      return { requeueAfterMs: opts.renderRetryMs ?? 30_000 };
    }

    const wants = desiredDeployWorks({
      addonName: name,
      mca,
      manifests: objects,
      manifestConfigs: probeManifestConfigs(health, objects),
      configSpecHash: configSpecHashAnnotationValue(mca),
      ...(opts.maxWorkBytes ? { maxWorkBytes: opts.maxWorkBytes } : {}),
    });
    const clusterNs = mca.metadata.namespace ?? '';
    try {
      for (const want of wants) await applyWork(want);
      const wanted = new Set(wants.map((w) => w.metadata.name));
      for (const w of works.list()) {
        if (w.metadata.namespace !== clusterNs || !isDeployWork(w) || wanted.has(w.metadata.name)) continue;
        await workClient.delete(w.metadata.name ?? '', clusterNs, { ignoreNotFound: true });
      }
    } catch (err) {
      if (isConflict(err)) throw err; // a newer work is on its way: retry soon
      await writeStatus(mca, {
        ...common,
        manifestApplied: workApplyFailed(`failed to apply manifestWork: ${errorMessage(err)}`),
      });
      throw err;
    }

    const current = wants
      .map((w) => works.getByName(w.metadata.name ?? '', clusterNs))
      .filter((w): w is ManifestWork => w !== undefined);
    // Until the cache has every work we wrote, the status waits for their events.
    const complete = current.length === wants.length;
    const clusterUnknown =
      findCondition(cluster.status?.conditions, ManagedClusterCondition.Available)?.status === 'Unknown';
    await writeStatus(mca, {
      ...common,
      ...(complete ? { manifestApplied: manifestAppliedCondition(current) } : {}),
      ...(complete && !clusterUnknown
        ? { available: availableCondition(name, health, current, objects) }
        : {}),
      works: complete ? current : undefined,
    });
    return undefined;
  }

  /**
   * Hosted mode asked for (OCM's hosting-cluster-name annotation) of an add-on that has no hosted
   * deployment: its deploy works go (an agent left on the managed cluster would not be what was
   * asked for) and the status says why, until the annotation is removed.
   */
  async function refuseHosted(
    mca: ManagedClusterAddOn,
    common: AddonStatusChange,
    hostingCluster: string,
  ): Promise<undefined> {
    const clusterNs = mca.metadata.namespace ?? '';
    for (const w of works.list()) {
      if (w.metadata.namespace !== clusterNs || !isDeployWork(w)) continue;
      await workClient.delete(w.metadata.name ?? '', clusterNs, { ignoreNotFound: true });
    }
    const message = `add-on ${name} cannot run in hosted mode (asked for by annotation ${hostingClusterNameAnnotation}=${hostingCluster.slice(0, 253)}): nothing is deployed; remove the annotation to deploy it on the managed cluster`;
    await writeStatus(mca, {
      ...common,
      hostingClusterValidity: {
        type: AddonConditionType.HostingClusterValidity,
        status: 'False',
        reason: HostingClusterValidityReason.HostedModeUnsupported,
        message,
      },
      manifestApplied: workApplyFailed(message),
    });
    return undefined;
  }

  async function applyWork(want: ManifestWork): Promise<void> {
    const ns = want.metadata.namespace ?? '';
    let existing = works.getByName(want.metadata.name ?? '', ns);
    if (!existing) {
      try {
        await workClient.create(want);
        return;
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      existing = await workClient.get(want.metadata.name ?? '', ns);
      if (!existing) throw new Error(`ManifestWork ${ns}/${want.metadata.name} vanished; retrying`);
    }
    if (workIsCurrent(existing, want)) return;
    await workClient.replace(updatedWork(existing, want));
  }

  function workApplyFailed(message: string): ConditionUpdate {
    return {
      type: AddonConditionType.ManifestApplied,
      status: 'False',
      reason: ManifestAppliedReason.WorkApplyFailed,
      message,
    };
  }

  async function writeStatus(mca: ManagedClusterAddOn, change: AddonStatusChange): Promise<void> {
    await updateAddonStatus(mcaClient, mca, change);
  }

  /** Merge-patch the addon (conditional on its resourceVersion); a conflict means a newer version comes. */
  async function patchAddon(mca: ManagedClusterAddOn, patch: Record<string, unknown>): Promise<void> {
    const body = {
      ...patch,
      metadata: { ...(patch['metadata'] as object), resourceVersion: mca.metadata.resourceVersion },
    };
    try {
      await mcaClient.patchMerge(mca.metadata.name ?? '', body, mca.metadata.namespace);
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return;
      throw err;
    }
  }

  /**
   * Delete the addon's works; a deleted addon keeps its finalizer until they are gone while the
   * work agent can remove what they applied (its cluster is there and available), so the addon's
   * hub credential outlives its agent's cleanup.
   */
  async function cleanUp(mca: ManagedClusterAddOn, waitForAgent: boolean): Promise<void> {
    const ns = mca.metadata.namespace ?? '';
    // From the apiserver, not the cache: a work created just before the delete must not be missed.
    const { items } = await workClient.list({ namespace: ns, labelSelector: `${addonNameLabel}=${name}` });
    const ours = items.filter(isDeployWork);
    for (const w of ours) {
      if (w.metadata.deletionTimestamp) continue;
      await workClient.delete(w.metadata.name ?? '', ns, { ignoreNotFound: true });
    }
    if (!mca.metadata.deletionTimestamp) return;
    if (ours.length > 0 && waitForAgent) return; // the works' deletion brings the addon back here
    const finalizers = mca.metadata.finalizers ?? [];
    if (!finalizers.includes(addonWorkCleanupFinalizer)) return;
    await patchAddon(mca, {
      metadata: { finalizers: finalizers.filter((f) => f !== addonWorkCleanupFinalizer) },
    });
    log.info({ cluster: ns, works: ours.length }, 'addon removed from the cluster');
  }

  return {
    ready: controller.ready,
    stop: () => controller.stop(),
  };
}

/** `promise`, or a rejection after `ms` (the timer never keeps the process alive). */
async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
