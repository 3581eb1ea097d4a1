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
// Hosted mode (OCM's): an addon that supports it (AgentAddon.hostedMode) and whose
// ManagedClusterAddOn names a hosting cluster gets HostingClusterValidity, its `hosting` manifests
// in works `addon-<addon>-deploy-hosting-<cluster>-<i>` in the hosting cluster's namespace (finalizer
// addon.open-cluster-management.io/hosting-manifests-cleanup removes them), HostingManifestApplied,
// and Available from both sets of works (hosted.ts); any other addon asked to be hosted gets
// HostingClusterValidity False (HostedModeUnsupported) and nothing deployed.
// Touches only works labelled with this addon's name, and only its own parts of the addon's status
// (read → change → update with resourceVersion, retried on conflict).
//
// Hub identity needs: see addonDeployHubRules (deploy-rbac.ts).
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  addonHostingManifestFinalizer,
  addonNameLabel,
  addonWorkCleanupFinalizer,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  hostedClusterOfWork,
  isAddonDeployWorkName,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../../api/addon.ts';
import {
  hostedAgentNamespace,
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
import { hostedInstallNamespace, hostingValidityCondition, splitByLocation } from './hosted.ts';
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
  const isDeployWork = (w: ManifestWork) => isAddonDeployWorkName(name, w.metadata.name ?? '');

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
      if (from === (works as Informer<KubeObject>)) {
        // A hosting work belongs to the addon of the cluster it hosts, not of the namespace it is in.
        const hosted = hostedClusterOfWork(name, obj.metadata?.name ?? '');
        return `${hosted ?? obj.metadata?.namespace}/${name}`;
      }
      if (from === (clusters as Informer<KubeObject>)) {
        // A cluster's own addon, and the addons it hosts (their hosting works follow it).
        const hostedHere = mcas
          .list()
          .filter((mca) => mca.metadata.annotations?.[hostingClusterNameAnnotation] === obj.metadata?.name)
          .map(objectKey);
        return [`${obj.metadata?.name}/${name}`, ...hostedHere];
      }
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
    const hostingName = mca.metadata.annotations?.[hostingClusterNameAnnotation];
    const clusterNs = mca.metadata.namespace ?? '';
    if (hostingName !== undefined && !addon.hostedMode) {
      const health = addon.healthFor?.(cluster) ?? addon.health;
      const installNamespace = installNamespaceOf(mca, deploymentConfig);
      return refuseHosted(mca, { addon, cma, installNamespace, ...(health ? { health } : {}) }, hostingName);
    }
    const hosted = hostingName !== undefined;
    const installNamespace = hosted
      ? hostedAgentNamespace(clusterNs)
      : installNamespaceOf(mca, deploymentConfig);
    // A hosted agent is a Deployment the hub probes through its works, never the in-process Lease.
    const health = hosted ? addon.health : (addon.healthFor?.(cluster) ?? addon.health);
    const common: AddonStatusChange = { addon, cma, installNamespace, ...(health ? { health } : {}) };
    const hostingCluster = hosted ? clusters.getByName(hostingName) : undefined;
    if (!hosted) {
      await dropHosting(mca, new Set(), true);
      common.hostingClusterValidity = 'none';
      common.hostingManifestApplied = 'none';
    } else if (!hostingCluster) {
      common.hostingClusterValidity = hostingValidityCondition(false, hostingName);
    } else {
      common.hostingClusterValidity = hostingValidityCondition(true, hostingName);
      const finalizers = mca.metadata.finalizers ?? [];
      if (!finalizers.includes(addonHostingManifestFinalizer)) {
        // Before any hosting work exists: the finalizer is what removes them when the addon goes.
        await patchAddon(mca, { metadata: { finalizers: [...finalizers, addonHostingManifestFinalizer] } });
        return undefined;
      }
    }
    let objects: KubernetesObject[];
    let parts: { managed: KubernetesObject[]; hosting: KubernetesObject[] };
    try {
      if (hosted) hostedInstallNamespace(mca, deploymentConfig); // throws on one it cannot honour
      const ctx: AddonRenderContext = {
        cluster,
        addon: mca,
        installNamespace,
        installMode: hosted ? 'Hosted' : 'Default',
        ...(hosted ? { hostingClusterName: hostingName } : {}),
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
      const configured = applyDeploymentConfig(rendered, {
        addonName: name,
        installNamespace,
        ...(deploymentConfig ? { config: deploymentConfig } : {}),
        clusterRegistries: clusterRegistriesOf(cluster.metadata.annotations),
      });
      // In hosted mode the install namespace is the hosted klusterlet's on the hosting cluster: it is
      // there already and is not the add-on's to create or share.
      objects = hosted
        ? placeInNamespace(configured, installNamespace, { addNamespace: false })
        : placeInNamespace(configured, installNamespace);
      parts = hosted ? splitByLocation(objects) : { managed: objects, hosting: [] };
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

    const workInput = (manifests: KubernetesObject[]) => ({
      addonName: name,
      mca,
      manifests,
      manifestConfigs: probeManifestConfigs(health, manifests),
      configSpecHash: configSpecHashAnnotationValue(mca),
      ...(opts.maxWorkBytes ? { maxWorkBytes: opts.maxWorkBytes } : {}),
    });
    // hosted: an add-on wholly on the hosting cluster has no deploy work on the managed one
    const wants = desiredDeployWorks({ ...workInput(parts.managed), skipEmpty: hosted });
    const hostingWants =
      hostingCluster && !hostingCluster.metadata.deletionTimestamp
        ? desiredDeployWorks({ ...workInput(parts.hosting), hostingCluster: hostingName })
        : [];
    try {
      for (const want of wants) await applyWork(want);
      const wanted = new Set(wants.map((w) => w.metadata.name));
      for (const w of works.list()) {
        if (w.metadata.namespace !== clusterNs || !isDeployWork(w) || wanted.has(w.metadata.name)) continue;
        await workClient.delete(w.metadata.name ?? '', clusterNs, { ignoreNotFound: true });
      }
      if (hosted) {
        for (const want of hostingWants) await applyWork(want);
        const keep = new Set(hostingWants.map((w) => `${w.metadata.namespace}/${w.metadata.name}`));
        await dropHosting(mca, keep, !hostingCluster || !!hostingCluster.metadata.deletionTimestamp);
      }
    } catch (err) {
      if (isConflict(err)) throw err; // a newer work is on its way: retry soon
      await writeStatus(mca, {
        ...common,
        manifestApplied: workApplyFailed(`failed to apply manifestWork: ${errorMessage(err)}`),
      });
      throw err;
    }

    const cached = (want: ManifestWork) =>
      works.getByName(want.metadata.name ?? '', want.metadata.namespace ?? '');
    const current = wants.map(cached).filter((w): w is ManifestWork => w !== undefined);
    const hostingCurrent = hostingWants.map(cached).filter((w): w is ManifestWork => w !== undefined);
    // Until the cache has every work we wrote, the status waits for their events.
    const complete = current.length === wants.length && hostingCurrent.length === hostingWants.length;
    const clusterUnknown =
      findCondition(cluster.status?.conditions, ManagedClusterCondition.Available)?.status === 'Unknown';
    const hostingApplied =
      hosted && complete && hostingCluster ? manifestAppliedCondition(hostingCurrent) : undefined;
    await writeStatus(mca, {
      ...common,
      ...(complete ? { manifestApplied: manifestAppliedCondition(current) } : {}),
      ...(hostingApplied
        ? { hostingManifestApplied: { ...hostingApplied, type: AddonConditionType.HostingManifestApplied } }
        : {}),
      ...(complete && !clusterUnknown
        ? { available: availableCondition(name, health, [...current, ...hostingCurrent], objects) }
        : {}),
      works: complete ? [...current, ...hostingCurrent] : undefined,
    });
    return undefined;
  }

  /**
   * Deletes this addon's hosting works for the MCA's cluster other than `keep` ("ns/name"), as the
   * cache has them (their deletion brings the addon back here). With `release`, the hosting
   * finalizer goes once none is left.
   */
  async function dropHosting(
    mca: ManagedClusterAddOn,
    keep: ReadonlySet<string>,
    release: boolean,
  ): Promise<void> {
    const cluster = mca.metadata.namespace ?? '';
    const stale = works
      .list()
      .filter((w) => hostedClusterOfWork(name, w.metadata.name ?? '') === cluster)
      .filter((w) => !keep.has(`${w.metadata.namespace}/${w.metadata.name}`));
    for (const w of stale) {
      if (w.metadata.deletionTimestamp) continue;
      await workClient.delete(w.metadata.name ?? '', w.metadata.namespace, { ignoreNotFound: true });
    }
    if (release && stale.length === 0) await dropFinalizer(mca, addonHostingManifestFinalizer);
  }

  /** Removes `finalizer` from the addon when it has it. */
  async function dropFinalizer(mca: ManagedClusterAddOn, finalizer: string): Promise<void> {
    const finalizers = mca.metadata.finalizers ?? [];
    if (!finalizers.includes(finalizer)) return;
    await patchAddon(mca, { metadata: { finalizers: finalizers.filter((f) => f !== finalizer) } });
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
    // Every namespace: a hosted addon's hosting works are in its hosting cluster's.
    const { items } = await workClient.list({ labelSelector: `${addonNameLabel}=${name}` });
    const ours = items.filter((w) => w.metadata.namespace === ns && isDeployWork(w));
    const hosting = items.filter((w) => hostedClusterOfWork(name, w.metadata.name ?? '') === ns);
    for (const w of [...ours, ...hosting]) {
      if (w.metadata.deletionTimestamp) continue;
      await workClient.delete(w.metadata.name ?? '', w.metadata.namespace, { ignoreNotFound: true });
    }
    if (!mca.metadata.deletionTimestamp) return;
    // The hosting cluster's agent removes what the hosting works applied while it is available.
    const hostingName = mca.metadata.annotations?.[hostingClusterNameAnnotation];
    const hostingCluster = hostingName === undefined ? undefined : clusters.getByName(hostingName);
    const hostingReachable =
      !!hostingCluster &&
      !hostingCluster.metadata.deletionTimestamp &&
      findCondition(hostingCluster.status?.conditions, ManagedClusterCondition.Available)?.status === 'True';
    const release = new Set<string>();
    if (ours.length === 0 || !waitForAgent) release.add(addonWorkCleanupFinalizer);
    if (hosting.length === 0 || !hostingReachable) release.add(addonHostingManifestFinalizer);
    const finalizers = mca.metadata.finalizers ?? [];
    if (!finalizers.some((f) => release.has(f))) return; // the works' deletion brings the addon back here
    await patchAddon(mca, { metadata: { finalizers: finalizers.filter((f) => !release.has(f)) } });
    log.info(
      { cluster: ns, works: ours.length, hostingWorks: hosting.length },
      'addon removed from the cluster',
    );
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
