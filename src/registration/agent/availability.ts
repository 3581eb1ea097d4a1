// Is this managed cluster's kube-apiserver healthy, which version is it, what do its nodes offer?
// The Available condition comes from `/livez` (client-node's Health, which falls back to /healthz
// where /livez does not exist), as OCM's agent does. A failed probe is retried at once, a second
// apart (`unavailableAfterFailures` attempts in all), so one dropped request is not an outage but a
// real one is reported within seconds of the check that first saw it. Between full checks (the
// status interval) a cheap health check runs every few seconds; healthChanged() says when its
// answer disagrees with what was last reported, so the status is reconciled then. Version and
// capacity are read only while the apiserver is healthy.
import { setTimeout as sleep } from 'node:timers/promises';
import { Health, type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { ManagedClusterCondition, ManagedClusterReason, type ResourceList } from '../../api/index.ts';
import { type ConditionUpdate, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { describeError } from './describe-error.ts';
import { type Node, nodeResource } from './kinds.ts';
import { sumResourceLists } from './quantity.ts';

export interface ManagedClusterHealth {
  /** the Available condition to report */
  available?: ConditionUpdate;
  /** `status.version.kubernetes` (gitVersion), when healthy */
  kubernetesVersion?: string;
  /** summed over nodes, when healthy; cpu and memory are always present ("0" without nodes) */
  capacity?: ResourceList;
  allocatable?: ResourceList;
}

export interface ManagedClusterProbeOptions {
  /** failed probes in a row, `retryIntervalMs` apart, before Available turns False (default 3) */
  unavailableAfterFailures?: number;
  /** between those probes (default 1 s) */
  retryIntervalMs?: number;
  /** a probe younger than this is reused (default 1 s) */
  minProbeIntervalMs?: number;
  /** per request (default 10 s) */
  timeoutMs?: number;
  log: Logger;
}

export class ManagedClusterProbe {
  private readonly health: Health;
  private readonly version: VersionApi;
  private readonly nodes: ResourceClient<Node>;
  private readonly unavailableAfterFailures: number;
  private readonly minProbeIntervalMs: number;
  private readonly timeoutMs: number;
  private readonly log: Logger;
  private readonly retryIntervalMs: number;
  private failures = 0;
  private last?: { at: number; result: Promise<ManagedClusterHealth> };
  /** what the last full check reported */
  private reported?: 'healthy' | 'unhealthy';

  constructor(managed: KubeConfig, options: ManagedClusterProbeOptions) {
    this.health = new Health(managed);
    this.version = managed.makeApiClient(VersionApi);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.nodes = new ResourceClient<Node>(managed, nodeResource, { requestTimeoutMs: this.timeoutMs });
    this.unavailableAfterFailures = Math.max(1, options.unavailableAfterFailures ?? 3);
    this.minProbeIntervalMs = options.minProbeIntervalMs ?? 1000;
    this.retryIntervalMs = options.retryIntervalMs ?? 1000;
    this.log = options.log;
  }

  /** The latest health, probing again unless the last probe is recent. */
  check(): Promise<ManagedClusterHealth> {
    if (this.last && Date.now() - this.last.at < this.minProbeIntervalMs) return this.last.result;
    const result = this.probe();
    this.last = { at: Date.now(), result };
    return result;
  }

  /**
   * A cheap /livez now: whether its answer differs from what the last full check reported (then
   * the caller reconciles the status, which runs a full check).
   */
  async healthChanged(): Promise<boolean> {
    if (!this.reported) return false;
    const ok = (await this.livezProblem()) === undefined;
    const changed = ok !== (this.reported === 'healthy');
    if (changed) this.last = undefined; // the next check() probes afresh
    return changed;
  }

  /** Undefined when /livez (or /healthz) answers 200, otherwise what went wrong. */
  private async livezProblem(): Promise<string | undefined> {
    try {
      const live = await this.health.livez({ signal: AbortSignal.timeout(this.timeoutMs) });
      return live ? undefined : '/livez and /healthz did not answer 200';
    } catch (err) {
      return describeError(err);
    }
  }

  private async probe(): Promise<ManagedClusterHealth> {
    let problem = await this.livezProblem();
    for (let attempt = 1; problem !== undefined; attempt++) {
      this.failures++;
      this.log.warn({ failures: this.failures, problem }, 'managed cluster kube-apiserver probe failed');
      if (attempt >= this.unavailableAfterFailures) {
        this.reported = 'unhealthy';
        return {
          available: {
            type: ManagedClusterCondition.Available,
            status: 'False',
            reason: ManagedClusterReason.ManagedClusterKubeAPIServerUnavailable,
            message: `The kube-apiserver is not ok: ${problem}`,
          },
        };
      }
      await sleep(this.retryIntervalMs);
      problem = await this.livezProblem();
    }
    if (this.failures > 0) this.log.info({ after: this.failures }, 'managed cluster kube-apiserver is back');
    this.failures = 0;
    this.reported = 'healthy';
    const [info, nodes] = await Promise.all([
      this.version.getCode(),
      this.nodes.list({ timeoutMs: this.timeoutMs }),
    ]);
    const schedulable = nodes.items.filter((n) => !n.spec?.unschedulable);
    const onInvalid = (resource: string, value: string) =>
      this.log.warn({ resource, value }, 'a node reports a quantity that does not parse: left out');
    return {
      available: {
        type: ManagedClusterCondition.Available,
        status: 'True',
        reason: ManagedClusterReason.ManagedClusterAvailable,
        message: 'Managed cluster is available',
      },
      kubernetesVersion: info.gitVersion,
      capacity: withCpuAndMemory(
        sumResourceLists(
          nodes.items.map((n) => n.status?.capacity),
          onInvalid,
        ),
      ),
      allocatable: withCpuAndMemory(
        sumResourceLists(
          schedulable.map((n) => n.status?.allocatable),
          onInvalid,
        ),
      ),
    };
  }
}

function withCpuAndMemory(list: Record<string, string>): ResourceList {
  return { cpu: '0', memory: '0', ...list };
}
