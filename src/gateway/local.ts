// The gateway as a local environment (`tether up`, e2e global setup) runs it: serving certificate
// minted here, listening on loopback, APIService pointed at localhost through an ExternalName
// Service, all removed again by stop().
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  issueGatewayServingCertificate,
  registerGatewayApiService,
  unregisterGatewayApiService,
} from './apiservice.ts';
import { connectFrontendDialer } from './dialers.ts';
import { type Gateway, type GatewayOptions, startGateway } from './server.ts';
import { connectFrontendTunnelStatus, sharedTunnelWatches } from './tunnel-source.ts';

export interface LocalGatewayOptions extends Omit<GatewayOptions, 'tls' | 'host' | 'port'> {
  hubKubeConfig: KubeConfig;
  /** default 127.0.0.1 */
  host?: string;
  /** default 0 (a free port) */
  port?: number;
  /** where the Service lives (default tether-gateway) */
  namespace?: string;
  /** default cluster-gateway */
  serviceName?: string;
  /** APIService Available deadline (default 60 s) */
  registerTimeoutMs?: number;
}

export interface LocalGateway extends Gateway {
  /** PEM of the CA in the APIService caBundle */
  caPem: string;
}

/** Starts the gateway on loopback and registers it with the hub aggregator; stop() undoes both. */
export async function startLocalGateway(opts: LocalGatewayOptions): Promise<LocalGateway> {
  const namespace = opts.namespace ?? 'tether-gateway';
  const serviceName = opts.serviceName ?? 'cluster-gateway';
  const serving = await issueGatewayServingCertificate({ namespace, serviceName });
  const gateway = await startGateway({
    ...opts,
    host: opts.host ?? '127.0.0.1',
    port: opts.port ?? 0,
    tls: { certPem: serving.certPem, keyPem: serving.keyPem },
  });
  try {
    await registerGatewayApiService(opts.hubKubeConfig, {
      namespace,
      serviceName,
      port: gateway.port,
      caPem: serving.caPem,
      timeoutMs: opts.registerTimeoutMs,
    });
  } catch (err) {
    await gateway.stop();
    throw err;
  }
  return {
    ...gateway,
    caPem: serving.caPem,
    async stop() {
      await unregisterGatewayApiService(opts.hubKubeConfig, { namespace, serviceName }).catch(() => {});
      await gateway.stop();
    },
  };
}

/** Where a local proxy-server's CONNECT frontend listens and the files to dial it with (a local
 * environment's TunnelInfo has these). */
export interface ConnectFrontendFiles {
  connectFrontendUrl: string;
  hubCaPath: string;
  proxyClientCertPath: string;
  proxyClientKeyPath: string;
}

/**
 * The gateway of a local environment whose proxy-server runs as its own process (`tether up`, the
 * e2e global setup): dials through the proxy-server's CONNECT frontend with the proxy-client
 * certificate the tunnel stack wrote, and registers with the hub aggregator.
 */
export async function startLocalGatewayForTunnel(
  opts: Omit<LocalGatewayOptions, 'dial'> & { tunnel: ConnectFrontendFiles },
): Promise<LocalGateway> {
  const { tunnel, ...rest } = opts;
  const frontend = {
    url: tunnel.connectFrontendUrl,
    caPem: readFileSync(tunnel.hubCaPath, 'utf8'),
    certPem: readFileSync(tunnel.proxyClientCertPath, 'utf8'),
    keyPem: readFileSync(tunnel.proxyClientKeyPath, 'utf8'),
  };
  return startLocalGateway({
    ...rest,
    dial: connectFrontendDialer(frontend),
    tunnelStatus: rest.tunnelStatus ?? sharedTunnelWatches(connectFrontendTunnelStatus(frontend)),
  });
}
