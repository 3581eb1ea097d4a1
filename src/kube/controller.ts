// A controller is informers → work queue → reconcile(key) (DESIGN.md "Controller shape"). Every
// add/update/delete (and every resync) of a watched object turns into keys through keyFunc; the
// queue deduplicates them, never runs one key twice at once, retries failures with backoff and
// honours requeueAfterMs. Workers start only once every informer has synced, so reconcile can
// trust the caches it reads. The controller starts the informers that were not started yet and
// stops exactly those on stop(); share an informer between controllers by starting it first.
import { TimeoutError } from '../errors.ts';
import { type Logger, logger } from '../log.ts';
import { type Informer, objectKey } from './informer.ts';
import type { KubeObject } from './types.ts';
import { type ReconcileFunc, WorkQueue, type WorkQueueOptions } from './workqueue.ts';

/** Keys to reconcile for an object seen by `informer`; undefined or [] for none. */
export type KeyFunc = (
  obj: KubeObject,
  informer: Informer<KubeObject>,
) => string | readonly string[] | undefined;

export interface ControllerOptions {
  /** for logs, e.g. "managedcluster-lease" */
  name: string;
  informers: readonly Informer<KubeObject>[];
  /** default: the object's own "namespace/name" */
  keyFunc?: KeyFunc;
  reconcile: ReconcileFunc;
  /** concurrent reconciles of different keys (default 1) */
  workers?: number;
  /** backoff and length limits of the queue */
  queue?: Pick<WorkQueueOptions, 'baseDelayMs' | 'maxDelayMs' | 'maxLength'>;
  /** log a warning each time the caches take longer than this to sync (default 30 s) */
  syncWarnAfterMs?: number;
  log?: Logger;
}

export interface Controller {
  readonly name: string;
  /** add keys from elsewhere (e.g. a timer, another cache) */
  readonly queue: WorkQueue;
  /** true once the caches synced and workers run; false when stopped before that */
  readonly ready: Promise<boolean>;
  /** stop: no new keys, wait for running reconciles, stop the informers this controller started */
  stop(): Promise<void>;
}

/** Wire informers to a work queue and start reconciling once every cache has synced. */
export function runController(options: ControllerOptions): Controller {
  const log = options.log ?? logger('controller', { controller: options.name });
  const keyFunc: KeyFunc = options.keyFunc ?? ((obj) => objectKey(obj));
  const queue = new WorkQueue(options.reconcile, {
    ...options.queue,
    name: options.name,
    workers: options.workers ?? 1,
    log,
  });
  let stopped = false;
  const stopping = new AbortController();

  const enqueue = (obj: KubeObject, informer: Informer<KubeObject>) => {
    let keys: string | readonly string[] | undefined;
    try {
      keys = keyFunc(obj, informer);
    } catch (err) {
      log.error({ err, object: objectKey(obj) }, 'keyFunc threw');
      return;
    }
    if (keys === undefined) return;
    for (const key of typeof keys === 'string' ? [keys] : keys) {
      if (key) queue.add(key);
    }
  };
  const removeHandlers = options.informers.map((informer) =>
    informer.addHandlers({
      add: (obj) => enqueue(obj, informer),
      update: (_old, obj) => enqueue(obj, informer),
      delete: (obj) => enqueue(obj, informer),
    }),
  );
  // Keys that failed during an outage of an informer's apiserver run again as soon as it is back.
  const stopRetryingOnRecovery = options.informers.map((informer) =>
    informer.onServerRecovered(() => {
      const retried = queue.retryBackedOff();
      if (retried > 0) log.info({ retried }, 'apiserver reachable again: retrying failed keys now');
    }),
  );
  const ownInformers = options.informers.filter((informer) => !informer.isStarted);
  for (const informer of ownInformers) informer.start();

  const ready = (async () => {
    const warnAfterMs = options.syncWarnAfterMs ?? 30_000;
    for (const informer of options.informers) {
      while (!stopped && !informer.hasSynced()) {
        if (informer.isStopped) {
          log.error('an informer was stopped before it synced: the controller cannot start');
          return false;
        }
        try {
          await informer.waitForSync(warnAfterMs, stopping.signal);
        } catch (err) {
          if (!(err instanceof TimeoutError)) throw err;
          if (!stopped && !informer.isStopped)
            log.warn({ waitedMs: warnAfterMs }, 'caches not synced yet: workers wait');
        }
      }
    }
    if (stopped) return false;
    queue.start();
    log.info({ workers: options.workers ?? 1 }, 'controller started');
    return true;
  })().catch((err: unknown) => {
    log.error({ err }, 'controller could not start');
    return false;
  });

  return {
    name: options.name,
    queue,
    ready,
    async stop() {
      if (stopped) return;
      stopped = true;
      stopping.abort();
      for (const remove of [...removeHandlers, ...stopRetryingOnRecovery]) remove();
      await Promise.all(ownInformers.map((informer) => informer.stop()));
      await ready;
      await queue.shutdown();
      log.info('controller stopped');
    },
  };
}
