// The hub's generic add-on manager, as `tether hub` runs it (OCM's addon-manager in the
// cluster-manager): for every ClusterManagementAddOn, whoever renders its agent, the install
// strategy (Manual / Placements with rollout), the config references and the Configured condition
// of its ManagedClusterAddOns, and its own status (install-strategy/controller.ts); and `Available`
// Unknown for the add-ons of a cluster whose agent is gone (src/registration/hub/addon/lease-health.ts,
// OCM's add-on health check on the hub); at start, when its identity may, the add-on
// configuration admission policies (config-admission.ts). Replicas elect
// one leader on their own Lease (`addon-manager-controller-lock`, next to the other hub
// controllers'); only the leader reconciles. Rendering and delivering agents (AddonManager,
// src/addon/sdk) and addon registration are other parts; this one never touches their fields.
//
// The hub identity needs what addonInstallHubRules() lists (install-strategy-rbac.ts), plus
// get/list/watch on every config kind other than AddOnDeploymentConfig that add-ons list in
// supportedConfigs.
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../../errors.ts';
import { type Logger, logger } from '../../log.ts';
import { startAddonClusterHealth } from '../../registration/hub/addon/lease-health.ts';
import { installAddonConfigAdmission } from './config/admission.ts';
import { startAddonInstallController } from './install-strategy/controller.ts';
import { type AddonLeaderElectionOptions, replicaIdentity, runLeadingOrAlone } from './leading.ts';

export {
  addonConfigAdmissionObjects,
  addonConfigAdmissionPolicyNames,
  configureVerb,
  installAddonConfigAdmission,
} from './config/admission.ts';
export {
  ConfiguredReason,
  configSpecHash,
  configuredCondition,
  goJson,
} from './config/references.ts';
export {
  LifecycleValue,
  lifecycleAnnotation,
  managedByAddonManager,
} from './install-strategy/index.ts';
export { type AddonHubRule, addonInstallHubRules } from './install-strategy/rbac.ts';

/** The add-on manager's leader Lease. */
export const addonManagerLeaderLeaseName = 'addon-manager-controller-lock';
/** Where the Lease lives by default: the hub namespace, as the other hub controllers'. */
export const addonManagerLeaderLeaseNamespace = 'open-cluster-management-hub';

export interface AddonHubLeaderElectionOptions extends AddonLeaderElectionOptions {
  /** the Lease (default addon-manager-controller-lock) */
  name?: string;
}

export interface AddonHubOptions {
  hubKubeConfig: KubeConfig;
  log?: Logger;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /** leader election on a Lease (default on); false runs the controller at once, alone */
  leaderElection?: AddonHubLeaderElectionOptions | false;
  /** apply the add-on configuration admission policies (config-admission.ts) at start (default true) */
  installAdmission?: boolean;
}

export interface AddonHub {
  readonly identity: string;
  isLeader(): boolean;
  /** stop reconciling (waiting for running passes) and give up the leader Lease */
  stop(): Promise<void>;
}

/** Start the add-on manager; resolves once it campaigns (or, alone, once its controller starts). */
export async function startAddonHub(opts: AddonHubOptions): Promise<AddonHub> {
  const log = opts.log ?? logger('addon-hub');
  if (opts.installAdmission ?? true) {
    try {
      await installAddonConfigAdmission(opts.hubKubeConfig, 30_000);
    } catch (err) {
      // The installed hub's role may not write admission policies: `tether init` and the hub
      // chart install them, so this is expected there, not a fault.
      log.info(
        { reason: errorMessage(err) },
        'add-on configuration admission policies (configure) not applied by the hub itself; tether init and the hub chart install them',
      );
    }
  }
  const election = opts.leaderElection;
  const identity = replicaIdentity(election);
  const leading = await runLeadingOrAlone({
    kubeconfig: opts.hubKubeConfig,
    election,
    lease: {
      name: (election === false ? undefined : election?.name) ?? addonManagerLeaderLeaseName,
      namespace: addonManagerLeaderLeaseNamespace,
    },
    identity,
    log,
    start: () => {
      const install = startAddonInstallController({
        kubeconfig: opts.hubKubeConfig,
        resyncPeriodMs: opts.resyncPeriodMs,
        log: log.child({ identity, component: 'addon-install' }),
      });
      // the add-ons of a cluster whose agent is gone (cluster Available Unknown) turn Unknown too
      const clusterHealth = startAddonClusterHealth({
        hubKubeConfig: opts.hubKubeConfig,
        log: log.child({ identity, component: 'addon-cluster-health' }),
      });
      return { stop: async () => void (await Promise.all([install.stop(), clusterHealth.stop()])) };
    },
  });
  return { identity, ...leading };
}
