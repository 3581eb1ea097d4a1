// The ClusterProfile controller (tether hub): one multicluster.x-k8s.io ClusterProfile per
// ManagedCluster in one namespace (flag; default `open-cluster-management`, as OCM), named after
// the cluster, kept as profile.ts says; profiles of clusters that are gone are deleted. Owns only
// ClusterProfiles labelled x-k8s.io/cluster-manager=open-cluster-management in that namespace;
// reads ManagedClusters, never writes them.
//
// Hub identity needs: managedclusters get/list/watch; clusterprofiles get/list/watch/create/
// patch/delete and clusterprofiles/status patch in the namespace; namespaces create (once).
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ClusterProfile,
  type ClusterProfileStatus,
  clusterManagerLabel,
  clusterProfileResource,
  defaultClusterProfileNamespace,
  type ManagedCluster,
  managedClusterResource,
  ocmClusterManagerName,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import { canonicalJson } from '../../kube/canonical-json.ts';
import {
  conditionsEqualIgnoringTime,
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeObject,
  namespaceResource,
  ResourceClient,
  runController,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { hubEndpointFromKubeConfig } from '../argocd/index.ts';
import { type GatewayAccess, newProfile, profileLabels, profileStatus } from './profile.ts';

export interface ClusterProfileControllerOptions {
  hubKubeConfig: KubeConfig;
  /** where the profiles live (default `open-cluster-management`) */
  namespace?: string;
  /**
   * the gateway access provider: hub URL and CA as consumers reach them (default: the hub
   * kubeconfig's); false leaves access providers out
   */
  gatewayAccess?: GatewayAccess | false;
  resyncPeriodMs?: number;
  log?: Logger;
}

export interface ClusterProfileController {
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

function sameStatus(a: ClusterProfileStatus | undefined, b: ClusterProfileStatus): boolean {
  const { conditions: ca, ...ra } = a ?? {};
  const { conditions: cb, ...rb } = b;
  return conditionsEqualIgnoringTime(ca, cb) && canonicalJson(ra) === canonicalJson(rb);
}

/** Start the ClusterProfile controller (this replica leads, or runs alone). */
export function startClusterProfileController(
  opts: ClusterProfileControllerOptions,
): ClusterProfileController {
  const kc = opts.hubKubeConfig;
  const log = opts.log ?? logger('clusterprofile');
  const namespace = opts.namespace ?? defaultClusterProfileNamespace;
  const access: GatewayAccess | undefined =
    opts.gatewayAccess === false
      ? undefined
      : (opts.gatewayAccess ??
        (() => {
          const hub = hubEndpointFromKubeConfig(kc);
          return { server: hub.server, caPem: hub.caPem, tlsServerName: hub.serverName };
        })());
  const clusterClient = new ResourceClient<ManagedCluster>(kc, managedClusterResource);
  const profileClient = new ResourceClient<ClusterProfile>(kc, clusterProfileResource);
  const namespaces = new ResourceClient<KubeObject>(kc, namespaceResource);
  const clusters = new Informer<ManagedCluster>(clusterClient, {
    resyncPeriodMs: opts.resyncPeriodMs,
    log: log.child({ informer: 'managedclusters' }),
  });
  const profiles = new Informer<ClusterProfile>(profileClient, {
    namespace,
    labelSelector: `${clusterManagerLabel}=${ocmClusterManagerName}`,
    resyncPeriodMs: opts.resyncPeriodMs,
    log: log.child({ informer: 'clusterprofiles' }),
  });
  let namespaceReady = false;

  const reconcile = async (name: string) => {
    const cluster = clusters.getByName(name);
    let profile = profiles.getByName(name, namespace);
    if (!cluster || cluster.metadata.deletionTimestamp) {
      if (profile) {
        await profileClient.delete(name, namespace, { ignoreNotFound: true });
        log.info({ cluster: name, namespace }, 'ClusterProfile deleted');
      }
      return;
    }
    if (!profile) {
      if (!namespaceReady) {
        await namespaces.create({ metadata: { name: namespace } }).catch((err) => {
          if (!isAlreadyExists(err)) throw err;
        });
        namespaceReady = true;
      }
      try {
        profile = await profileClient.create(newProfile(cluster, namespace));
        log.info({ cluster: name, namespace }, 'ClusterProfile created');
      } catch (err) {
        // Made by a previous leader and not in the cache yet: the informer brings the key back.
        if (isAlreadyExists(err)) return;
        throw err;
      }
    } else {
      const labels = profileLabels(cluster);
      if (Object.entries(labels).some(([k, v]) => profile?.metadata.labels?.[k] !== v)) {
        profile = await profileClient.patchMerge(name, { metadata: { labels } }, namespace);
      }
    }
    const status = profileStatus(cluster, profile.status, access);
    if (sameStatus(profile.status, status)) return;
    try {
      await profileClient.patchStatus(
        name,
        { metadata: { resourceVersion: profile.metadata.resourceVersion }, status },
        namespace,
      );
    } catch (err) {
      // Gone, or a newer version is on its way through the informer and brings the key back.
      if (isNotFound(err) || isConflict(err)) return;
      throw err;
    }
  };

  const controller = runController({
    name: 'clusterprofile',
    informers: [clusters, profiles] as Informer<KubeObject>[],
    keyFunc: (obj) => obj.metadata?.name,
    workers: 2,
    reconcile: async (key) => {
      try {
        return await reconcile(key);
      } catch (err) {
        log.debug({ cluster: key, err: errorMessage(err) }, 'ClusterProfile reconcile failed');
        throw err;
      }
    },
    log,
  });
  return { ready: controller.ready, stop: () => controller.stop() };
}
