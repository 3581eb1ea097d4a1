// Kubernetes Events the work agent records on the hub, in its cluster namespace, about the
// ManifestWork concerned — where OCM's work agent emits them (ResourceDeleted when it removes an
// applied resource) and where `kubectl describe manifestwork` shows them. Needs only `create` on
// events in the cluster namespace, which the hub grants the work agent. Best effort: a failure is
// logged, never fails a reconcile. At most `maxEventsPerWorkPerPass` are written per call site so
// a work with many resources cannot flood the hub.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { apiVersionOf, type ManifestWork, manifestWorkResource } from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import { type KubeObject, ResourceClient, type ResourceDescriptor } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

const eventResource: ResourceDescriptor = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};

/** The event source OCM's work agent reports as. */
export const workAgentEventComponent = 'work-agent';
export const maxEventsPerWorkPerPass = 20;

export class WorkEventRecorder {
  private readonly events: ResourceClient<KubeObject>;
  private readonly clusterName: string;
  private readonly log: Logger;
  private readonly instance = hostname();

  constructor(hubKubeConfig: KubeConfig, clusterName: string, log: Logger) {
    this.events = new ResourceClient<KubeObject>(hubKubeConfig, eventResource);
    this.clusterName = clusterName;
    this.log = log;
  }

  /** Record an event about `work`; never throws. */
  async record(
    work: ManifestWork,
    reason: string,
    message: string,
    type: 'Normal' | 'Warning' = 'Normal',
  ): Promise<void> {
    const name = work.metadata.name ?? '';
    const now = new Date().toISOString();
    const event = {
      metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace: this.clusterName },
      involvedObject: {
        apiVersion: apiVersionOf(manifestWorkResource),
        kind: manifestWorkResource.kind,
        name,
        namespace: this.clusterName,
        uid: work.metadata.uid,
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: workAgentEventComponent },
      reportingComponent: workAgentEventComponent,
      reportingInstance: this.instance,
    } as KubeObject;
    try {
      await this.events.create(event);
    } catch (err) {
      this.log.warn({ reason, work: name, err: errorMessage(err) }, 'cannot record an event');
    }
  }
}
