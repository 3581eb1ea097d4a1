// The hub end of one addon's registration (OCM addon-framework's registration and csr controllers):
// for every ManagedClusterAddOn of the addon,
//   - status.registrations from the addon's `registration.configs` (default: one
//     kube-apiserver-client registration with OCM's default subject), only registrations the hub may
//     hand out at all (src/api/addon-registration.ts);
//   - a Role and RoleBinding `open-cluster-management:<addon>:agent` in the cluster namespace from
//     `registration.hubPermissions`, bound to the addon's per-cluster group and owned by the
//     ManagedClusterAddOn, so they go with it. Nothing outside the cluster namespace;
//   - the RoleBindings of `registration.hubRoleBindings` (existing roles, any namespace the addon
//     names: an AddOnTemplate's hubPermissions; registration/role-bindings.ts);
//   - condition RegistrationApplied with OCM's reasons;
// and the addon's CSRs: approval and, for a custom signer, signing (registration/csr-approval.ts).
// Status is written read → change only registrations and RegistrationApplied → replace with the
// resourceVersion read, retried on 409: the other writers' fields and conditions stay as they are.
// status.namespace is not ours (the deploy controller writes it).
import type { KubeConfig, V1PolicyRule } from '@kubernetes/client-node';
import {
  addonNameLabel,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
  type RegistrationConfig,
} from '../../../api/addon.ts';
import { addonClusterGroup } from '../../../api/addon-registration.ts';
import { clusterNameLabel, type ManagedCluster, managedClusterResource } from '../../../api/cluster.ts';
import { errorMessage } from '../../../errors.ts';
import {
  type Condition,
  conditionsEqualIgnoringTime,
  findCondition,
  Informer,
  type KubeObject,
  ResourceClient,
  runController,
  setCondition,
  splitKey,
} from '../../../kube/index.ts';
import { type Logger, logger } from '../../../log.ts';
import { writeAddonStatus } from '../../../registration/addon-status-write.ts';
import {
  type CertificateSigningRequest,
  certificateSigningRequestResource,
  type PolicyRule,
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
  roleResource,
} from '../../../registration/hub/resources.ts';
import type { AgentAddon } from '../../sdk/types.ts';
import { addonOwnerReference } from '../addon-owner.ts';
import { desiredRegistrations } from './configs.ts';
import { AddonCsrReconciler } from './csr-approval.ts';
import { removeHubRoleBindings, syncHubRoleBindings } from './role-bindings.ts';

export { desiredRegistrations } from './configs.ts';

/** Condition type and OCM's reasons and messages of the registration part. */
export const RegistrationApplied = {
  type: 'RegistrationApplied',
  SetPermissionApplied: 'SetPermissionApplied',
  SetPermissionFailed: 'SetPermissionFailed',
  NilRegistration: 'NilRegistration',
  appliedMessage: 'Registration of the addon agent is configured',
  nilMessage: 'Registration of the addon agent is configured',
  failedMessage: (err: string) => `Failed to set permission for hub agent: ${err}`,
} as const;

/** Field manager of the hub objects this controller writes. */
export const addonRegistrationFieldManager = 'tether-addon-registration';

/** Name of the Role and RoleBinding of `addon`'s agents in each cluster namespace. */
export function addonHubRbacName(addon: string): string {
  return `open-cluster-management:${addon}:agent`;
}

const rbacGroup = 'rbac.authorization.k8s.io';

