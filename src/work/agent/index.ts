// The work agent (OCM work/v1, managed side): watches the ManifestWorks in its cluster namespace
// on the hub and applies them to the managed cluster, keeping an AppliedManifestWork per work and
// reporting status back. Needs on the hub only what the hub grants a cluster in its namespace
// (manifestworks get/list/watch/update/patch, manifestworks/status); on the managed cluster it
// needs admin and create on subjectaccessreviews (works with spec.executor, see executor.ts). Its
// events go to the managed cluster, in its own namespace (events.ts), which it creates if missing.
// Public surface: startWorkAgent. Must not touch other namespaces on the hub.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type AppliedManifestWork,
  appliedManifestWorkResource,
  agentNamespace as defaultAgentNamespace,
  type ManifestWork,
  manifestWorkResource,
} from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import {
  Informer,
  isAlreadyExists,
  isForbidden,
  type KubeObject,
  namespaceResource,
  ResourceClient,
  runController,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { AgentBoundary } from './agent-boundary.ts';
import { AppliedWorkStore, ensureAppliedManifestWorkCrd, hubHashOf, workNameOf } from './applied-work.ts';
import { ManifestApplier } from './apply.ts';
import { ManagedClients } from './clients.ts';
import { ManagedDiscovery } from './discovery.ts';
import { WorkEventRecorder } from './events.ts';
import { ExecutorAuthorizer } from './executor.ts';
import { FeedbackWatcher } from './feedback-watch.ts';
import { WorkFinalizer } from './finalize.ts';
import { ManifestWorkReconciler } from './reconciler.ts';

export { appliedWorkName, hubHashOf } from './applied-work.ts';

export interface WorkAgentOptions {
  /** the managed cluster's name = its namespace on the hub */
  clusterName: string;
  /** recorded in each AppliedManifestWork; AppliedManifestWorks of other agents are left alone */
  agentId: string;
  /** the cluster's registration identity on the hub */
  hubKubeConfig: KubeConfig;
  /** admin on the managed cluster */
  managedKubeConfig: KubeConfig;
  /** concurrent reconciles of different works (default 4) */
  workers?: number;
  log?: Logger;
  /** how long an AppliedManifestWork whose ManifestWork vanished is kept (default 60 min) */
  appliedManifestWorkEvictionGracePeriodMs?: number;
  /** re-apply and refresh status (Available, feedback) this often (default 30 s) */
  statusSyncIntervalMs?: number;
  /** the agent's namespace, where its events go (default open-cluster-management-agent) */
  agentNamespace?: string;
  /**
   * the cluster that holds the agent's namespace: the managed cluster, or the hosting one in hosted
   * mode (default managedKubeConfig)
   */
  agentKubeConfig?: KubeConfig;
}

/** How often each work is applied again and its status (Available, feedback) refreshed by default. */
export const defaultStatusSyncIntervalMs = 30_000;

export interface WorkAgent {
  /** resolves once both caches synced and works are being reconciled */
  readonly ready: Promise<boolean>;
  /** the hub hash in this agent's AppliedManifestWork names */
  readonly hubHash: string;
  stop(): Promise<void>;
}

/** How long stop() waits for queued events. */
const eventFlushTimeoutMs = 5_000;

/**
 * The namespace the agent's events go to (the klusterlet creates it; an agent run by hand may not
 * have it). A hosted agent may not create namespaces on its hosting cluster (its Role is its own
 * namespace's): forbidden means "made by whoever installed it".
 */
async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  const namespaces = new ResourceClient<KubeObject>(kc, namespaceResource);
  try {
    await namespaces.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  } catch (err) {
    if (!isAlreadyExists(err) && !isForbidden(err)) throw err;
  }
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Start the work agent; resolves once the AppliedManifestWork CRD is there and the controller runs. */
export async function startWorkAgent(opts: WorkAgentOptions): Promise<WorkAgent> {
  if (!dnsLabel.test(opts.clusterName)) {
    throw new InvalidArgumentError(`cluster name "${opts.clusterName}" is not a DNS label`);
  }
  if (!opts.agentId) throw new InvalidArgumentError('agentId is empty');
  const hubServer = opts.hubKubeConfig.getCurrentCluster()?.server;
  if (!hubServer) throw new InvalidArgumentError('the hub kubeconfig has no current cluster');
  const log = opts.log ?? logger('work-agent', { cluster: opts.clusterName });
  const hubHash = hubHashOf(hubServer);

  const eventNamespace = opts.agentNamespace ?? defaultAgentNamespace;
  await Promise.all([
    ensureAppliedManifestWorkCrd(opts.managedKubeConfig, log),
    ensureNamespace(opts.agentKubeConfig ?? opts.managedKubeConfig, eventNamespace),
  ]);
  // Connections are shared process-wide by src/kube (dispatcher cache), so no per-agent pooling here.
  const hubKc = opts.hubKubeConfig;
  const managedKc = opts.managedKubeConfig;

  const works = new ResourceClient<ManifestWork>(hubKc, manifestWorkResource);
  const appliedClient = new ResourceClient<AppliedManifestWork>(
    opts.managedKubeConfig,
    appliedManifestWorkResource,
  );
  const workInformer = new Informer<ManifestWork>(works, { namespace: opts.clusterName, log });
  const appliedInformer = new Informer<AppliedManifestWork>(appliedClient, { log });
  const applied = new AppliedWorkStore(managedKc, hubHash, opts.agentId);
  const clients = new ManagedClients(managedKc);
  const events = new WorkEventRecorder(opts.agentKubeConfig ?? managedKc, log, eventNamespace);
  // Bound once the controller exists: a watched object's change queues its work.
  let enqueue: (work: string) => void = () => undefined;
  const feedbackWatcher = new FeedbackWatcher(clients, (work) => enqueue(work), log);
  const finalizer = new WorkFinalizer({
    events,
    works,
    clusterName: opts.clusterName,
    applied,
    clients,
    evictionGracePeriodMs: opts.appliedManifestWorkEvictionGracePeriodMs ?? 60 * 60_000,
    log,
  });
  const reconciler = new ManifestWorkReconciler({
    clusterName: opts.clusterName,
    works,
    workInformer,
    appliedInformer,
    applied,
    applier: new ManifestApplier(
      new ManagedDiscovery(managedKc),
      clients,
      new ExecutorAuthorizer(managedKc),
      new AgentBoundary(managedKc, hubHash),
    ),
    finalizer,
    clients,
    resyncIntervalMs: opts.statusSyncIntervalMs ?? defaultStatusSyncIntervalMs,
    log,
    events,
    feedbackWatcher,
  });

  // Both caches key by work name. AppliedManifestWorks count when they are this hub's and either
  // ours or standing for a work in our namespace (taken over from a previous agent ID).
  const keyFunc = (obj: KubeObject, informer: Informer<KubeObject>): string | undefined => {
    if (informer === (workInformer as unknown as Informer<KubeObject>)) return obj.metadata?.name;
    const name = workNameOf(obj.metadata?.name ?? '', hubHash);
    if (!name) return undefined;
    const agentID = (obj as AppliedManifestWork).spec?.agentID;
    if (agentID === opts.agentId || workInformer.getByName(name, opts.clusterName)) return name;
    return undefined;
  };
  const controller = runController({
    name: 'manifestwork-agent',
    informers: [workInformer, appliedInformer] as unknown as Informer<KubeObject>[],
    keyFunc,
    reconcile: reconciler.reconcile,
    workers: opts.workers ?? 4,
    queue: { baseDelayMs: 200, maxDelayMs: 30_000 },
    log,
  });
  enqueue = (work) => controller.queue.add(work);
  log.info({ hubHash, agentId: opts.agentId }, 'work agent started');
  return {
    ready: controller.ready,
    hubHash,
    async stop() {
      await controller.stop();
      await feedbackWatcher.stop();
      // Events still queued go out, but a hub that does not answer does not hold the stop up.
      await Promise.race([events.flush(), new Promise((r) => setTimeout(r, eventFlushTimeoutMs).unref())]);
      log.info('work agent stopped');
    },
  };
}
