// The hub half of the `cluster-gateway` addon (cluster-gateway.ts has the managed half): for every
// ManagedClusterAddOn `cluster-gateway`, the ManagedServiceAccount the gateway dials that cluster
// with (`tether-gateway` in the cluster namespace), owned by the ManagedClusterAddOn so the hub's
// garbage collector deletes it when the addon is disabled (the agent then deletes the
// ServiceAccount, the token Secret goes with its ManagedServiceAccount). An existing one — `tether
// up` creates it directly today — is adopted the same way. It watches the ManagedServiceAccounts
// too, so one deleted while the addon is enabled is recreated at once (the gateway dials with the
// new token as soon as the agent reports it). The addon's health is Customized: this
// controller writes the ManagedClusterAddOn's `Available` from the ManagedServiceAccount's
// `TokenReported`, and touches no other status field or condition (read, change Available only,
// update with resourceVersion; a 409 is retried by the work queue).
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../api/addon.ts';
import {
  type ManagedServiceAccount,
  ManagedServiceAccountCondition,
  managedServiceAccountResource,
} from '../../api/authentication.ts';
import { defaultGatewayMsaName } from '../../gateway/types.ts';
import {
  type ConditionUpdate,
  findCondition,
  Informer,
  isAlreadyExists,
  type KubeObject,
  ResourceClient,
  runController,
} from '../../kube/index.ts';
import { type Logger, logger as makeLogger } from '../../log.ts';
import { withCondition, writeAddonStatus } from '../../registration/addon-status-write.ts';
import { addonOwnerReference } from '../hub/addon-owner.ts';
import { clusterGatewayAddonName } from './cluster-gateway.ts';

export interface ClusterGatewayAddonHubOptions {
  hubKubeConfig: KubeConfig;
  /** the ManagedServiceAccount name (default tether-gateway, what the gateway reads) */
  serviceAccountName?: string;
  resyncPeriodMs?: number;
  log?: Logger;
}

export interface ClusterGatewayAddonHub {
  /** resolves once both caches synced and reconciling started */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** The addon's Available as the ManagedServiceAccount's TokenReported says it. */
export function clusterGatewayAvailability(
  msaName: string,
  msa: ManagedServiceAccount | undefined,
): ConditionUpdate {
  const reported = findCondition(msa?.status?.conditions, ManagedServiceAccountCondition.TokenReported);
  if (reported?.status === 'True')
    return {
      type: 'Available',
      status: 'True',
      reason: 'ManagedServiceAccountTokenReported',
      message: `ManagedServiceAccount ${msaName}'s token is on the hub: the gateway can reach the cluster`,
    };
  if (reported?.status === 'False')
    return {
      type: 'Available',
      status: 'False',
      reason: 'ManagedServiceAccountTokenNotReported',
      message: `ManagedServiceAccount ${msaName}: ${reported.message ?? reported.reason ?? 'token not reported'}`,
    };
  return {
    type: 'Available',
    status: 'Unknown',
    reason: 'ManagedServiceAccountTokenNotReported',
    message: `ManagedServiceAccount ${msaName} has no token yet: is the managed-serviceaccount addon enabled and Available on this cluster?`,
  };
}

/** Start the controller (on the hub replica that leads, or the only one). */
export function startClusterGatewayAddonHub(o: ClusterGatewayAddonHubOptions): ClusterGatewayAddonHub {
  const log = o.log ?? makeLogger('cluster-gateway-addon');
  const msaName = o.serviceAccountName ?? defaultGatewayMsaName;
  const addons = new ResourceClient<ManagedClusterAddOn>(o.hubKubeConfig, managedClusterAddOnResource);
  const msas = new ResourceClient<ManagedServiceAccount>(o.hubKubeConfig, managedServiceAccountResource);
  const addonInformer = new Informer<ManagedClusterAddOn>(addons, {
    fieldSelector: `metadata.name=${clusterGatewayAddonName}`,
    resyncPeriodMs: o.resyncPeriodMs,
    log: log.child({ informer: 'managedclusteraddons' }),
  });
  const msaInformer = new Informer<ManagedServiceAccount>(msas, {
    fieldSelector: `metadata.name=${msaName}`,
    resyncPeriodMs: o.resyncPeriodMs,
    log: log.child({ informer: 'managedserviceaccounts' }),
  });
  addonInformer.start();
  msaInformer.start();

  /** Creates the ManagedServiceAccount, or adds the addon as one of its owners. */
  const ensureServiceAccount = async (
    mca: ManagedClusterAddOn,
    cluster: string,
  ): Promise<ManagedServiceAccount | undefined> => {
    const owner = addonOwnerReference(mca);
    const msa = msaInformer.getByName(msaName, cluster);
    if (!msa) {
      try {
        const created = await msas.create({
          metadata: { name: msaName, namespace: cluster, ownerReferences: [owner] },
          spec: { rotation: { enabled: true } },
        });
        log.info({ cluster, msa: msaName }, 'ManagedServiceAccount created for the cluster-gateway addon');
        return created;
      } catch (err) {
        if (isAlreadyExists(err)) return undefined; // the watch brings it; reconciled again then
        throw err;
      }
    }
    const owners = msa.metadata.ownerReferences ?? [];
    if (owners.some((r) => r.uid === owner.uid)) return msa;
    // A strategic merge is not available for custom resources: write the whole list, guarded by
    // resourceVersion so another writer's owner is never lost.
    const updated = await msas.patchMerge(
      msaName,
      { metadata: { resourceVersion: msa.metadata.resourceVersion, ownerReferences: [...owners, owner] } },
      cluster,
    );
    log.info({ cluster, msa: msaName }, 'ManagedServiceAccount adopted by the cluster-gateway addon');
    return updated;
  };

  const reconcile = async (cluster: string): Promise<void> => {
    const mca = addonInformer.getByName(clusterGatewayAddonName, cluster);
    // Disabled (or being disabled): the garbage collector removes what the addon owns.
    if (!mca || mca.metadata.deletionTimestamp) return;
    const msa = await ensureServiceAccount(mca, cluster);
    const update = clusterGatewayAvailability(msaName, msa);
    await writeAddonStatus(addons, mca, (current) => withCondition(current, update));
  };

  const controller = runController({
    name: 'cluster-gateway-addon',
    informers: [addonInformer, msaInformer] as unknown as Informer<KubeObject>[],
    keyFunc: (obj) => obj.metadata?.namespace,
    reconcile,
    log,
  });
  return {
    ready: controller.ready,
    stop: async () => {
      await controller.stop();
      await Promise.all([addonInformer.stop(), msaInformer.stop()]);
    },
  };
}
