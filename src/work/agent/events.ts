// Kubernetes Events the work agent records about what it did to the managed cluster (library-go's
// `<Kind>Created` / `<Kind>Updated` when an apply created or replaced an object, `ResourceDeleted`
// when it removed one). Where OCM's work agent records them: on the managed cluster, in the agent's
// own namespace (open-cluster-management-agent), about the agent itself — library-go's controller
// reference, which falls back to the agent's Namespace when it does not run in a pod (as here).
// So the hub is never written for an event: no hub round trip and no hub RBAC for events. Best
// effort: a failure is logged, never fails a reconcile.
//
// Limits, as library-go's recorder (client-go's event correlator with its cluster-singleton
// options) bounds an agent that applies many works at once: a spam filter per event type lets a
// burst of `eventBurst` through and then `eventRefillPerSecond` a second; beyond that an event is
// dropped (counted in a debug log). At most `maxEventsPerWorkPerPass` are recorded per call site.
// Events are written in the background: at most `maxEventsInFlight` at once and `maxQueuedEvents`
// waiting, never buffered without bound.
import type { KubeConfig } from '@kubernetes/client-node';
import { agentNamespace as defaultAgentNamespace } from '../../api/index.ts';
import { EventRecorder, type EventType, type InvolvedObject } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

/** The event source OCM's work agent reports as. */
export const workAgentEventComponent = 'work-agent';
export const maxEventsPerWorkPerPass = 20;
/** Events being written at once: one, as client-go's broadcaster has one sink writer, so a burst
 * of events never competes with the applies for the managed apiserver. */
export const maxEventsInFlight = 1;
/** Events waiting to be written; more are dropped (client-go's broadcaster queues 1000). */
export const maxQueuedEvents = 1000;
/** library-go's RecommendedClusterSingletonCorrelatorOptions: burst 60, then one event a second. */
export const eventBurst = 60;
export const eventRefillPerSecond = 1;

/** The object the agent's events are about when it runs outside a pod: its namespace. */
export function agentEventObject(namespace: string): InvolvedObject {
  return { apiVersion: 'v1', kind: 'Namespace', name: namespace, namespace };
}

/** A token bucket: `burst` at once, then `perSecond`; `now` in ms. */
export class EventSpamFilter {
  private readonly burst: number;
  private readonly perSecond: number;
  private tokens: number;
  private at: number;

  constructor(burst = eventBurst, perSecond = eventRefillPerSecond, now = Date.now()) {
    this.burst = burst;
    this.perSecond = perSecond;
    this.tokens = burst;
    this.at = now;
  }

  /** Takes a token if there is one. */
  allow(now = Date.now()): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

type PendingEvent = () => Promise<void>;

export class WorkEventRecorder {
  private readonly recorder: EventRecorder;
  private readonly namespace: string;
  private readonly involved: InvolvedObject;
  private readonly log: Logger;
  private readonly filters = new Map<EventType, EventSpamFilter>();
  private readonly queue: PendingEvent[] = [];
  private inFlight = 0;
  private dropped = 0;
  private idleWaiters: Array<() => void> = [];

  /** `managedKubeConfig`: the managed cluster the events go to; `namespace`: the agent's. */
  constructor(managedKubeConfig: KubeConfig, log: Logger, namespace = defaultAgentNamespace) {
    this.recorder = new EventRecorder(managedKubeConfig, workAgentEventComponent, log);
    this.namespace = namespace;
    this.involved = agentEventObject(namespace);
    this.log = log;
  }

  /** Queue an event; never throws, never waits for the apiserver. */
  record(reason: string, message: string, type: EventType = 'Normal'): void {
    let filter = this.filters.get(type);
    if (!filter) {
      filter = new EventSpamFilter();
      this.filters.set(type, filter);
    }
    if (!filter.allow() || this.queue.length >= maxQueuedEvents) {
      if (this.dropped++ % 100 === 0) {
        this.log.debug({ dropped: this.dropped, reason }, 'event rate limit: events dropped');
      }
      return;
    }
    this.queue.push(() => this.recorder.record(this.namespace, this.involved, reason, message, type));
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
