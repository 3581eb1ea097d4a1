// ManifestWork garbage collection by `spec.deleteOption.ttlSecondsAfterFinished` (hub side, as OCM's
// hub work controller does it): a work whose Complete condition (aggregated by the agent from its
// Complete condition rules) has been True for that many seconds is deleted; the usual finalizer
// path then removes what it applied. Works a ManifestWorkReplicaSet owns are left to it. Without
// a TTL, or without Complete, nothing happens. Owns no objects besides deleting expired works.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ManifestWork,
  ManifestWorkCondition,
  manifestWorkReplicaSetLabel,
  manifestWorkResource,
} from '../../api/index.ts';
import {
  findCondition,
  Informer,
  isNotFound,
  type KubeObject,
  type ReconcileResult,
  ResourceClient,
  runController,
  splitKey,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';

export interface WorkGarbageCollectorOptions {
  /** hub admin (or a role with list/watch/delete on manifestworks in every namespace) */
  hubKubeConfig: KubeConfig;
  log?: Logger;
}

export interface WorkGarbageCollector {
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** When `work` is due for deletion (ms since epoch), or undefined when it never is. */
export function expiryOf(work: ManifestWork): number | undefined {
  const ttl = work.spec?.deleteOption?.ttlSecondsAfterFinished;
  if (ttl === undefined || ttl === null || ttl < 0) return undefined;
  if (work.metadata.labels?.[manifestWorkReplicaSetLabel]) return undefined;
  const complete = findCondition(work.status?.conditions, ManifestWorkCondition.Complete);
  if (complete?.status !== 'True') return undefined;
  const since = Date.parse(complete.lastTransitionTime);
  return Number.isNaN(since) ? undefined : since + ttl * 1000;
}

/** Start deleting ManifestWorks whose TTL after completion ran out, in every namespace. */
export function startWorkGarbageCollector(opts: WorkGarbageCollectorOptions): WorkGarbageCollector {
  const log = opts.log ?? logger('work-gc');
  const works = new ResourceClient<ManifestWork>(opts.hubKubeConfig, manifestWorkResource);
  const informer = new Informer<ManifestWork>(works, { log });
  const reconcile = async (key: string): Promise<ReconcileResult | undefined> => {
    const { namespace, name } = splitKey(key);
    const work = informer.getByName(name, namespace);
    if (!work || work.metadata.deletionTimestamp) return undefined;
    const due = expiryOf(work);
    if (due === undefined) return undefined;
    const wait = due - Date.now();
    if (wait > 0) return { requeueAfterMs: wait };
    try {
      await works.delete(name, namespace, { preconditions: { uid: work.metadata.uid } });
      log.info({ namespace, work: name }, 'ttlSecondsAfterFinished elapsed since Complete: deleted the work');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return undefined;
  };
  const controller = runController({
    name: 'manifestwork-garbage-collector',
    informers: [informer as unknown as Informer<KubeObject>],
    reconcile,
    log,
  });
  return {
    ready: controller.ready,
    stop: () => controller.stop(),
  };
}
