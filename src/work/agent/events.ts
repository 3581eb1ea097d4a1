// Kubernetes Events the work agent records on the hub, in its cluster namespace, about the
// ManifestWork concerned — where OCM's work agent emits them (ResourceDeleted when it removes an
// applied resource) and where `kubectl describe manifestwork` shows them. Needs only `create` on
// events in the cluster namespace, which the hub grants the work agent. Best effort: a failure is
// logged, never fails a reconcile. At most `maxEventsPerWorkPerPass` are written per call site so
// a work with many resources cannot flood the hub.
//
// Events are written in the background, as client-go's broadcaster does: a reconcile hands its
// events over and goes on, so an event is never one more hub round trip on the apply path. At most
// `maxEventsInFlight` are written at once and `maxQueuedEvents` wait; beyond that an event is
// dropped (and counted in a warning), never buffered without bound.
import type { KubeConfig } from '@kubernetes/client-node';
import { apiVersionOf, type ManifestWork, manifestWorkResource } from '../../api/index.ts';
import { EventRecorder } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

/** The event source OCM's work agent reports as. */
export const workAgentEventComponent = 'work-agent';
export const maxEventsPerWorkPerPass = 20;
/** Events being written to the hub at once. */
export const maxEventsInFlight = 4;
/** Events waiting to be written; more are dropped (client-go's broadcaster queues 1000). */
export const maxQueuedEvents = 1000;

type PendingEvent = () => Promise<void>;

export class WorkEventRecorder {
  private readonly recorder: EventRecorder;
  private readonly clusterName: string;
  private readonly log: Logger;
  private readonly queue: PendingEvent[] = [];
  private inFlight = 0;
  private dropped = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(hubKubeConfig: KubeConfig, clusterName: string, log: Logger) {
    this.recorder = new EventRecorder(hubKubeConfig, workAgentEventComponent, log);
    this.clusterName = clusterName;
    this.log = log;
  }

  /** Queue an event about `work`; never throws, never waits for the hub. */
  record(work: ManifestWork, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal'): void {
    const involved = {
      apiVersion: apiVersionOf(manifestWorkResource),
      kind: manifestWorkResource.kind,
      name: work.metadata.name ?? '',
      namespace: this.clusterName,
      uid: work.metadata.uid,
    };
    if (this.queue.length >= maxQueuedEvents) {
      if (this.dropped++ % 100 === 0) {
        this.log.warn(
          { dropped: this.dropped, reason, work: involved.name },
          'event queue full: events dropped',
        );
      }
      return;
    }
    this.queue.push(() => this.recorder.record(this.clusterName, involved, reason, message, type));
    this.pump();
  }

  /** Resolves once every queued event was written (or failed); for stop() and tests. */
  flush(): Promise<void> {
    if (this.inFlight === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.inFlight < maxEventsInFlight && this.queue.length > 0) {
      const write = this.queue.shift() as PendingEvent;
      this.inFlight++;
      void write()
        .catch(() => undefined)
        .finally(() => {
          this.inFlight--;
          this.pump();
          if (this.inFlight === 0 && this.queue.length === 0) {
            const waiters = this.idleWaiters;
            this.idleWaiters = [];
            for (const w of waiters) w();
          }
        });
    }
  }
}
