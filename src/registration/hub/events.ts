// Kubernetes Events the registration hub records where OCM's hub registration controllers emit
// them (ManagedClusterAccepted, ManagedClusterDenied, ManagedClusterCSRAutoApproved,
// ManagedClusterClockSyncedConditionUpdated), so `kubectl describe managedcluster X` and
// `kubectl get events` show what the hub did. OCM records them against its controller Deployment;
// tether records them against the object they are about (the ManagedCluster or the CSR), which is
// where a kubectl user looks. Cluster-scoped objects' events live in namespace `default`.
// Events are best effort: a failure is logged and never fails a reconcile.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../../errors.ts';
import { type KubeObject, ResourceClient, type ResourceDescriptor } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { hubEventComponent } from './resources.ts';

const eventResource: ResourceDescriptor = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};

/** Namespace of the events about cluster-scoped objects (as kubectl looks them up). */
const clusterScopedEventNamespace = 'default';

/** The object an event is about. */
export interface EventSubject {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
}

export class HubEventRecorder {
  private readonly events: ResourceClient<KubeObject>;
  private readonly log: Logger;
  private readonly instance = hostname();

  constructor(kubeconfig: KubeConfig, log: Logger) {
    this.events = new ResourceClient<KubeObject>(kubeconfig, eventResource);
    this.log = log;
  }

  /** Record a Normal (or Warning) event about a cluster-scoped object; never throws. */
  async record(
    subject: EventSubject,
    reason: string,
    message: string,
    type: 'Normal' | 'Warning' = 'Normal',
  ): Promise<void> {
    const now = new Date().toISOString();
    const event = {
      metadata: {
        name: `${subject.name}.${randomBytes(8).toString('hex')}`,
        namespace: clusterScopedEventNamespace,
      },
      involvedObject: { ...subject, namespace: '' },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: hubEventComponent },
      reportingComponent: hubEventComponent,
      reportingInstance: this.instance,
    } as KubeObject;
    try {
      await this.events.create(event);
    } catch (err) {
      this.log.warn({ reason, object: subject.name, err: errorMessage(err) }, 'cannot record an event');
    }
  }
}
