// A named work queue reports controller-runtime's series to the process registry: depth while keys
// wait, adds, reconcile results (success / error / requeue_after), errors, latency and retries; a
// queue that shut down no longer reports a depth.
import { afterEach, describe, expect, it } from 'vitest';
import { controllerMetricsRegistry } from '../../src/kube/controller-metrics.ts';
import { WorkQueue } from '../../src/kube/workqueue.ts';
import { pollUntil } from '../../src/wait.ts';

const queues: WorkQueue[] = [];
afterEach(async () => {
  await Promise.all(queues.splice(0).map((q) => q.shutdown()));
});

/** The value of one series (name + exact labels) in the registry, 0 when absent. */
async function series(name: string, labels: Record<string, string>): Promise<number> {
  const metric = await controllerMetricsRegistry.getSingleMetric(name)?.get();
  const match = metric?.values.find(
    (v) =>
      (v as { metricName?: string }).metricName === undefined &&
      Object.entries(labels).every(([k, value]) => v.labels[k] === value),
  );
  return match?.value ?? 0;
}

let nextName = 0;
const uniqueQueueName = () => `metrics-test-${process.pid}-${nextName++}`;

describe('controller metrics', () => {
  it('count adds and reconcile results per controller, with latency and retries', async () => {
    const name = uniqueQueueName();
    let fail = true;
    const queue = new WorkQueue(
      async (key) => {
        if (key === 'flaky' && fail) {
          fail = false;
          throw new Error('first try fails');
        }
        return key === 'again' ? { requeueAfterMs: 60_000 } : undefined;
      },
      { name, baseDelayMs: 1 },
    );
    queues.push(queue);
    queue.start();
    queue.add('ok');
    queue.add('flaky');
    queue.add('again');
    await pollUntil(
      async () =>
        (await series('controller_runtime_reconcile_total', { controller: name, result: 'success' })) === 2,
      {
        timeoutMs: 5_000,
        description: 'two successful reconciles',
      },
    );
    expect(await series('controller_runtime_reconcile_total', { controller: name, result: 'error' })).toBe(1);
    expect(
      await series('controller_runtime_reconcile_total', { controller: name, result: 'requeue_after' }),
    ).toBe(1);
    expect(await series('controller_runtime_reconcile_errors_total', { controller: name })).toBe(1);
    expect(await series('workqueue_retries_total', { name })).toBe(1);
    expect(await series('workqueue_adds_total', { name })).toBe(4);
    const histogram = await controllerMetricsRegistry
      .getSingleMetric('controller_runtime_reconcile_time_seconds')
      ?.get();
    const count = histogram?.values.find(
      (v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels['controller'] === name,
    );
    expect(count?.value).toBe(4);
    expect(await series('controller_runtime_active_workers', { controller: name })).toBe(0);
  });

  it('report the depth of keys waiting, and stop reporting a queue that shut down', async () => {
    const name = uniqueQueueName();
    const queue = new WorkQueue(async () => undefined, { name });
    queues.push(queue);
    for (const key of ['a', 'b', 'c']) queue.add(key);
    expect(await series('workqueue_depth', { name })).toBe(3);
    const text = await controllerMetricsRegistry.metrics();
    expect(text).toContain(`workqueue_depth{name="${name}"} 3`);
    await queue.shutdown();
    expect(await controllerMetricsRegistry.metrics()).not.toContain(`workqueue_depth{name="${name}"}`);
  });

  it('leave an unnamed queue out', async () => {
    const queue = new WorkQueue(async () => undefined);
    queues.push(queue);
    queue.add('x');
    const text = await controllerMetricsRegistry.metrics();
    expect(text).not.toContain('name="default"');
  });
});
