// Wiring of the registration-hub reconcilers: the shared caches (ManagedClusters, cluster leases),
// one work queue per concern keyed by cluster (or CSR) name, and their shutdown. Accepting and
// deleting share one queue, so one cluster is never accepted and torn down at the same time;
// leases, taints, CSR approval and signing each run on their own.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, managedClusterLeaseName } from '../../api/index.ts';
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
import { clusterClient, clusterNameProblem, type HubContext } from './context.ts';
import { ClusterCsrApprovingReconciler, clusterCsrSelector } from './csr-approval.ts';
import { ManagedClusterDeletionReconciler } from './deletion.ts';
import { HubEventRecorder } from './events.ts';
import { ManagedClusterLeaseReconciler } from './lease.ts';
import { type CertificateSigningRequest, certificateSigningRequestResource } from './resources.ts';
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
    events: new HubEventRecorder(kubeconfig, log.child({ component: 'events' })),
    log,
  };
  // Shared by several controllers: started (and stopped) here, not by any one of them.
  const shared = [ctx.clusterInformer, ctx.leaseInformer];
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
    informers: [ctx.clusterInformer],
    workers: 4,
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
    events: ctx.events,
    log: log.child({ controller: 'csr-approving' }),
  });
  // One worker: CSRs are rare, and approving them in arrival order keeps the log easy to follow.
  run('csr-approving', { informers: [csrInformer], reconcile: (name) => approver.reconcile(name) });

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
