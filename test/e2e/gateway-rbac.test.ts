// The gateway runs with the least hub privileges gatewayHubRbac grants (a hub ServiceAccount, not
// the admin): it loads the front-proxy ConfigMap, watches ManagedClusters and Secrets, and asks
// SubjectAccessReviews — enough to serve the aggregator and refuse callers the hub's RBAC denies.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { gatewayHubRbac, issueGatewayServingCertificate, startGateway } from '../../src/gateway/index.ts';
import { kubeconfigFromParts, ResourceClient } from '../../src/kube/index.ts';
import { env, hubCore, hubKc } from './fixtures/gateway.ts';
import { uniqueName } from './fixtures/helpers.ts';

const ns = uniqueName('gw-identity');
const roleName = `tether:gateway:${ns}`;
const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);

afterAll(async () => {
  await rbac.deleteClusterRoleBinding({ name: roleName }).catch(() => {});
  await rbac.deleteClusterRole({ name: roleName }).catch(() => {});
  await rbac
    .deleteNamespacedRoleBinding({ name: `${roleName}:authentication-reader`, namespace: 'kube-system' })
    .catch(() => {});
  await hubCore.deleteNamespace({ name: ns }).catch(() => {});
});

function get(port: number, caPem: string, path: string, user: string, group: string): Promise<number> {
  const pki = dirname(env.hub.frontProxyCaCertPath);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: caPem,
        servername: 'localhost',
        cert: readFileSync(join(pki, 'front-proxy-client.crt')),
        key: readFileSync(join(pki, 'front-proxy-client.key')),
        headers: { 'X-Remote-User': user, 'X-Remote-Group': group },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the gateway with its own restricted hub identity', () => {
  it('starts, lists ClusterGateways for an allowed caller and refuses another', async () => {
    await hubCore.createNamespace({ body: { metadata: { name: ns } } });
    await hubCore.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'gateway' } } });
    for (const obj of gatewayHubRbac({ namespace: ns, serviceAccount: 'gateway' }, roleName)) {
      const kind = obj.kind as string;
      const plural =
        kind === 'ClusterRole'
          ? 'clusterroles'
          : kind === 'ClusterRoleBinding'
            ? 'clusterrolebindings'
            : 'rolebindings';
      const client = new ResourceClient(hubKc, {
        group: 'rbac.authorization.k8s.io',
        version: 'v1',
        plural,
        kind,
        namespaced: kind === 'RoleBinding',
      });
      await client.create(obj);
    }
    const tr = await hubCore.createNamespacedServiceAccountToken({
      name: 'gateway',
      namespace: ns,
      body: { spec: {} },
    });
    const kc = kubeconfigFromParts({
      name: 'gateway',
      server: env.hub.apiserverUrl,
      caPem: readFileSync(env.hub.caCertPath, 'utf8'),
      token: tr.status?.token ?? '',
    });
    const serving = await issueGatewayServingCertificate({ namespace: ns, serviceName: 'gateway' });
    const gateway = await startGateway({
      hubKubeConfig: kc,
      dial: () => Promise.reject(new Error('no tunnel in this test')),
      host: '127.0.0.1',
      port: 0,
      tls: serving,
      startTimeoutMs: 20_000,
    });
    try {
      const path = '/apis/cluster.core.oam.dev/v1alpha1/clustergateways';
      expect(await get(gateway.port, serving.caPem, path, 'somebody', 'system:authenticated')).toBe(403);
      // The hub admin as the aggregator names it: user tether-admin in group system:masters.
      expect(await get(gateway.port, serving.caPem, path, 'tether-admin', 'system:masters')).toBe(200);
    } finally {
      await gateway.stop();
    }
  });
});
