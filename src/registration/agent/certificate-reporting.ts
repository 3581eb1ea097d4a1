// What the hub learns about the agent's client certificate, where OCM's registration agent reports
// it: condition ClusterCertificateRotated on its ManagedCluster (True / ClientCertificateUpdated
// with the new validity after a rotation; False / ClientCertificateUpdateFailed when the CSR limit
// halts one), and Kubernetes Events (events.k8s.io/v1, reporting controller `klusterlet-agent`) in
// the cluster namespace about the ManagedCluster: ClientCertificateCreated,
// CertificateRotationStarted, ClientCertificateCreationHalted. Reports are best effort: a failure is
// logged and never fails the credential work. The cluster namespace and the agent's right to write
// events in it come with the hub's acceptance, which usually follows the first certificate: events
// are held (at most maxHeldEvents) until the agent has seen HubAccepted, then sent, instead of
// being refused. Owns only the ClusterCertificateRotated entry of the
// status conditions (its own field manager), never Joined / Available.
import { randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { clusterApiGroup, type ManagedCluster, managedClusterResource } from '../../api/index.ts';
import {
  type ConditionUpdate,
  eventResource,
  findCondition,
  formatMicroTime,
  type KubeObject,
  ResourceClient,
  setCondition,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { describeError } from './describe-error.ts';

/** OCM's condition type and reasons for the agent's client certificate. */
export const ClusterCertificateRotatedCondition = 'ClusterCertificateRotated';
export const CertificateRotationReason = {
  Updated: 'ClientCertificateUpdated',
  UpdateFailed: 'ClientCertificateUpdateFailed',
} as const;

/** Reasons of the events the agent records on the hub about its certificate (OCM's). */
export const CertificateEventReason = {
  Created: 'ClientCertificateCreated',
  RotationStarted: 'CertificateRotationStarted',
  CreationHalted: 'ClientCertificateCreationHalted',
} as const;

/** reportingController of the agent's hub events (OCM's hub event recorder name). */
export const hubEventReportingController = 'klusterlet-agent';

/** Field manager of the ClusterCertificateRotated condition (apart from the status reconciler's). */
export const certificateConditionFieldManager = 'registration-agent-client-certificate';

/** A time as Go's time.Time prints it in OCM's messages: 2025-05-20 08:47:59 +0000 UTC. */
export function goTimeString(date: Date): string {
  return `${date
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, '')} +0000 UTC`;
}

/** A duration as Go's time.Duration prints it, rounded to seconds: 1h2m3s, 45s, 0s. */
export function goDurationString(ms: number): string {
  let s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** The condition OCM's agent sets once a rotated certificate is stored. */
export function certificateRotatedCondition(notBefore: Date, notAfter: Date): ConditionUpdate {
  return {
    type: ClusterCertificateRotatedCondition,
    status: 'True',
    reason: CertificateRotationReason.Updated,
    message: `client certificate rotated starting from ${goTimeString(notBefore)} to ${goTimeString(notAfter)}`,
  };
}

/** OCM's controller names, which its event messages carry. */
export const certificateControllerName = {
  bootstrap: (cluster: string) => `BootstrapController@cluster:${cluster}`,
  rotation: (cluster: string) => `RegisterController@cluster:${cluster}`,
};

function eventName(object: string, now: Date): string {
  const nanos = BigInt(now.getTime()) * 1_000_000n + BigInt(randomInt(1_000_000));
  return `${object}.${nanos.toString(16)}`;
}

/** Events held while the cluster is not known to be accepted; older ones are dropped beyond it. */
export const maxHeldEvents = 10;

interface HeldEvent {
  hub: KubeConfig;
  reason: string;
  note: string;
  type: 'Normal' | 'Warning';
  at: Date;
}

/** Reports about one cluster's certificate, made with a hub credential of that cluster. */
export class CertificateReporter {
  private readonly instance = `${hubEventReportingController}-${hostname()}`;
  private readonly clusterName: string;
  private readonly log: Logger;
  private accepted = false;
  private held: HeldEvent[] = [];
  private sending: Promise<void> = Promise.resolve();

  constructor(clusterName: string, log: Logger) {
    this.clusterName = clusterName;
    this.log = log;
  }

  /** Set ClusterCertificateRotated on the ManagedCluster (lastTransitionTime moves only on a status change). */
  async setCondition(hub: KubeConfig, update: ConditionUpdate): Promise<void> {
    try {
      const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
      const cluster = await clusters.get(this.clusterName);
      if (!cluster) return;
      const existing = findCondition(cluster.status?.conditions, ClusterCertificateRotatedCondition);
      const [condition] = setCondition(existing ? [existing] : [], update);
      await clusters.applyStatus(
        { metadata: { name: this.clusterName }, status: { conditions: condition ? [condition] : [] } },
        { fieldManager: certificateConditionFieldManager, force: true },
      );
    } catch (err) {
      this.log.warn(
        { err: describeError(err) },
        `cannot set ${ClusterCertificateRotatedCondition} on the hub`,
      );
    }
  }

  /** The agent has seen HubAccepted on its ManagedCluster: send the held events (once). */
  hubAccepted(): void {
    if (this.accepted) return;
    this.accepted = true;
    const held = this.held;
    this.held = [];
    this.sending = this.sending.then(async () => {
      for (const e of held) await this.send(e);
    });
  }

  /** Resolves when held events handed over by hubAccepted() have been sent (or failed). */
  idle(): Promise<void> {
    return this.sending;
  }

  /**
   * Record an event about the ManagedCluster in the cluster namespace on the hub; held until the
   * cluster is known to be accepted.
   */
  async event(
    hub: KubeConfig,
    reason: string,
    note: string,
    type: 'Normal' | 'Warning' = 'Normal',
  ): Promise<void> {
    const event = { hub, reason, note, type, at: new Date() };
    if (!this.accepted) {
      this.held.push(event);
      if (this.held.length > maxHeldEvents) this.held.shift();
      this.log.debug({ reason }, 'event held until the hub accepts the cluster');
      return;
    }
    await this.send(event);
  }

  private async send({ hub, reason, note, type, at: now }: HeldEvent): Promise<void> {
    try {
      const events = new ResourceClient<KubeObject>(hub, eventResource);
      await events.create({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        // client-go's naming: <object>.<unix nanoseconds in hex>, plus a little randomness
        metadata: { name: eventName(this.clusterName, now), namespace: this.clusterName },
        eventTime: formatMicroTime(now),
        reportingController: hubEventReportingController,
        reportingInstance: this.instance,
        action: reason,
        reason,
        type,
        note,
        regarding: {
          apiVersion: `${clusterApiGroup}/v1`,
          kind: 'ManagedCluster',
          name: this.clusterName,
          namespace: this.clusterName,
        },
      } as KubeObject);
    } catch (err) {
      this.log.warn({ err: describeError(err), reason }, 'cannot record an event on the hub');
    }
  }
}
