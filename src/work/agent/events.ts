// Kubernetes Events the work agent records on the hub, in its cluster namespace, about the
// ManifestWork concerned — where OCM's work agent emits them (ResourceDeleted when it removes an
// applied resource) and where `kubectl describe manifestwork` shows them. Needs only `create` on
// events in the cluster namespace, which the hub grants the work agent. Best effort: a failure is
// logged, never fails a reconcile. At most `maxEventsPerWorkPerPass` are written per call site so
// a work with many resources cannot flood the hub.
import type { KubeConfig } from '@kubernetes/client-node';
import { apiVersionOf, type ManifestWork, manifestWorkResource } from '../../api/index.ts';
import { EventRecorder } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

/** The event source OCM's work agent reports as. */
export const workAgentEventComponent = 'work-agent';
export const maxEventsPerWorkPerPass = 20;

export class WorkEventRecorder {
  private readonly recorder: EventRecorder;
  private readonly clusterName: string;

  constructor(hubKubeConfig: KubeConfig, clusterName: string, log: Logger) {
    this.recorder = new EventRecorder(hubKubeConfig, workAgentEventComponent, log);
    this.clusterName = clusterName;
  }

  /** Record an event about `work`; never throws. */
  record(work: ManifestWork, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal') {
    const involved = {
      apiVersion: apiVersionOf(manifestWorkResource),
      kind: manifestWorkResource.kind,
      name: work.metadata.name ?? '',
      namespace: this.clusterName,
      uid: work.metadata.uid,
    };
    return this.recorder.record(this.clusterName, involved, reason, message, type);
  }
}
