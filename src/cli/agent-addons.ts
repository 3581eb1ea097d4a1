// `tether agent --in-process-addons`: which built-in add-ons the klusterlet agent may host, and the
// host started with their runners (src/addon/inprocess). The add-on code loads only when listed.

import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { InProcessAddonHost } from '../addon/inprocess/host.ts';
import type { AddonRunner } from '../addon/inprocess/runner.ts';
import { InProcessAddon, inProcessAddonNames } from '../api/addon-in-process.ts';

const managedServiceAccountAddonName = InProcessAddon.ManagedServiceAccount;
const clusterProxyAddonName = InProcessAddon.ClusterProxy;

import { InvalidArgumentError } from '../errors.ts';
import { logger } from '../log.ts';
import type { HostPort } from '../proxy-agent/targets.ts';

export { inProcessAddonNames };

/** The names, deduplicated and sorted; an unknown one is an error naming the known ones. */
export function checkInProcessAddons(names: readonly string[]): string[] {
  const unknown = names.filter((n) => !inProcessAddonNames.includes(n));
  if (unknown.length > 0)
    throw new InvalidArgumentError(
      `--in-process-addons: ${unknown.map((n) => `"${n}"`).join(', ')} cannot run in the agent (it hosts ${inProcessAddonNames.join(', ')})`,
    );
  return [...new Set(names)].sort();
}

export interface AddonHostFlags {
  names: readonly string[];
  clusterName: string;
  agentName: string;
  managed: KubeConfig;
  apiserver: HostPort;
  exports: Array<{ name: string; target: HostPort }>;
  proxyUrl?: string;
  proxyCaPem?: string;
  leaseDurationSeconds: number;
  /** where the in-process proxy-agent's series go (the ops endpoint's registry) */
  metrics?: Registry;
}

export async function startAddonHost(f: AddonHostFlags): Promise<InProcessAddonHost> {
  const { startInProcessAddonHost } = await import('../addon/inprocess/host.ts');
  const runners = new Map<string, AddonRunner>();
  if (f.names.includes(managedServiceAccountAddonName)) {
    const { serviceAccountRunner } = await import('../addon/inprocess/serviceaccount-runner.ts');
    const log = logger('serviceaccount-agent', {
      cluster: f.clusterName,
      addon: managedServiceAccountAddonName,
    });
    runners.set(
      managedServiceAccountAddonName,
      serviceAccountRunner({ clusterName: f.clusterName, managedKubeConfig: f.managed, log }),
    );
  }
  if (f.names.includes(clusterProxyAddonName)) {
    const [{ proxyRunner }, { createProxyAgentMetrics }] = await Promise.all([
      import('../addon/inprocess/proxy-runner.ts'),
      import('../proxy-agent/metrics.ts'),
    ]);
    const log = logger('proxy-agent', { cluster: f.clusterName, addon: clusterProxyAddonName });
    runners.set(
      clusterProxyAddonName,
      proxyRunner({
        clusterName: f.clusterName,
        agentName: f.agentName,
        apiserver: f.apiserver,
        exports: f.exports,
        proxyUrl: f.proxyUrl,
        proxyCaPem: f.proxyCaPem,
        ...(f.metrics ? { metrics: createProxyAgentMetrics(f.metrics) } : {}),
        log,
      }),
    );
  }
  return startInProcessAddonHost({
    clusterName: f.clusterName,
    managedKubeConfig: f.managed,
    runners,
    leaseDurationSeconds: f.leaseDurationSeconds,
    log: logger('addon-host', { cluster: f.clusterName }),
  });
}
