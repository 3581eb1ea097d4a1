// Is this managed cluster's kube-apiserver healthy, which version is it, what do its nodes offer?
// The Available condition comes from `/livez` (client-node's Health, which falls back to /healthz
// where /livez does not exist), as OCM's agent does. One failed probe is noise: Available turns
// False only after `unavailableAfterFailures` failures in a row, and in between the condition on
// the hub is left as it is. Probes are spaced at least `minProbeIntervalMs` apart however often the
// status reconciler asks. Version and capacity are read only while the apiserver is healthy.
import { Health, type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { ManagedClusterCondition, ManagedClusterReason, type ResourceList } from '../../api/index.ts';
import { type ConditionUpdate, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { describeError } from './describe-error.ts';
import { type Node, nodeResource } from './kinds.ts';
import { sumResourceLists } from './quantity.ts';

export interface ManagedClusterHealth {
  /** the Available condition to report; undefined: leave the hub's as it is (failing, not for long yet) */
  available?: ConditionUpdate;
  /** `status.version.kubernetes` (gitVersion), when healthy */
  kubernetesVersion?: string;
  /** summed over nodes, when healthy; cpu and memory are always present ("0" without nodes) */
  capacity?: ResourceList;
  allocatable?: ResourceList;
}

export interface ManagedClusterProbeOptions {
  /** consecutive failed probes before Available turns False (default 3) */
  unavailableAfterFailures?: number;
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
  private failures = 0;
  private last?: { at: number; result: Promise<ManagedClusterHealth> };

  constructor(managed: KubeConfig, options: ManagedClusterProbeOptions) {
    this.health = new Health(managed);
    this.version = managed.makeApiClient(VersionApi);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.nodes = new ResourceClient<Node>(managed, nodeResource, { requestTimeoutMs: this.timeoutMs });
    this.unavailableAfterFailures = Math.max(1, options.unavailableAfterFailures ?? 3);
    this.minProbeIntervalMs = options.minProbeIntervalMs ?? 1000;
    this.log = options.log;
  }

  /** Consecutive failed probes so far. */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** The latest health, probing again unless the last probe is recent. */
  check(): Promise<ManagedClusterHealth> {
    if (this.last && Date.now() - this.last.at < this.minProbeIntervalMs) return this.last.result;
    const result = this.probe();
    this.last = { at: Date.now(), result };
    return result;
  }

  private async probe(): Promise<ManagedClusterHealth> {
    let problem: string | undefined;
    try {
      const live = await this.health.livez({ signal: AbortSignal.timeout(this.timeoutMs) });
      if (!live) problem = '/livez and /healthz did not answer 200';
    } catch (err) {
      problem = describeError(err);
    }
    if (problem !== undefined) {
      this.failures++;
      this.log.warn({ failures: this.failures, problem }, 'managed cluster kube-apiserver probe failed');
      if (this.failures < this.unavailableAfterFailures) return {};
      return {
        available: {
          type: ManagedClusterCondition.Available,
          status: 'False',
          reason: ManagedClusterReason.ManagedClusterKubeAPIServerUnavailable,
          message: `The kube-apiserver is not ok: ${problem}`,
        },
      };
    }
    if (this.failures > 0) this.log.info({ after: this.failures }, 'managed cluster kube-apiserver is back');
    this.failures = 0;
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
