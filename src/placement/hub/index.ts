// The placement hub: everything of OCM's placement APIs that runs in `tether hub` — the cluster-set
// controllers (the kept `default` and `global` sets, the default set label, ClusterSetEmpty, Bound),
// the placement scheduler (Placement → PlacementDecisions, placement-controller.ts), the
// ManifestWorkReplicaSet controller, a ClusterProfile per ManagedCluster (src/placement/clusterprofile),
// on request the GitOpsCluster controller (src/placement/argocd), and the cluster-set admission
// policies (bind, join, GitOpsCluster). The placement controllers read one shared informer per kind (informers.ts). Replicas elect one leader on their own Lease
// (`placement-controller-lock`, next to the registration hub's), and only the leader reconciles.
//
// The hub's identity needs: managedclusters get/list/watch/patch; managedclustersets
// get/list/watch/create/update/patch (+ /status patch); managedclustersetbindings get/list/watch
// (+ /status patch); placements get/list/watch (+ /status); placementdecisions and manifestworks
// get/list/watch/create/update/patch/delete (+ /status); manifestworkreplicasets get/list/watch/
// update/patch (+ /status, finalizers); addonplacementscores get/list/watch; events create; leases
// in the election namespace; and, to apply its admission policy itself,
// validatingadmissionpolicies(+bindings) patch and managedclustersets/bind create (else it only logs
// that `tether init` must install them). With the join policy in force, labelling clusters into
// `default` also needs managedclustersets/join create on `default`.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../../errors.ts';
import { type RunningControllers, runWhileLeading } from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { startArgoCdClusterController } from '../argocd/index.ts';
import { startClusterProfileController } from '../clusterprofile/index.ts';
import { startClusterSetControllers } from './clustersets.ts';
import { installPlacementAdmission } from './clustersets-admission.ts';
import { startPlacementHubInformers } from './informers.ts';
import { startManifestWorkReplicaSetController } from './manifestworkreplicaset-controller.ts';
import { startPlacementController } from './placement-controller.ts';

export {
  bindingNameMessage,
  bindingPolicyName,
  installPlacementAdmission,
  joinPolicyName,
  placementAdmissionObjects,
} from './clustersets-admission.ts';
export {
  clusterInSet,
  clusterSetAutoUpdateAnnotation,
  clusterSetMembers,
  labelSelectorMatches,
} from './clustersets-membership.ts';
export { type PlacementHubRule, placementHubRules } from './rbac.ts';

/** The placement hub's leader Lease (OCM's placement controller's lock name). */
export const placementLeaderLeaseName = 'placement-controller-lock';
/** Where the Lease lives by default: the hub namespace, as the registration hub's. */
export const placementLeaderLeaseNamespace = 'open-cluster-management-hub';

export interface PlacementLeaderElectionOptions {
  namespace?: string;
  name?: string;
  /** this replica, unique among replicas (default hostname + random suffix) */
  identity?: string;
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface PlacementHubOptions {
  hubKubeConfig: KubeConfig;
  /** leader election on a Lease (default on); false runs the controllers at once, alone */
  leaderElection?: PlacementLeaderElectionOptions | false;
  /**
   * run the placement scheduler and the ManifestWorkReplicaSet controller next to the cluster-set
   * controllers (default true; tests of the cluster sets alone turn them off)
   */
  placementControllers?: boolean;
  /** apply the cluster-set admission policies (bind, join) at start (default true) */
  installAdmission?: boolean;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /**
   * keep a SIG Multicluster ClusterProfile per ManagedCluster in this namespace (default
   * `open-cluster-management`, as OCM); false: no ClusterProfile controller
   */
  clusterProfiles?: { namespace?: string } | false;
  /**
   * run the GitOpsCluster controller (Argo CD cluster Secrets; default off): it writes Secrets in
   * the Argo CD namespaces and reads ServiceAccount token Secrets, rights the installed hub's
   * role does not carry (src/placement/argocd/controller.ts lists them)
   */
  gitOpsClusters?: boolean;
  log?: Logger;
}

export interface PlacementHub {
  readonly identity: string;
  isLeader(): boolean;
  /** stop reconciling (waiting for running reconciles) and give up the leader Lease */
  stop(): Promise<void>;
}

/** Start the placement hub; resolves once it campaigns (or, alone, once its controllers start). */
export async function startPlacementHub(opts: PlacementHubOptions): Promise<PlacementHub> {
  const log = opts.log ?? logger('placement-hub');
  const kc = opts.hubKubeConfig;
  if (opts.installAdmission ?? true) {
    try {
      await installPlacementAdmission(kc, 30_000);
    } catch (err) {
      // The installed hub's role may not write admission policies: `tether init` and the hub
      // chart install them, so this is expected there, not a fault.
      log.info(
        { reason: errorMessage(err) },
        'cluster-set admission policies (bind, join) not applied by the hub itself; tether init and the hub chart install them',
      );
    }
  }
  const election = opts.leaderElection === false ? undefined : (opts.leaderElection ?? {});
  const identity = election?.identity ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
  const start = (): RunningControllers => {
    const childLog = log.child({ identity });
    if (opts.placementControllers === false) {
      const sets = startClusterSetControllers({
        kubeconfig: kc,
        resyncPeriodMs: opts.resyncPeriodMs,
        log: childLog.child({ component: 'clustersets' }),
      });
      return { stop: () => sets.stop() };
    }
    // one cache per kind for every controller below (informers.ts)
    const informers = startPlacementHubInformers({
      kubeconfig: kc,
      resyncPeriodMs: opts.resyncPeriodMs,
      log: childLog.child({ component: 'informers' }),
    });
    const controllers: RunningControllers[] = [
      startClusterSetControllers({
        kubeconfig: kc,
        resyncPeriodMs: opts.resyncPeriodMs,
        informers,
        log: childLog.child({ component: 'clustersets' }),
      }),
      startPlacementController({
        hubKubeConfig: kc,
        resyncPeriodMs: opts.resyncPeriodMs,
        informers,
        log: childLog.child({ component: 'placement-controller' }),
      }),
      startManifestWorkReplicaSetController({
        kubeconfig: kc,
        resyncPeriodMs: opts.resyncPeriodMs,
        informers,
        log: childLog.child({ component: 'manifestworkreplicaset' }),
      }),
    ];
    if (opts.clusterProfiles !== false) {
      controllers.push(
        startClusterProfileController({
          hubKubeConfig: kc,
          namespace: opts.clusterProfiles?.namespace,
          resyncPeriodMs: opts.resyncPeriodMs,
          log: childLog.child({ component: 'clusterprofile' }),
        }),
      );
    }
    if (opts.gitOpsClusters) {
      controllers.push(
        startArgoCdClusterController({
          hubKubeConfig: kc,
          resyncPeriodMs: opts.resyncPeriodMs,
          log: childLog.child({ component: 'gitopscluster' }),
        }),
      );
    }
    return {
      stop: async () => {
        await Promise.all(controllers.map((c) => c.stop()));
        await informers.stop();
      },
    };
  };

  if (!election) {
    const controllers = start();
    return { identity, isLeader: () => true, stop: () => controllers.stop() };
  }

  const leading = await runWhileLeading({
    kubeconfig: kc,
    namespace: election.namespace ?? placementLeaderLeaseNamespace,
    name: election.name ?? placementLeaderLeaseName,
    identity,
    leaseDurationSeconds: election.leaseDurationSeconds,
    renewDeadlineMs: election.renewDeadlineMs,
    retryPeriodMs: election.retryPeriodMs,
    log,
    start,
  });
  return { identity, ...leading };
}
