// Wiring of the registration-hub reconcilers: the shared caches (ManagedClusters, cluster leases,
// and the namespaces and RBAC objects labelled with a cluster name), one work queue per concern
// keyed by cluster (or CSR) name, and their shutdown. A change to a cluster's namespace or RBAC
// brings that cluster back to its queue, so the accept reconcile repairs it. Accepting and
// deleting share one queue, so one cluster is never accepted and torn down at the same time;
// leases, taints, CSR approval and signing each run on their own.
import type { KubeConfig } from '@kubernetes/client-node';
import { clusterNameLabel, type ManagedCluster, managedClusterLeaseName } from '../../api/index.ts';
import {
  type Controller,
  Informer,
  type KubeObject,
  type Lease,
  leaseResource,
  ResourceClient,
  runController,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { CertificateAuthority } from '../../pki/index.ts';
import { ManagedClusterAcceptReconciler } from './accept.ts';
import { AppliedObjects, appliedKey, LeaseCreations } from './applied-objects.ts';
import { type ClusterObjectCaches, clusterClient, clusterNameProblem, type HubContext } from './context.ts';
import { ClusterCsrApprovingReconciler, clusterCsrSelector } from './csr-approval.ts';
import { ManagedClusterDeletionReconciler } from './deletion.ts';
import { HubEventRecorder } from './events.ts';
import { ManagedClusterLeaseReconciler } from './lease.ts';
import {
  type CertificateSigningRequest,
  certificateSigningRequestResource,
  clusterRbacName,
  clusterRoleBindingResource,
  clusterRoleResource,
  namespaceResource,
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
} from './resources.ts';
import { ClusterCsrSigningReconciler, type HubSignerLimits } from './signer.ts';
import { ManagedClusterTaintReconciler } from './taints.ts';

export interface HubControllerOptions {
  kubeconfig: KubeConfig;
  autoApprovedCsrUsers: readonly string[];
  /** signers whose cluster CSRs the approver approves */
  approvedSignerNames: readonly string[];
  signer?: { ca: CertificateAuthority; signerName: string; limits: HubSignerLimits };
  leaseGraceFactor: number;
  clusterLabelSelector?: string;
  resyncPeriodMs?: number;
  log: Logger;
}

export interface HubControllers {
  /** stop every controller (waiting for running reconciles) and the caches they shared */
  stop(): Promise<void>;
}

/** Start every reconciler of the registration hub (this replica leads, or runs alone). */
export function startHubControllers(o: HubControllerOptions): HubControllers {
  const { kubeconfig, log } = o;
  const clusters = clusterClient(kubeconfig);
  const leases = new ResourceClient<Lease>(kubeconfig, leaseResource);
  const csrs = new ResourceClient<CertificateSigningRequest>(kubeconfig, certificateSigningRequestResource);
  const informerOptions = (name: string) => ({
    resyncPeriodMs: o.resyncPeriodMs,
    log: log.child({ informer: name }),
  });
  const ctx: HubContext = {
    kubeconfig,
    clusters,
    clusterInformer: new Informer<ManagedCluster>(clusters, {
      ...informerOptions('managedclusters'),
      labelSelector: o.clusterLabelSelector,
    }),
    leaseInformer: new Informer<Lease>(leases, {
      ...informerOptions('leases'),
      fieldSelector: `metadata.name=${managedClusterLeaseName}`,
    }),
    clusterObjects: clusterObjectCaches(kubeconfig, informerOptions),
    applied: new AppliedObjects(),
    leaseCreations: new LeaseCreations(),
    events: new HubEventRecorder(kubeconfig, log.child({ component: 'events' })),
    log,
  };
  const kinds: Record<keyof ClusterObjectCaches, string> = {
    namespaces: namespaceResource.kind,
    clusterRoles: clusterRoleResource.kind,
    clusterRoleBindings: clusterRoleBindingResource.kind,
    roleBindings: roleBindingResource.kind,
  };
  const objectCaches: Informer<KubeObject>[] = [];
  for (const [field, kind] of Object.entries(kinds) as Array<[keyof ClusterObjectCaches, string]>) {
    const cache: Informer<KubeObject> = ctx.clusterObjects[field];
    objectCaches.push(cache);
    cache.addHandlers({
      add: (obj) => ctx.applied.observe(appliedKey(kind, obj), obj),
      update: (_old, obj) => ctx.applied.observe(appliedKey(kind, obj), obj),
      delete: (obj) => ctx.applied.forget(appliedKey(kind, obj)),
    });
  }
  // Shared by several controllers: started (and stopped) here, not by any one of them.
  const shared = [ctx.clusterInformer, ctx.leaseInformer, ...objectCaches];
  for (const informer of shared) informer.start();

  const controllers: Controller[] = [];
  const run = (name: string, options: Omit<Parameters<typeof runController>[0], 'name' | 'log'>) => {
    const controller = runController({ ...options, name, log: log.child({ controller: name }) });
    controllers.push(controller);
    return controller;
  };

  const accept = new ManagedClusterAcceptReconciler(ctx, leases);
  const deletion = new ManagedClusterDeletionReconciler(ctx, accept, (name) => clusterQueue.queue.add(name));
  const badNames = new Set<string>();
  const clusterQueue = run('managedcluster', {
    informers: [ctx.clusterInformer, ...objectCaches],
    // A namespace or RBAC object is its cluster's by label (the shared ClusterRoles' label is empty).
    keyFunc: (obj: KubeObject, informer) =>
      informer === ctx.clusterInformer ? obj.metadata?.name : obj.metadata?.labels?.[clusterNameLabel],
    // Reconciles wait on the apiserver, not the CPU: many clusters joining at once need many.
    workers: 16,
    reconcile: async (name) => {
      const cluster = ctx.clusterInformer.getByName(name);
      if (!cluster) return deletion.forget(name);
      const problem = clusterNameProblem(name);
      if (problem) {
        if (!badNames.has(name)) log.warn({ cluster: name, problem }, 'ManagedCluster ignored: rename it');
        badNames.add(name);
        return;
      }
      if (cluster.metadata.deletionTimestamp) return deletion.reconcile(cluster);
      return accept.reconcile(cluster);
    },
  });

  const lease = new ManagedClusterLeaseReconciler(ctx, leases, o.leaseGraceFactor);
  run('managedcluster-lease', {
    informers: [ctx.clusterInformer, ctx.leaseInformer],
    // A lease's namespace is its cluster's name.
    keyFunc: (obj: KubeObject) =>
      obj.kind === leaseResource.kind ? obj.metadata?.namespace : obj.metadata?.name,
    workers: 2,
    reconcile: (name) => lease.reconcile(name),
  });

  const taints = new ManagedClusterTaintReconciler(ctx);
  run('managedcluster-taint', {
    informers: [ctx.clusterInformer],
    workers: 2,
    reconcile: (name) => taints.reconcile(name),
  });

  const csrInformer = new Informer<CertificateSigningRequest>(csrs, {
    ...informerOptions('csrs'),
    labelSelector: clusterCsrSelector,
  });
  const approver = new ClusterCsrApprovingReconciler(kubeconfig, csrInformer, {
    autoApprovedUsers: o.autoApprovedCsrUsers,
    signerNames: o.approvedSignerNames,
    clusterGrantsPending: (cluster) =>
      ctx.clusterInformer.getByName(cluster) !== undefined &&
      (!ctx.clusterObjects.clusterRoles.getByName(clusterRbacName(cluster)) ||
        !ctx.clusterObjects.clusterRoleBindings.getByName(clusterRbacName(cluster))),
    events: ctx.events,
    log: log.child({ controller: 'csr-approving' }),
  });
  // Many clusters join at once (each approval is a few requests in a row): several workers, while
  // the approver takes the CSRs of one cluster in turn.
  run('csr-approving', {
    informers: [csrInformer],
    workers: 16,
    reconcile: (name) => approver.reconcile(name),
  });

  if (o.signer) {
    const signerInformer = new Informer<CertificateSigningRequest>(csrs, {
      ...informerOptions('csrs-to-sign'),
      fieldSelector: `spec.signerName=${o.signer.signerName}`,
    });
    const signerLog = log.child({ controller: 'csr-signing', signerName: o.signer.signerName });
    const signer = new ClusterCsrSigningReconciler(
      csrs,
      signerInformer,
      o.signer.ca,
      o.signer.limits,
      signerLog,
    );
    run('csr-signing', {
      informers: [signerInformer],
      workers: 2,
      reconcile: (name) => signer.reconcile(name),
    });
  }

  return {
    async stop() {
      await Promise.all(controllers.map((c) => c.stop()));
      await deletion.stop();
      await Promise.all(shared.map((informer) => informer.stop()));
    },
  };
}

/** Informers on the namespaces and RBAC objects labelled with a cluster name (what accepting writes). */
function clusterObjectCaches(
  kubeconfig: KubeConfig,
  informerOptions: (name: string) => { resyncPeriodMs?: number; log: Logger },
): ClusterObjectCaches {
  const cache = <T extends KubeObject>(descriptor: typeof namespaceResource, name: string) =>
    new Informer<T>(new ResourceClient<T>(kubeconfig, descriptor), {
      ...informerOptions(name),
      labelSelector: clusterNameLabel,
      // The ManagedCluster informer's resync already reconciles every cluster.
      resyncPeriodMs: 0,
    });
  return {
    namespaces: cache<KubeObject>(namespaceResource, 'cluster-namespaces'),
    clusterRoles: cache<RbacRole>(clusterRoleResource, 'cluster-clusterroles'),
    clusterRoleBindings: cache<RbacBinding>(clusterRoleBindingResource, 'cluster-clusterrolebindings'),
    roleBindings: cache<RbacBinding>(roleBindingResource, 'cluster-rolebindings'),
  };
}
