// Controllers that only the elected replica runs: make sure the Lease's namespace exists, campaign
// with a LeaderElector, start the controllers on winning and stop them (waiting for their running
// reconciles) on losing. What the registration hub and the placement hub share.
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { isAlreadyExists } from './api-errors.ts';
import { namespaceResource } from './kinds.ts';
import { LeaderElector } from './leader.ts';
import { ResourceClient } from './resources.ts';
import type { KubeObject } from './types.ts';

export interface RunningControllers {
  stop(): Promise<void>;
}

export interface LeadingOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  name: string;
  identity: string;
  /** defaults as in LeaderElector: 15 s, 10 s, 2 s */
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  /** synchronous, so a stop right after a start always finds what to stop */
  start(): RunningControllers;
}

export interface Leading {
  isLeader(): boolean;
  /** stops the controllers if they run, and gives the Lease up */
  stop(): Promise<void>;
}

/** Campaign for the Lease and run `start()`'s controllers while leading. */
export async function runWhileLeading(opts: LeadingOptions): Promise<Leading> {
  await ensureNamespace(opts.kubeconfig, opts.namespace, opts.log);
  let controllers: RunningControllers | undefined;
  const elector = new LeaderElector({
    kubeconfig: opts.kubeconfig,
    namespace: opts.namespace,
    name: opts.name,
    identity: opts.identity,
    leaseDurationSeconds: opts.leaseDurationSeconds,
    renewDeadlineMs: opts.renewDeadlineMs,
    retryPeriodMs: opts.retryPeriodMs,
    log: opts.log.child({ identity: opts.identity, component: 'leader-election' }),
    onStartedLeading: () => {
      controllers = opts.start();
    },
    onStoppedLeading: async () => {
      const running = controllers;
      controllers = undefined;
      await running?.stop();
    },
  });
  elector.start();
  return { isLeader: () => elector.isLeader(), stop: () => elector.stop() };
}

/**
 * The Lease's namespace must exist before anyone can campaign: `tether init` creates it, a hub run
 * by hand against a fresh cluster creates it here. Only a log line when that is not allowed.
 */
async function ensureNamespace(kubeconfig: KubeConfig, name: string, log: Logger): Promise<void> {
  const namespaces = new ResourceClient<KubeObject>(kubeconfig, namespaceResource);
  try {
    await namespaces.create({ metadata: { name } });
  } catch (err) {
    if (!isAlreadyExists(err)) {
      log.warn({ namespace: name, err: errorMessage(err) }, 'cannot create the leader election namespace');
    }
  }
}
