// The GitOpsCluster controller (tether hub): for each GitOpsCluster, the clusters its Placement's
// PlacementDecisions name become Argo CD cluster Secrets in spec.argoServer.argoNamespace whose
// server is the tether gateway URL of the cluster and whose bearer token belongs to a hub
// ServiceAccount made for this GitOpsCluster (why not a ManagedServiceAccount token:
// cluster-secret.ts). Alongside: hub RBAC allowing that ServiceAccount `clustergateways/proxy` on
// exactly the decided clusters, and per cluster a ManifestWork binding `managedClusterRole` to the
// identity the gateway impersonates for it there. Clusters leaving the decisions lose their
// Secret, their ManifestWork and their RBAC entry; a deleted GitOpsCluster loses everything.
// The gateway reaches a cluster with the cluster's ManagedServiceAccount (`tether-gateway`): the
// controller creates it where it is missing and reports a cluster whose token is not on the hub yet.
// Status: OCM's phase/message/lastUpdateTime plus PlacementResolved / ClustersRegistered / Ready.
//
// Owns only objects labelled apps.open-cluster-management.io/gitopscluster=<ns>.<name> (and the
// ServiceAccount + token Secret it names after the GitOpsCluster, owned by it). Reads
// PlacementDecisions; never writes them.
//
// Hub identity needs: gitopsclusters get/list/watch (+ /status patch); placementdecisions
// get/list/watch; secrets and serviceaccounts get/list/create/patch/delete (Argo CD namespaces and
// GitOpsCluster namespaces); clusterroles/clusterrolebindings get/create/patch/delete (and the
// `clustergateways/proxy` rights it hands out, or `escalate`/`bind`); manifestworks
// get/list/create/patch/delete; managedserviceaccounts get/create in cluster namespaces.

import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  argoCdClusterNameLabel,
  type GitOpsCluster,
  GitOpsClusterCondition,
  GitOpsClusterPhase,
  gitOpsClusterOwnerLabel,
  gitOpsClusterResource,
  type ManagedServiceAccount,
  type ManifestWork,
  managedServiceAccountResource,
  manifestWorkResource,
  type PlacementDecision,
  placementDecisionResource,
  placementLabel,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import { defaultGatewayMsaName } from '../../gateway/index.ts';
