// The ClusterGateway API on the hub: kubectl get / -w / explain / api-resources, the health
// subresource, and who may use it — the aggregator only (front-proxy certificate, else 401), and
// callers the hub's RBAC allows (SubjectAccessReview, else 403 with a Kubernetes Status).
import { spawn } from 'node:child_process';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  managedClusterResource,
  managedServiceAccountLabel,
} from '../../src/api/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  cluster1GatewayToken,
  cluster1Target,
  direct,
  env,
  type GatewayFixture,
  hubCore,
  hubKc,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
const cluster = uniqueName('gwr');
const hub = env.hub.kubeconfigPath;

beforeAll(async () => {
  f = await startGatewayFixture();
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
});
afterAll(async () => {
  await f?.stop();
});

describe('ClusterGateway resources on the hub', () => {
  it('kubectl get clustergateways prints the table columns', async () => {
    const out = await kubectl(hub, ['get', 'clustergateways']);
    const [header, ...rows] = out.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'PROVIDER', 'CREDENTIAL-TYPE', 'ENDPOINT-TYPE', 'HEALTHY']);
    const row = rows.find((r) => r.startsWith(`${cluster} `));
    expect(row?.split(/\s+/)).toEqual([cluster, 'ServiceAccountToken', 'ClusterProxy', 'true']);
    const one = JSON.parse(await kubectl(hub, ['get', 'clustergateway', cluster, '-o', 'json']));
    expect(one).toMatchObject({
      apiVersion: 'cluster.core.oam.dev/v1alpha1',
      kind: 'ClusterGateway',
      metadata: { name: cluster },
      spec: {
        provider: '',
        access: { endpoint: { type: 'ClusterProxy' }, credential: { type: 'ServiceAccountToken' } },
      },
      status: { healthy: true },
    });
    expect(JSON.stringify(one)).not.toContain('token"');
  });

  it('kubectl get clustergateways -w shows a cluster that is added and removed later', async () => {
    const other = uniqueName('gwr-late');
    const child = spawn(
      'kubectl',
      ['--kubeconfig', hub, 'get', 'clustergateways', '-w', '--output-watch-events'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
    try {
      await pollUntil(() => out.includes(cluster), { timeoutMs: 20_000, description: 'the initial list' });
      await clusters.create({ metadata: { name: other }, spec: { hubAcceptsClient: true } });
      await hubCore.createNamespace({ body: { metadata: { name: other } } });
      await hubCore.createNamespacedSecret({
        namespace: other,
        body: {
          metadata: { name: 'tether-gateway', labels: { [managedServiceAccountLabel]: 'true' } },
          stringData: { token: 'not-used', 'ca.crt': cluster1Target().caPem },
        },
      });
      await pollUntil(() => new RegExp(`ADDED\\s+${other}\\s`).test(out), {
        timeoutMs: 20_000,
        description: `an ADDED event for ${other}`,
      });
      await clusters.delete(other);
      await pollUntil(() => new RegExp(`DELETED\\s+${other}\\s`).test(out), {
        timeoutMs: 20_000,
        description: `a DELETED event for ${other}`,
      });
    } finally {
      child.kill('SIGKILL');
      await clusters.delete(other, undefined, { ignoreNotFound: true });
      await hubCore.deleteNamespace({ name: other }).catch(() => {});
    }
  });

  it('label selectors, api-resources and explain work on the hub', async () => {
    const labelled = await kubectl(hub, ['get', 'clustergateways', '-l', 'no-such-label=x', '-o', 'name']);
    expect(labelled.trim()).toBe('');
    const all = await kubectl(hub, ['get', 'clustergateways', '-l', '!no-such-label', '-o', 'name']);
    expect(all).toContain(`clustergateway.cluster.core.oam.dev/${cluster}`);
    const resources = await kubectl(hub, ['api-resources', '--api-group=cluster.core.oam.dev']);
    expect(resources).toMatch(/clustergateways\s+cluster.core.oam.dev\/v1alpha1\s+false\s+ClusterGateway/);
    const explained = await pollUntil(() => kubectl(hub, ['explain', 'clustergateways.spec.access']), {
      timeoutMs: 30_000,
      description: 'kubectl explain to find the ClusterGateway schema',
    });
    expect(explained).toContain('KIND:       ClusterGateway');
    expect(explained).toContain('endpoint');
  });

  it('the health subresource probes the cluster through the tunnel', async () => {
    const out = JSON.parse(
      await kubectl(hub, [
        'get',
        '--raw',
        `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/health`,
      ]),
    );
    expect(out).toMatchObject({ kind: 'ClusterGateway', status: { healthy: true } });
  });

  it('serves only the front proxy (401) and asks the hub whether the caller may proxy (403)', async () => {
    const path = `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy/version`;
    const anonymous = await direct(f, path, {
      frontProxy: false,
      user: 'tether-admin',
      groups: ['system:masters'],
    });
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.body)).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      code: 401,
      reason: 'Unauthorized',
    });

    const admin = await direct(f, path, {
      frontProxy: true,
      user: 'tether-admin',
      groups: ['system:masters'],
    });
    expect(admin.status).toBe(200);
    expect(JSON.parse(admin.body).gitVersion).toMatch(/^v1\./);

    const nobody = await direct(f, path, {
      frontProxy: true,
      user: 'system:serviceaccount:default:nobody',
      groups: ['system:authenticated'],
    });
    expect(nobody.status).toBe(403);
    expect(JSON.parse(nobody.body)).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
    });
    expect(JSON.parse(nobody.body).message).toContain(
      'User "system:serviceaccount:default:nobody" cannot get resource "clustergateways/proxy"',
    );
  });

  it('a hub ServiceAccount token without RBAC on clustergateways/proxy is refused, and admitted once granted', async () => {
    const ns = uniqueName('gw-caller');
    await hubCore.createNamespace({ body: { metadata: { name: ns } } });
    const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
    try {
      await hubCore.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'caller' } } });
      const tr = await hubCore.createNamespacedServiceAccountToken({
        name: 'caller',
        namespace: ns,
        body: { spec: {} },
      });
      const token = tr.status?.token ?? '';
      const asCaller = ['--token', token];
      const path = `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy/version`;
      // kubeconfig with no client certificate for the token user: the server and CA from the hub's
      const server = ['--server', env.hub.apiserverUrl, '--certificate-authority', env.hub.caCertPath];
      await expect(kubectl('/dev/null', [...server, ...asCaller, 'get', '--raw', path])).rejects.toThrow(
        /Forbidden|forbidden/,
      );
      await rbac.createClusterRole({
        body: {
          metadata: { name: ns },
          rules: [
            {
              apiGroups: ['cluster.core.oam.dev'],
              resources: ['clustergateways/proxy'],
              resourceNames: [cluster],
              verbs: ['get'],
            },
          ],
        },
      });
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: ns },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ns },
          subjects: [{ kind: 'ServiceAccount', name: 'caller', namespace: ns }],
        },
      });
      const version = await pollUntil(
        () => kubectl('/dev/null', [...server, ...asCaller, 'get', '--raw', path]),
        {
          timeoutMs: 30_000,
          intervalMs: 500,
          description: 'the caller to be admitted once RBAC allows it',
        },
      );
      expect(JSON.parse(version).gitVersion).toMatch(/^v1\./);
    } finally {
      await rbac.deleteClusterRoleBinding({ name: ns }).catch(() => {});
      await rbac.deleteClusterRole({ name: ns }).catch(() => {});
      await hubCore.deleteNamespace({ name: ns }).catch(() => {});
    }
  });

  it('counts requests per cluster in Prometheus metrics', async () => {
    const text = await f.gateway.registry.metrics();
    expect(text).toMatch(
      new RegExp(`tether_gateway_requests_total\\{cluster="${cluster}",verb="GET",code="200"\\} \\d+`),
    );
    expect(text).toContain('tether_gateway_request_duration_seconds_bucket');
  });
});
