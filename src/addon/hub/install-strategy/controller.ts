// The generic add-on manager of the hub (OCM's addon-manager in the cluster-manager), for every
// ClusterManagementAddOn whoever renders its agent. One pass per ClusterManagementAddOn:
//   1. lifecycle: stamp addon.open-cluster-management.io/lifecycle=addon-manager on one without
//      it (as OCM does, so Go-framework add-ons leave install and rollout to this manager); one
//      marked `self` only gets status.defaultconfigReferences;
//   2. install strategy (install-strategy.ts): Placements → create / delete ManagedClusterAddOns as
//      the decisions say; every ManagedClusterAddOn of the name is owned by the
//      ClusterManagementAddOn (a user's with a plain ownerReference, so deleting the
//      ClusterManagementAddOn removes them all, as in OCM);
//   3. configs (config/references.ts, install-strategy/progression.ts): each ManagedClusterAddOn's desired
//      configs and their spec hashes → status.configReferences + Configured, in the turn its
//      placement's rollout strategy gives it;
//   4. ClusterManagementAddOn status: defaultconfigReferences and installProgressions.
// Re-queued by: the ClusterManagementAddOn, any ManagedClusterAddOn of its name, the Placements
// and PlacementDecisions its strategy names, objects of the config kinds it supports
// (AddOnDeploymentConfigs and any other kind: config/references-source.ts), a rollout's soak time
// or deadline.
// Writes: ManagedClusterAddOns (create, delete, ownerReferences), their status.configReferences
// (keeping lastAppliedConfig) and Configured condition only (read → change → update with
// resourceVersion, re-read and retry on 409), the ClusterManagementAddOn's lifecycle annotation
// and status. Never another part's conditions or fields.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  type ClusterManagementAddOnStatus,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../../api/addon.ts';
import {
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../../api/placement.ts';
import { errorMessage } from '../../../errors.ts';
import { canonicalJson } from '../../../kube/canonical-json.ts';
import {
  type Controller,
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeObject,
  type ReconcileResult,
  ResourceClient,
  runController,
} from '../../../kube/index.ts';
import { type Logger, logger } from '../../../log.ts';
import { writeAddonStatus } from '../../../registration/addon-status-write.ts';
import {
  addOnDeploymentConfigKind,
  type ConfigSelection,
  defaultConfigs,
  type GroupResource,
  groupResourceKey,
  overrideConfigs,
  type ResolvedSelection,
  sortedSelections,
  unsupportedKinds,
  withoutKinds,
} from '../config/references.ts';
import { ConfigObjects } from '../config/references-source.ts';
import {
  adoptionOwnerRef,
  controllerOwnerRef,
  installPlan,
  installStrategyType,
  LifecycleValue,
  lifecycleAnnotation,
  managedByAddonManager,
  nodeOfCluster,
  ownedByCma,
  type PlacementNode,
  placementNodes,
  placementStrategies,
} from './index.ts';
import {
  type AddonInRollout,
  type AddonVerdict,
  addonConfigStatus,
  addonRolloutStatus,
  defaultConfigReferences,
  defaultSelections,
  type InstallProgression,
  installProgressions,
  type PlacementRollout,
  placementSelections,
  rolloutPlacement,
  verdicts,
} from './progression.ts';

export interface AddonInstallControllerOptions {
  kubeconfig: KubeConfig;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /** concurrent passes over different ClusterManagementAddOns (default 2) */
  workers?: number;
  log?: Logger;
}

export interface AddonInstallController {
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** A rollout waiting for a soak time or deadline is looked at again at least this often. */
const maxRequeueMs = 10 * 60_000;

/** Start the controller (this replica leads, or runs alone). */
export function startAddonInstallController(opts: AddonInstallControllerOptions): AddonInstallController {
  const log = opts.log ?? logger('addon-install');
  const kc = opts.kubeconfig;
  const cmaClient = new ResourceClient<ClusterManagementAddOn>(kc, clusterManagementAddOnResource);
  const mcaClient = new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnResource);
  const informer = <T extends KubeObject>(client: ResourceClient<T>, name: string, labelSelector?: string) =>
    new Informer<T>(client, {
      resyncPeriodMs: opts.resyncPeriodMs,
      log: log.child({ informer: name }),
      ...(labelSelector ? { labelSelector } : {}),
    });
  const cmas = informer(cmaClient, 'clustermanagementaddons');
  const mcas = informer(mcaClient, 'managedclusteraddons');
  const placements = informer(new ResourceClient<Placement>(kc, placementResource), 'placements');
  const decisions = informer(
    new ResourceClient<PlacementDecision>(kc, placementDecisionResource),
    'placementdecisions',
    placementLabel,
  );
  const deploymentConfigs = informer(
    new ResourceClient<AddOnDeploymentConfig>(kc, addOnDeploymentConfigResource),
    'addondeploymentconfigs',
  );

  const addonsUsingPlacement = (namespace: string | undefined, name: string | undefined) =>
    name
      ? cmas
          .list()
          .filter((c) => placementStrategies(c).some((p) => p.namespace === namespace && p.name === name))
          .map((c) => c.metadata.name ?? '')
      : [];
  const addonsSupporting = (kind: GroupResource) =>
    cmas
      .list()
      .filter((c) =>
        (c.spec?.supportedConfigs ?? []).some((s) => groupResourceKey(s) === groupResourceKey(kind)),
      )
      .map((c) => c.metadata.name ?? '');
  const configObjects = new ConfigObjects({
    kubeconfig: kc,
    deploymentConfigs,
    onChange: (kind) => {
      for (const name of addonsSupporting(kind)) controller.queue.add(name);
    },
    resyncPeriodMs: opts.resyncPeriodMs,
    log: log.child({ component: 'config-objects' }),
  });

  const controller: Controller = runController({
    name: 'addon-install',
    informers: [cmas, mcas, placements, decisions, deploymentConfigs] as Informer<KubeObject>[],
    keyFunc: (obj, from) => {
      if (from === (cmas as Informer<KubeObject>) || from === (mcas as Informer<KubeObject>))
        return obj.metadata?.name;
      if (from === (placements as Informer<KubeObject>))
        return addonsUsingPlacement(obj.metadata?.namespace, obj.metadata?.name);
      if (from === (decisions as Informer<KubeObject>))
        return addonsUsingPlacement(obj.metadata?.namespace, obj.metadata?.labels?.[placementLabel]);
      return addonsSupporting(addOnDeploymentConfigKind);
    },
    workers: opts.workers ?? 2,
    log: log.child({ controller: 'addon-install' }),
    reconcile: (key) => reconcile(key),
  });

  async function reconcile(name: string): Promise<ReconcileResult | undefined> {
    const cma = cmas.getByName(name);
    if (!cma || cma.metadata.deletionTimestamp) return undefined;
    const lifecycle = cma.metadata.annotations?.[lifecycleAnnotation];
    if (lifecycle !== LifecycleValue.Self && lifecycle !== LifecycleValue.AddonManager) {
      // The update brings the add-on back through the informer.
      await stampLifecycle(cma);
      return undefined;
    }
    await configObjects.watch(
      (cma.spec?.supportedConfigs ?? []).map((c) => ({ group: c.group ?? '', resource: c.resource })),
    );
    const resolve = configObjects.pass();
    const addons = mcas.list().filter((m) => m.metadata.name === name);
    if (!managedByAddonManager(cma)) {
      await writeAddonManagementStatus(cma, await defaultReferences(cma, resolve), undefined);
      return undefined;
    }

    const nodes = placementNodes(cma, (ns, n) => placements.getByName(n, ns), decisions.list());
    const errors: unknown[] = [];
    const plan = installPlan(cma, nodes, addons);
    for (const cluster of plan.create) await createAddon(cma, cluster).catch((err) => errors.push(err));
    for (const m of plan.delete) await deleteAddon(m).catch((err) => errors.push(err));
    const deleted = new Set(plan.delete);
    const live = addons.filter((m) => !m.metadata.deletionTimestamp && !deleted.has(m));
    for (const m of live) {
      if (!ownedByCma(m, cma)) await adopt(cma, m).catch((err) => errors.push(err));
    }

    // Desired configs per add-on, then the rollout of each placement and of the rest.
    const defaults = defaultConfigs(cma);
    const byNode = new Map<PlacementNode | undefined, AddonInRollout[]>();
    const refusedOf = new Map<ManagedClusterAddOn, GroupResource[]>();
    for (const m of live) {
      const node = nodeOfCluster(nodes, m.metadata.namespace ?? '');
      // a kind the add-on does not support is refused wherever it is named: placement or add-on
      const refused = unsupportedKinds(cma, [...(node?.configs ?? []), ...(m.spec?.configs ?? [])]);
      refusedOf.set(m, refused);
      const base = node ? overrideConfigs(defaults, withoutKinds(node.configs, refused)) : defaults;
      const desired = await resolveAll(
        sortedSelections(overrideConfigs(base, withoutKinds(m.spec?.configs, refused))),
        resolve,
      );
      const list = byNode.get(node) ?? [];
      list.push({ mca: m, desired, status: addonRolloutStatus(m, desired) });
      byNode.set(node, list);
    }
    const rollouts: { node: PlacementNode; rollout: PlacementRollout }[] = [];
    const verdictOf = new Map<string, AddonVerdict>();
    let recheckAfterMs: number | undefined;
    for (const node of nodes) {
      const desired = await resolveAll(placementSelections(cma, node), resolve);
      const rollout = rolloutPlacement(node, desired, byNode.get(node) ?? []);
      if (rollout.error)
        log.warn(
          { addon: name, placement: `${node.namespace}/${node.name}`, reason: rollout.error },
          'rollout strategy refused',
        );
      if (rollout.recheckAfterMs !== undefined)
        recheckAfterMs = Math.min(recheckAfterMs ?? maxRequeueMs, rollout.recheckAfterMs);
      rollouts.push({ node, rollout });
      for (const [cluster, v] of verdicts(rollout.addons, rollout.toRollout)) verdictOf.set(cluster, v);
    }
    for (const [cluster, v] of verdicts(byNode.get(undefined) ?? [], 'all')) verdictOf.set(cluster, v);

    for (const list of byNode.values()) {
      for (const a of list) {
        const verdict = verdictOf.get(a.status.clusterName) ?? 'keep';
        await writeConfigStatus(a.mca, verdict, a.desired, refusedOf.get(a.mca) ?? []).catch((err) =>
          errors.push(err),
        );
      }
    }
    await writeAddonManagementStatus(
      cma,
      await defaultReferences(cma, resolve),
      installStrategyType(cma) === 'Placements' ? rollouts : [],
    ).catch((err) => errors.push(err));
    if (errors.length > 0) throw errors[0];
    return recheckAfterMs !== undefined ? { requeueAfterMs: recheckAfterMs } : undefined;
  }

  async function resolveAll(
    selections: ConfigSelection[],
    resolve: (s: ConfigSelection) => Promise<ResolvedSelection>,
  ): Promise<ResolvedSelection[]> {
    return Promise.all(selections.map(resolve));
  }

  async function defaultReferences(
    cma: ClusterManagementAddOn,
    resolve: (s: ConfigSelection) => Promise<ResolvedSelection>,
  ) {
    return defaultConfigReferences(await resolveAll(defaultSelections(cma), resolve));
  }

  async function stampLifecycle(cma: ClusterManagementAddOn): Promise<void> {
    try {
      await cmaClient.patchMerge(cma.metadata.name ?? '', {
        metadata: {
          resourceVersion: cma.metadata.resourceVersion,
          annotations: { [lifecycleAnnotation]: LifecycleValue.AddonManager },
        },
      });
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }

  async function createAddon(cma: ClusterManagementAddOn, cluster: string): Promise<void> {
    try {
      await mcaClient.create({
        metadata: { name: cma.metadata.name, namespace: cluster, ownerReferences: [controllerOwnerRef(cma)] },
        spec: {},
      });
      log.info({ addon: cma.metadata.name, cluster }, 'ManagedClusterAddOn created for a placement decision');
    } catch (err) {
      if (isAlreadyExists(err)) return;
      throw err;
    }
  }

  async function deleteAddon(m: ManagedClusterAddOn): Promise<void> {
    await mcaClient.delete(m.metadata.name ?? '', m.metadata.namespace, {
      ignoreNotFound: true,
      ...(m.metadata.uid ? { preconditions: { uid: m.metadata.uid } } : {}),
    });
    log.info(
      { addon: m.metadata.name, cluster: m.metadata.namespace },
      'ManagedClusterAddOn deleted: its cluster left every placement',
    );
  }

  async function adopt(cma: ClusterManagementAddOn, m: ManagedClusterAddOn): Promise<void> {
    try {
      await mcaClient.patchMerge(
        m.metadata.name ?? '',
        {
          metadata: {
            resourceVersion: m.metadata.resourceVersion,
            ownerReferences: [...(m.metadata.ownerReferences ?? []), adoptionOwnerRef(cma)],
          },
        },
        m.metadata.namespace,
      );
    } catch (err) {
      // a newer version is on its way through the informer, or the add-on is gone
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }

  async function writeConfigStatus(
    m: ManagedClusterAddOn,
    verdict: AddonVerdict,
    desired: readonly ResolvedSelection[],
    refused: readonly GroupResource[],
  ): Promise<void> {
    try {
      await writeAddonStatus(mcaClient, m, (current) =>
        addonConfigStatus(current, verdict, desired, refused),
      );
    } catch (err) {
      if (!isConflict(err)) throw err;
      throw new Error(
        `ManagedClusterAddOn ${m.metadata.namespace}/${m.metadata.name}: status kept changing under us; retrying`,
        { cause: err },
      );
    }
  }

  async function writeAddonManagementStatus(
    cma: ClusterManagementAddOn,
    defaults: NonNullable<ClusterManagementAddOnStatus['defaultconfigReferences']>,
    rollouts: { node: PlacementNode; rollout: PlacementRollout }[] | undefined,
  ): Promise<void> {
    const before = cma.status ?? {};
    const next: ClusterManagementAddOnStatus = { ...before };
    if (defaults.length > 0) next.defaultconfigReferences = defaults;
    else delete next.defaultconfigReferences;
    if (rollouts) {
      const progressions = installProgressions(
        (before.installProgressions ?? []) as unknown as InstallProgression[],
        rollouts,
      );
      if (progressions.length > 0)
        next.installProgressions = progressions as unknown as Record<string, unknown>[];
      else delete next.installProgressions;
    }
    if (canonicalJson(next) === canonicalJson(before)) return;
    try {
      await cmaClient.replaceStatus({ ...cma, status: next });
    } catch (err) {
      if (isNotFound(err)) return;
      if (isConflict(err))
        throw new Error(
          `ClusterManagementAddOn ${cma.metadata.name} changed meanwhile; retrying (${errorMessage(err)})`,
        );
      throw err;
    }
  }

  return {
    ready: controller.ready,
    stop: async () => {
      await controller.stop();
      await configObjects.stop();
    },
  };
}