import {
  type ConditionUpdate,
  type Controller,
  clusterRoleBindingResource,
  clusterRoleResource,
  conditionsEqualIgnoringTime,
  formatTime,
  Informer,
  type KubeObject,
  ResourceClient,
  runController,
  secretResource,
  serviceAccountResource,
  setCondition,
  splitKey,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import {
  argoCdClusterSecret,
  argoCdManagedRbacWork,
  argoCdServiceAccountName,
  argoCdTokenSecretName,
  gatewayAccessRbac,
  gatewayAccessRoleName,
  gitOpsClusterOwner,
  type HubEndpoint,
} from './cluster-secret.ts';

export const gitOpsClusterFieldManager = 'tether-gitopscluster';

export interface ArgoCdClusterControllerOptions {
  hubKubeConfig: KubeConfig;
  /**
   * where Argo CD reaches the hub and how it verifies it (default: the hub kubeconfig's server
   * and CA; set it when Argo CD reaches the hub by another name)
   */
  hubEndpoint?: HubEndpoint;
  /**
   * ClusterRole bound on each managed cluster to Argo CD's impersonated identity (default
   * `cluster-admin`, as `argocd cluster add` grants); false: no ManifestWork, bind it yourself
   */
  managedClusterRole?: string | false;
  /**
   * the ManagedServiceAccount the gateway dials each cluster with (default `tether-gateway`, the
   * gateway's default): created in a decided cluster's namespace when missing, and the cluster
   * counts as registered only once its token Secret is on the hub; false: not checked
   */
  gatewayMsaName?: string | false;
  /** how long to wait before looking again for the ServiceAccount token (default 1 s) */
  tokenPollMs?: number;
  resyncPeriodMs?: number;
  log?: Logger;
}

export interface ArgoCdClusterController {
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

interface TokenSecret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** The hub endpoint a kubeconfig's current context names (server + CA). */
export function hubEndpointFromKubeConfig(kc: KubeConfig): HubEndpoint {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the hub kubeconfig has no current cluster');
  let caPem = '';
  if (cluster.caData) caPem = Buffer.from(cluster.caData, 'base64').toString('utf8');
  else if (cluster.caFile) caPem = readFileSync(cluster.caFile, 'utf8');
  return {
    server: cluster.server,
    caPem,
    ...(cluster.tlsServerName ? { serverName: cluster.tlsServerName } : {}),
  };
}

/** Start the GitOpsCluster controller (this replica leads, or runs alone). */
export function startArgoCdClusterController(opts: ArgoCdClusterControllerOptions): ArgoCdClusterController {
  const kc = opts.hubKubeConfig;
  const log = opts.log ?? logger('gitopscluster');
  const hub = opts.hubEndpoint ?? hubEndpointFromKubeConfig(kc);
  const managedClusterRole = opts.managedClusterRole ?? 'cluster-admin';
  const gitOpsClusters = new ResourceClient<GitOpsCluster>(kc, gitOpsClusterResource);
  const decisionsClient = new ResourceClient<PlacementDecision>(kc, placementDecisionResource);
  const secrets = new ResourceClient<TokenSecret>(kc, secretResource);
  const serviceAccounts = new ResourceClient<KubeObject>(kc, serviceAccountResource);
  const works = new ResourceClient<ManifestWork>(kc, manifestWorkResource);
  const msas = new ResourceClient<ManagedServiceAccount>(kc, managedServiceAccountResource);
  const gatewayMsa = opts.gatewayMsaName ?? defaultGatewayMsaName;
  const clusterRoles = new ResourceClient<KubeObject>(kc, clusterRoleResource);
  const clusterRoleBindings = new ResourceClient<KubeObject>(kc, clusterRoleBindingResource);

  const informerOptions = (name: string) => ({
    resyncPeriodMs: opts.resyncPeriodMs,
    log: log.child({ informer: name }),
  });
  const gitOps = new Informer<GitOpsCluster>(gitOpsClusters, informerOptions('gitopsclusters'));
  const decisions = new Informer<PlacementDecision>(decisionsClient, {
    ...informerOptions('placementdecisions'),
    labelSelector: placementLabel,
  });

  const placementOf = (g: GitOpsCluster) =>
    g.spec.placementRef
      ? {
          namespace: g.spec.placementRef.namespace ?? g.metadata.namespace ?? '',
          name: g.spec.placementRef.name,
        }
      : undefined;

  const decidedClusters = (namespace: string, placement: string): string[] => {
    const names = new Set<string>();
    for (const d of decisions.list()) {
      if (d.metadata.namespace !== namespace || d.metadata.labels?.[placementLabel] !== placement) continue;
      for (const c of d.status?.decisions ?? []) if (c.clusterName) names.add(c.clusterName);
    }
    return [...names].sort();
  };

  const apply = (client: ResourceClient<KubeObject>, obj: KubeObject) =>
    client.apply(obj, { fieldManager: gitOpsClusterFieldManager, force: true });

  /** Everything labelled for `owner` that is not in `keep` (Secrets and ManifestWorks). */
  const prune = async (owner: string, keepClusters: ReadonlySet<string>, argoNamespace?: string) => {
    const selector = `${gitOpsClusterOwnerLabel}=${owner}`;
    const owned = await secrets.list({ labelSelector: selector });
    for (const s of owned.items) {
      const meta = s.metadata ?? {};
      const cluster = meta.labels?.[argoCdClusterNameLabel] ?? '';
      if (meta.namespace === argoNamespace && keepClusters.has(cluster)) continue;
      await secrets.delete(meta.name ?? '', meta.namespace, { ignoreNotFound: true });
      log.info({ secret: `${meta.namespace}/${meta.name}` }, 'Argo CD cluster Secret removed');
    }
    const ownedWorks = await works.list({ labelSelector: selector });
    for (const w of ownedWorks.items) {
      if (keepClusters.has(w.metadata.namespace ?? '')) continue;
      await works.delete(w.metadata.name ?? '', w.metadata.namespace, { ignoreNotFound: true });
    }
  };

  const cleanup = async (key: string) => {
    const { namespace, name } = splitKey(key);
    const ghost = { metadata: { namespace, name } };
    await prune(`${namespace}.${name}`, new Set());
    const roleName = gatewayAccessRoleName(ghost);
    await clusterRoleBindings.delete(roleName, undefined, { ignoreNotFound: true });
    await clusterRoles.delete(roleName, undefined, { ignoreNotFound: true });
  };

  const writeStatus = async (
    g: GitOpsCluster,
    updates: ConditionUpdate[],
    phase: string,
    message: string,
  ) => {
    let conditions = g.status?.conditions;
    for (const u of updates) conditions = setCondition(conditions, u, g.metadata.generation);
    if (
      g.status?.phase === phase &&
      g.status?.message === message &&
      conditionsEqualIgnoringTime(g.status?.conditions, conditions)
    )
      return;
    await gitOpsClusters.patchStatus(
      g.metadata.name ?? '',
      { status: { phase, message, lastUpdateTime: formatTime(new Date()), conditions } },
      g.metadata.namespace,
    );
  };

  /** Whether the gateway can dial `cluster` (its MSA token is on the hub); creates the MSA if missing. */
  const gatewayCredentialReady = async (cluster: string, msaName: string): Promise<boolean> => {
    const secret = await secrets.get(msaName, cluster);
    if (secret?.data?.['token']) return true;
    if (!(await msas.get(msaName, cluster))) {
      await msas.create({ metadata: { name: msaName, namespace: cluster }, spec: {} });
      log.info({ cluster, managedServiceAccount: msaName }, 'ManagedServiceAccount for the gateway created');
    }
    return false;
  };

  const reconcile = async (key: string) => {
    const { namespace, name } = splitKey(key);
    const g = gitOps.getByName(name, namespace);
    if (!g || g.metadata.deletionTimestamp) {
      await cleanup(key);
      return;
    }
    const owner = gitOpsClusterOwner(g);
    const placement = placementOf(g);
    if (!placement) {
      await writeStatus(
        g,
        [
          {
            type: GitOpsClusterCondition.PlacementResolved,
            status: 'False',
            reason: 'NoPlacementRef',
            message: 'spec.placementRef is not set',
          },
          {
            type: GitOpsClusterCondition.Ready,
            status: 'False',
            reason: 'NoPlacementRef',
            message: 'spec.placementRef is not set',
          },
        ],
        GitOpsClusterPhase.Failed,
        'spec.placementRef is not set',
      );
      return;
    }
    const clusters = decidedClusters(placement.namespace, placement.name);

    // Argo CD's hub identity: a ServiceAccount and its long-lived token, owned by the GitOpsCluster.
    const ownerRef = {
      apiVersion: g.apiVersion ?? 'apps.open-cluster-management.io/v1beta1',
      kind: 'GitOpsCluster',
      name: g.metadata.name ?? '',
      uid: g.metadata.uid ?? '',
      controller: true,
      blockOwnerDeletion: true,
    };
    const saName = argoCdServiceAccountName(g);
    await apply(serviceAccounts, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: saName, namespace, ownerReferences: [ownerRef] },
    });
    const tokenSecretName = argoCdTokenSecretName(g);
    let tokenSecret = await secrets.get(tokenSecretName, namespace);
    if (!tokenSecret) {
      tokenSecret = await apply(secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/service-account-token',
        metadata: {
          name: tokenSecretName,
          namespace,
          annotations: { 'kubernetes.io/service-account.name': saName },
          ownerReferences: [ownerRef],
        },
      } as KubeObject);
    }
    const token = tokenSecret.data?.['token']
      ? Buffer.from(tokenSecret.data['token'], 'base64').toString('utf8')
      : '';
    if (!token) {
      // The hub's token controller fills it in shortly.
      return { requeueAfterMs: opts.tokenPollMs ?? 1000 };
    }

    for (const obj of gatewayAccessRbac(g, clusters)) {
      await apply(obj.kind === 'ClusterRole' ? clusterRoles : clusterRoleBindings, obj);
    }
    const failed: string[] = [];
    const waiting: string[] = [];
    for (const cluster of clusters) {
      try {
        if (gatewayMsa !== false && !(await gatewayCredentialReady(cluster, gatewayMsa)))
          waiting.push(cluster);
        await apply(secrets, argoCdClusterSecret(g, cluster, hub, token));
        // Fails (NotFound) until the registration hub made the cluster namespace: retried.
        if (managedClusterRole !== false) {
          await apply(
            works as unknown as ResourceClient<KubeObject>,
            argoCdManagedRbacWork(g, cluster, managedClusterRole) as KubeObject,
          );
        }
      } catch (err) {
        log.warn({ gitOpsCluster: key, cluster, err: errorMessage(err) }, 'cluster not registered');
        failed.push(`${cluster} (${errorMessage(err)})`);
      }
    }
    await prune(owner, new Set(clusters), g.spec.argoServer.argoNamespace);

    const registered = clusters.length - failed.length;
    const ok = failed.length === 0 && waiting.length === 0;
    const message =
      failed.length > 0
        ? `not registered: ${failed.join(', ')}`
        : waiting.length > 0
          ? `waiting for the gateway's ManagedServiceAccount ${gatewayMsa} token of: ${waiting.join(', ')}`
          : `${registered} managed cluster(s) registered with Argo CD in ${g.spec.argoServer.argoNamespace}`;
    await writeStatus(
      g,
      [
        {
          type: GitOpsClusterCondition.PlacementResolved,
          status: 'True',
          reason: 'PlacementResolved',
          message: `Placement ${placement.namespace}/${placement.name} selects ${clusters.length} cluster(s)`,
        },
        {
          type: GitOpsClusterCondition.ClustersRegistered,
          status: ok ? 'True' : 'False',
          reason: ok
            ? 'ClustersRegistered'
            : failed.length > 0
              ? 'ClusterRegistrationFailed'
              : 'WaitingForGatewayCredential',
          message,
        },
        {
          type: GitOpsClusterCondition.Ready,
          status: ok ? 'True' : 'False',
          reason: ok ? 'Ready' : 'NotReady',
          message,
        },
      ],
      ok ? GitOpsClusterPhase.Successful : GitOpsClusterPhase.Failed,
      message,
    );
    if (failed.length > 0) throw new Error(message);
    // The MSA token Secret is not watched here: look again shortly.
    if (waiting.length > 0) return { requeueAfterMs: 5000 };
  };

  const controller: Controller = runController({
    name: 'gitopscluster',
    informers: [gitOps, decisions] as Informer<KubeObject>[],
    keyFunc: (obj, informer) => {
      if (informer === (gitOps as Informer<KubeObject>))
        return `${obj.metadata?.namespace}/${obj.metadata?.name}`;
      const placement = obj.metadata?.labels?.[placementLabel];
      return gitOps
        .list()
        .filter((g) => {
          const p = placementOf(g);
          return p?.namespace === obj.metadata?.namespace && p?.name === placement;
        })
        .map((g) => `${g.metadata.namespace}/${g.metadata.name}`);
    },
    reconcile,
    log,
  });
  return { ready: controller.ready, stop: () => controller.stop() };
}
