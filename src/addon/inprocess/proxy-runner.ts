// The cluster-proxy add-on run inside the klusterlet agent: tether's proxy-agent holding the
// cluster's tunnel to the proxy-server with the add-on's own certificate (the identity the
// proxy-server accepts as cluster-proxy's agent of this cluster, src/proxy-server/agent-identity.ts),
// the proxy-server address, server name and CA from the hub's ConfigMap, and the klusterlet's
// forward proxy. A new certificate rotates the tunnels in place (new ones first, then the old drain).
// Healthy while it holds a tunnel.

import { InProcessConfigKey } from '../../api/addon-in-process.ts';
import { InvalidArgumentError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import type { ProxyAgentMetrics } from '../../proxy-agent/metrics.ts';
import type { HostPort } from '../../proxy-agent/targets.ts';
import type { AddonCredential, AddonRunner, HostedAddonInput } from './runner.ts';

export interface ProxyRunnerOptions {
  clusterName: string;
  /** the klusterlet agent's name: the tunnel's agent id */
  agentName: string;
  /** this cluster's apiserver, the target the hub reaches by default */
  apiserver: HostPort;
  /** services the hub may reach besides the apiserver */
  exports: Array<{ name: string; target: HostPort }>;
  /** the klusterlet's forward proxy and its CA */
  proxyUrl?: string;
  proxyCaPem?: string;
  metrics?: ProxyAgentMetrics;
  log: Logger;
}

function tlsOf(input: HostedAddonInput, credential: AddonCredential) {
  const hubCaPem = input.config[InProcessConfigKey.CaCert];
  if (!hubCaPem) throw new InvalidArgumentError('the cluster-proxy ConfigMap has no ca.crt');
  const serverName = input.config[InProcessConfigKey.ServerName];
  return {
    certPem: credential.certPem,
    keyPem: credential.keyPem,
    hubCaPem,
    ...(serverName ? { serverName } : {}),
  };
}

export function proxyRunner(o: ProxyRunnerOptions): AddonRunner {
  return async (input) => {
    const servers = (input.config[InProcessConfigKey.ProxyServer] ?? '').split(',').filter(Boolean);
    if (servers.length === 0)
      throw new InvalidArgumentError('the cluster-proxy ConfigMap has no proxy-server');
    const [{ ProxyAgent }, { targetPolicy }] = await Promise.all([
      import('../../proxy-agent/agent.ts'),
      import('../../proxy-agent/targets.ts'),
    ]);
    const agent = new ProxyAgent({
      cluster: o.clusterName,
      agentId: o.agentName,
      servers,
      tls: tlsOf(input, input.credential),
      resolveTarget: targetPolicy(o.apiserver, o.exports),
      proxyUrl: o.proxyUrl,
      proxyCaPem: o.proxyCaPem,
      ...(o.metrics ? { metrics: o.metrics } : {}),
      log: o.log,
    });
    agent.start();
    return {
      healthy: () => agent.readiness().ok,
      rotate: (credential) => agent.rotate(tlsOf(input, credential)),
      stop: () => agent.stop(),
    };
  };
}
