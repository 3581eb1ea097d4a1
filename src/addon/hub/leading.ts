// Running an add-on controller set only while this replica leads its Lease, or at once and alone
// without leader election: the one way the generic hub add-on manager (index.ts) and the SDK's
// AddonManager (one Lease per addon) campaign. The election itself is src/kube/leading.ts.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Leading, type RunningControllers, runWhileLeading } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

export interface AddonLeaderElectionOptions {
  /** the Lease's namespace (default: the caller's, open-cluster-management-hub) */
  namespace?: string;
  /** this replica, unique among replicas (default hostname + random suffix) */
  identity?: string;
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

/** What identifies this replica in the Leases it campaigns on. */
export function replicaIdentity(election: AddonLeaderElectionOptions | false | undefined): string {
  const named = election === false ? undefined : election?.identity;
  return named ?? `${hostname()}-${randomUUID().slice(0, 8)}`;
}

export interface LeadingOrAloneOptions {
  kubeconfig: KubeConfig;
  /** false: no election, start at once */
  election: AddonLeaderElectionOptions | false | undefined;
  /** the Lease, and its namespace unless the election names one */
  lease: { name: string; namespace: string };
  identity: string;
  log: Logger;
  start(): RunningControllers;
}

/** Start the controllers while leading the Lease (or now, without election); resolves once it campaigns. */
export async function runLeadingOrAlone(opts: LeadingOrAloneOptions): Promise<Leading> {
  if (opts.election === false) {
    const controllers = opts.start();
    return { isLeader: () => true, stop: () => controllers.stop() };
  }
  const election = opts.election ?? {};
  return runWhileLeading({
    kubeconfig: opts.kubeconfig,
    namespace: election.namespace ?? opts.lease.namespace,
    name: opts.lease.name,
    identity: opts.identity,
    leaseDurationSeconds: election.leaseDurationSeconds,
    renewDeadlineMs: election.renewDeadlineMs,
    retryPeriodMs: election.retryPeriodMs,
    log: opts.log,
    start: opts.start,
  });
}
