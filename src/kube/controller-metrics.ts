// Prometheus series of every controller's work queue and reconciles in this process, under the
// names controller-runtime and client-go's workqueue use, so dashboards and alerts written for OCM's
// Go controllers read tether's too:
//   workqueue_depth{name}                         keys waiting to run (read at scrape time)
//   workqueue_adds_total{name}                    keys added
//   workqueue_retries_total{name}                 keys put back after a failed reconcile
//   controller_runtime_reconcile_total{controller,result}   result: success | error | requeue_after
//   controller_runtime_reconcile_errors_total{controller}
//   controller_runtime_reconcile_time_seconds{controller}   histogram
//   controller_runtime_active_workers{controller}           reconciles running now
// One registry per process, as controller-runtime's: controllers are built deep inside components,
// and a scrape of `tether hub` must see all of them. Two queues of one name (two replicas in one
// test process) add up. Owns the series only; the queue reports to it through WorkQueueObserver.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What a work queue tells its metrics. */
export interface WorkQueueObserver {
  added(): void;
  retried(): void;
  /** a reconcile ended after `seconds`, with this result */
  reconciled(seconds: number, result: 'success' | 'error' | 'requeue_after'): void;
  /** a reconcile started (+1) or ended (-1) */
  active(delta: number): void;
}

/** The process-wide registry of controller and work-queue series. */
export const controllerMetricsRegistry = new Registry();

const depthSources = new Map<object, { name: string; depth: () => number }>();

new Gauge({
  name: 'workqueue_depth',
  help: 'Keys waiting in a controller work queue',
  labelNames: ['name'],
  registers: [controllerMetricsRegistry],
  collect() {
    this.reset();
    const totals = new Map<string, number>();
    for (const { name, depth } of depthSources.values()) totals.set(name, (totals.get(name) ?? 0) + depth());
    for (const [name, depth] of totals) this.set({ name }, depth);
  },
});

const adds = new Counter({
  name: 'workqueue_adds_total',
  help: 'Keys added to a controller work queue',
  labelNames: ['name'],
  registers: [controllerMetricsRegistry],
});

const retries = new Counter({
  name: 'workqueue_retries_total',
  help: 'Keys put back in a work queue after a failed reconcile',
  labelNames: ['name'],
  registers: [controllerMetricsRegistry],
});

const reconciles = new Counter({
  name: 'controller_runtime_reconcile_total',
  help: 'Reconciles per controller and result (success, error, requeue_after)',
  labelNames: ['controller', 'result'],
  registers: [controllerMetricsRegistry],
});

const reconcileErrors = new Counter({
  name: 'controller_runtime_reconcile_errors_total',
  help: 'Reconciles that failed, per controller',
  labelNames: ['controller'],
  registers: [controllerMetricsRegistry],
});

const reconcileTime = new Histogram({
  name: 'controller_runtime_reconcile_time_seconds',
  help: 'Time a reconcile took, per controller',
  labelNames: ['controller'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [controllerMetricsRegistry],
});

const activeWorkers = new Gauge({
  name: 'controller_runtime_active_workers',
  help: 'Reconciles running now, per controller',
  labelNames: ['controller'],
  registers: [controllerMetricsRegistry],
});

/**
 * The observer a queue named `name` reports to; `depth` is read at every scrape until `release()`
 * (call it when the queue shuts down, so a stopped controller's depth is not reported forever).
 */
export function workQueueObserver(
  name: string,
  depth: () => number,
): WorkQueueObserver & { release(): void } {
  const token = {};
  depthSources.set(token, { name, depth });
  return {
    added: () => adds.inc({ name }),
    retried: () => retries.inc({ name }),
    reconciled(seconds, result) {
      reconciles.inc({ controller: name, result });
      if (result === 'error') reconcileErrors.inc({ controller: name });
      reconcileTime.observe({ controller: name }, seconds);
    },
    active: (delta) => activeWorkers.inc({ controller: name }, delta),
    release: () => {
      depthSources.delete(token);
    },
  };
}