/** The Role and RoleBinding for `mca`, owned by it; undefined when the addon asks for no rules. */
export function addonHubRbac(
  addon: string,
  mca: ManagedClusterAddOn,
  rules: readonly V1PolicyRule[],
): { role: RbacRole; binding: RbacBinding } | undefined {
  if (rules.length === 0) return undefined;
  const cluster = mca.metadata.namespace ?? '';
  const metadata = {
    name: addonHubRbacName(addon),
    namespace: cluster,
    labels: { [addonNameLabel]: addon, [clusterNameLabel]: cluster },
    ownerReferences: [addonOwnerReference(mca)],
  };
  const roleRules: PolicyRule[] = rules.map((r) => ({
    apiGroups: r.apiGroups ?? [],
    resources: r.resources ?? [],
    verbs: r.verbs,
    ...(r.resourceNames?.length ? { resourceNames: r.resourceNames } : {}),
  }));
  return {
    role: { metadata, rules: roleRules },
    binding: {
      metadata,
      roleRef: { apiGroup: rbacGroup, kind: 'Role', name: addonHubRbacName(addon) },
      subjects: [{ apiGroup: rbacGroup, kind: 'Group', name: addonClusterGroup(cluster, addon) }],
    },
  };
}

export interface AddonRegistrationControllerOptions {
  hubKubeConfig: KubeConfig;
  addon: AgentAddon;
  log?: Logger;
  /** informer resync (default 10 min) */
  resyncPeriodMs?: number;
}

export interface AddonRegistrationController {
  stop(): Promise<void>;
}

