// The dialer a gateway uses when it runs apart from the proxy-server: HTTP CONNECT on the running
// `tether proxy-server` process's frontend (proxy-client certificate), then TLS to cluster1's
// kube-apiserver verified against cluster1's CA — the path `tether up` wires for the gateway; and
// the tunnel subresource, answered from that process's GET /tunnels/cluster1.
import { readFileSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  managedClusterResource,
  managedServiceAccountLabel,
} from '../../src/api/index.ts';
import { connectFrontendDialer, startLocalGatewayForTunnel } from '../../src/gateway/index.ts';
import { UpstreamPools } from '../../src/gateway/upstream.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { cluster1GatewayToken, runFixtureCleanups } from './fixtures/gateway.ts';
import { adminKubeConfig, kubectl } from './fixtures/helpers.ts';

const env = testEnv();
const dial = connectFrontendDialer({
  url: env.tunnel.connectFrontendUrl,
  caPem: readFileSync(env.tunnel.hubCaPath, 'utf8'),
  certPem: readFileSync(env.tunnel.proxyClientCertPath, 'utf8'),
  keyPem: readFileSync(env.tunnel.proxyClientKeyPath, 'utf8'),
});

describe('connectFrontendDialer', () => {
  it('opens a verified TLS connection to cluster1 through the proxy-server process and pools it', async () => {
    const pools = new UpstreamPools({ dial, log: logger('test') });
    try {
      const up = {
        cluster: 'cluster1',
        endpointType: 'ClusterProxy' as const,
        url: new URL(env.cluster1.apiserverUrl),
        caPem: readFileSync(env.cluster1.caCertPath, 'utf8'),
        credential: { type: 'ServiceAccountToken' as const, token: 'unused' },
        impersonate: false,
      };
      for (let i = 0; i < 3; i++) {
        const res = await pools.pool(up).request({ method: 'GET', path: '/version' });
        expect(res.statusCode).toBe(200);
        expect(((await res.body.json()) as { gitVersion: string }).gitVersion).toMatch(/^v1\./);
      }
      const wrongCa = { ...up, cluster: 'cluster1', caPem: readFileSync(env.hub.caCertPath, 'utf8') };
      await expect(pools.connect(wrongCa)).rejects.toMatchObject({ code: 'TETHER_PROXY_TLS' });
    } finally {
      await pools.close();
    }
  });

  it('fails with TETHER_NO_AGENT for a cluster without an agent', async () => {
    await expect(dial('no-such-cluster', 'kube-apiserver:443')).rejects.toMatchObject({
      code: 'TETHER_NO_AGENT',
    });
  });
});

describe('startLocalGatewayForTunnel', () => {
  it('serves cluster1 through the running proxy-server process (the `tether up` wiring)', async () => {
    const hubKc = adminKubeConfig(env.hub);
    const core = hubKc.makeApiClient(CoreV1Api);
    const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
    // Other files may own ManagedCluster cluster1: create it (and its namespace) only if absent.
    const createdCluster = !(await clusters.get('cluster1'));
    const caPem = readFileSync(env.cluster1.caCertPath, 'utf8');
    if (createdCluster) {
      await clusters.create({
        metadata: { name: 'cluster1' },
        spec: {
          hubAcceptsClient: true,
          managedClusterClientConfigs: [
            { url: env.cluster1.apiserverUrl, caBundle: Buffer.from(caPem).toString('base64') },
          ],
        },
      });
    }
    const createdNamespace = await core
      .createNamespace({ body: { metadata: { name: 'cluster1' } } })
      .then(() => true)
      .catch(() => false);
    const secretName = `gateway-dialer-${process.pid}`;
    const gateway = await startLocalGatewayForTunnel({
      hubKubeConfig: hubKc,
      tunnel: env.tunnel,
      msaName: secretName,
      namespace: 'tether-gateway-e2e',
      serviceName: secretName,
    });
    try {
      await core.createNamespacedSecret({
        namespace: 'cluster1',
        body: {
          metadata: { name: secretName, labels: { [managedServiceAccountLabel]: 'true' } },
          stringData: { token: await cluster1GatewayToken(secretName), 'ca.crt': caPem },
        },
      });
      await pollUntil(() => gateway.store.get('cluster1')?.status.healthy, {
        timeoutMs: 20_000,
        description: 'ClusterGateway cluster1 to be healthy',
      });
      const version = await kubectl(env.hub.kubeconfigPath, [
        'get',
        '--raw',
        '/apis/cluster.core.oam.dev/v1alpha1/clustergateways/cluster1/proxy/version',
      ]);
      expect(JSON.parse(version).gitVersion).toMatch(/^v1\./);
      // the tunnel subresource asks the proxy-server process's frontend, with the same credentials
      const tunnel = JSON.parse(
        await kubectl(env.hub.kubeconfigPath, [
          'get',
          '--raw',
          '/apis/cluster.core.oam.dev/v1alpha1/clustergateways/cluster1/tunnel',
        ]),
      );
      expect(tunnel).toMatchObject({ kind: 'ClusterGatewayTunnel', status: { cluster: 'cluster1' } });
      expect(tunnel.status.agents.length).toBeGreaterThanOrEqual(1);
      expect(tunnel.status.bytesFromCluster).toBeGreaterThan(0);
    } finally {
      await gateway.stop();
      await core.deleteNamespacedSecret({ name: secretName, namespace: 'cluster1' }).catch(() => {});
      if (createdNamespace) await core.deleteNamespace({ name: 'cluster1' }).catch(() => {});
      if (createdCluster) await clusters.delete('cluster1', undefined, { ignoreNotFound: true });
      await runFixtureCleanups();
    }
  });
});
