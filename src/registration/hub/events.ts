// Kubernetes Events the registration hub records where OCM's hub registration controllers emit
// them (ManagedClusterAccepted, ManagedClusterDenied, ManagedClusterCSRAutoApproved,
// ManagedClusterClockSyncedConditionUpdated), so `kubectl describe managedcluster X` and
// `kubectl get events` show what the hub did. OCM records them against its controller Deployment;
// tether records them against the object they are about (the ManagedCluster or the CSR), which is
// where a kubectl user looks. Cluster-scoped objects' events live in namespace `default`.
// Events are best effort: a failure is logged and never fails a reconcile.
import type { KubeConfig } from '@kubernetes/client-node';
import { EventRecorder } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { hubEventComponent } from './resources.ts';

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
  private readonly recorder: EventRecorder;

  constructor(kubeconfig: KubeConfig, log: Logger) {
    this.recorder = new EventRecorder(kubeconfig, hubEventComponent, log);
  }

  /** Record a Normal (or Warning) event about a cluster-scoped object; never throws. */
  record(subject: EventSubject, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal') {
    return this.recorder.record(
      clusterScopedEventNamespace,
      { ...subject, namespace: '' },
      reason,
      message,
      type,
    );
  }
}