/** Keep the registrations, hub RBAC and CSRs of `addon` on every cluster (see the module header). */
export function startAddonRegistrationController(
  options: AddonRegistrationControllerOptions,
): AddonRegistrationController {
  const { hubKubeConfig, addon } = options;
  const log = options.log ?? logger('addon-registration', { addon: addon.name });
  const resyncPeriodMs = options.resyncPeriodMs ?? 600_000;
  const addons = new ResourceClient<ManagedClusterAddOn>(hubKubeConfig, managedClusterAddOnResource);
  const clusters = new ResourceClient<ManagedCluster>(hubKubeConfig, managedClusterResource);
  const csrs = new ResourceClient<CertificateSigningRequest>(
    hubKubeConfig,
    certificateSigningRequestResource,
  );
  const roles = new ResourceClient<RbacRole>(hubKubeConfig, roleResource);
  const bindings = new ResourceClient<RbacBinding>(hubKubeConfig, roleBindingResource);

  const addonInformer = new Informer<ManagedClusterAddOn>(addons, {
    fieldSelector: `metadata.name=${addon.name}`,
    resyncPeriodMs,
    name: `managedclusteraddons ${addon.name}`,
    log,
  });
  const csrInformer = new Informer<CertificateSigningRequest>(csrs, {
    labelSelector: `${addonNameLabel}=${addon.name}`,
    resyncPeriodMs,
    name: `addon csrs ${addon.name}`,
    log,
  });

  const reconcileAddon = async (key: string): Promise<void> => {
    const { namespace, name } = splitKey(key);
    const cached = addonInformer.getByName(name, namespace);
    if (!cached && namespace && addon.registration?.hubRoleBindings) {
      // gone: its bindings outside the cluster namespace have no owner to go with
      await removeHubRoleBindings(bindings, addon.name, namespace);
      return;
    }
    if (!cached || cached.metadata.deletionTimestamp || !namespace) return;
    const cluster = await clusters.get(namespace);
    if (!cluster) return; // the cluster namespace goes with it
    const { registrations, problems } = addon.registration
      ? desiredRegistrations(addon, cluster, cached)
      : { registrations: [], problems: [] };
    let condition: { status: 'True' | 'False'; reason: string; message: string };
    if (!addon.registration) {
      condition = {
        status: 'True',
        reason: RegistrationApplied.NilRegistration,
        message: RegistrationApplied.nilMessage,
      };
    } else {
      try {
        await syncHubRbac(cached, addon.registration.hubPermissions?.(cluster, cached) ?? []);
        if (addon.registration.hubRoleBindings)
          await syncHubRoleBindings(
            bindings,
            addon.name,
            cached,
            addon.registration.hubRoleBindings(cluster, cached),
            addonRegistrationFieldManager,
          );
        condition =
          problems.length > 0
            ? {
                status: 'False',
                reason: RegistrationApplied.SetPermissionFailed,
                message: RegistrationApplied.failedMessage(problems.join('; ')),
              }
            : {
                status: 'True',
                reason: RegistrationApplied.SetPermissionApplied,
                message: RegistrationApplied.appliedMessage,
              };
      } catch (err) {
        condition = {
          status: 'False',
          reason: RegistrationApplied.SetPermissionFailed,
          message: RegistrationApplied.failedMessage(errorMessage(err)),
        };
      }
    }
    await writeStatus(namespace, name, registrations, condition);
    if (condition.status === 'False') throw new Error(condition.message); // retried with backoff
  };

  const syncHubRbac = async (mca: ManagedClusterAddOn, rules: readonly V1PolicyRule[]) => {
    const desired = addonHubRbac(addon.name, mca, rules);
    const namespace = mca.metadata.namespace ?? '';
    if (!desired) {
      await roles.delete(addonHubRbacName(addon.name), namespace, { ignoreNotFound: true });
      await bindings.delete(addonHubRbacName(addon.name), namespace, { ignoreNotFound: true });
      return;
    }
    const write = { fieldManager: addonRegistrationFieldManager, force: true };
    await roles.apply(desired.role, write);
    await bindings.apply(desired.binding, write);
  };

  const writeStatus = async (
    namespace: string,
    name: string,
    registrations: RegistrationConfig[],
    update: { status: 'True' | 'False'; reason: string; message: string },
  ) => {
    const mca = await addons.get(name, namespace);
    if (!mca) return;
    const wrote = await writeAddonStatus(addons, mca, (current) => {
      if (current.metadata.deletionTimestamp) return undefined;
      const before = current.status?.conditions ?? [];
      const conditions: Condition[] = setCondition(
        before,
        { type: RegistrationApplied.type, ...update },
        current.metadata.generation,
      );
      const same =
        JSON.stringify(current.status?.registrations ?? []) === JSON.stringify(registrations) &&
        conditionsEqualIgnoringTime(
          [findCondition(before, RegistrationApplied.type)].filter((c) => c !== undefined),
          [findCondition(conditions, RegistrationApplied.type)].filter((c) => c !== undefined),
        );
      if (same) return undefined;
      return {
        ...current.status,
        conditions,
        ...(registrations.length > 0 ? { registrations } : { registrations: undefined }),
      };
    });
    if (wrote) {
      log.info(
        { cluster: namespace, registrations: registrations.length, reason: update.reason },
        'addon registration configured',
      );
    }
  };

  const csrReconciler = new AddonCsrReconciler({
    hubKubeConfig,
    addon,
    csrs,
    clusters,
    csrInformer,
    addonInformer,
    log: log.child({ loop: 'csr' }),
  });

  // Started here, shared by both controllers, stopped here after them.
  addonInformer.start();
  csrInformer.start();
  const registrationController = runController({
    name: `addon-registration ${addon.name}`,
    informers: [addonInformer as Informer<KubeObject>],
    reconcile: reconcileAddon,
    workers: 4,
    log,
  });
  // CSRs are looked at again whenever their cluster's ManagedClusterAddOn changes: its
  // registrations may have arrived after the CSR did.
  const csrController = runController({
    name: `addon-csr ${addon.name}`,
    informers: [csrInformer as Informer<KubeObject>, addonInformer as Informer<KubeObject>],
    keyFunc: (obj, informer) =>
      informer === (csrInformer as Informer<KubeObject>)
        ? obj.metadata?.name
        : csrReconciler.csrsOfCluster(obj.metadata?.namespace ?? ''),
    reconcile: (name) => csrReconciler.reconcile(name),
    workers: 2,
    log,
  });

  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        await Promise.all([registrationController.stop(), csrController.stop()]);
        await Promise.all([addonInformer.stop(), csrInformer.stop()]);
      })();
      return stopped;
    },
  };
}
