// Recording core/v1 Kubernetes Events about an object, best effort: what `kubectl describe` and
// `kubectl get events` show of what a controller did. One recorder per component (its `source` and
// `reportingComponent`); a failed write is logged and never fails the caller's reconcile. Not
// client-go's EventRecorder (no aggregation or rate limiting): callers that can emit many events in
// a pass bound their own count.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { coreEventResource } from './kinds.ts';
import { ResourceClient } from './resources.ts';
import type { KubeObject } from './types.ts';

/** The object an event is about; `namespace` '' for a cluster-scoped object. */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid?: string;
}

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  private readonly events: ResourceClient<KubeObject>;
  private readonly component: string;
  private readonly log: Logger;
  private readonly instance = hostname();

  constructor(kubeconfig: KubeConfig, component: string, log: Logger) {
    this.events = new ResourceClient<KubeObject>(kubeconfig, coreEventResource);
    this.component = component;
    this.log = log;
  }

  /** Records one event in `namespace` about `object`; never throws. */
  async record(
    namespace: string,
    object: InvolvedObject,
    reason: string,
    message: string,
    type: EventType = 'Normal',
  ): Promise<void> {
    const now = new Date().toISOString();
    const event = {
      metadata: { name: `${object.name}.${randomBytes(8).toString('hex')}`, namespace },
      involvedObject: object,
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.component },
      reportingComponent: this.component,
      reportingInstance: this.instance,
    } as KubeObject;
    try {
      await this.events.create(event);
    } catch (err) {
      this.log.warn({ reason, object: object.name, err: errorMessage(err) }, 'cannot record an event');
    }
  }
}
