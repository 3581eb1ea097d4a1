// cluster-proxy's user-server (`https://<user-server>/<cluster>/<apiserver path>`, served by the
// gateway process): kubectl with a managed-cluster ServiceAccount token reaches cluster1 through
// the real tunnel; the token is passed through and the managed cluster decides (its RBAC, its
// authenticator); the user-server adds no rights, forwards nothing anonymous, and refuses path
// tricks before dialling anything.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigFromParts, kubeconfigToYaml } from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  cluster1Core,
  cluster1GatewayToken,
  cluster1Target,
  env,
  type GatewayFixture,
  hubCore,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
let port = 0;
let servingCaPem = '';
const cluster = uniqueName('us-c1');
/** a second "managed cluster" whose apiserver is the hub's own: another ServiceAccount signing key */
const other = uniqueName('us-c2');
const namespace = 'tether-user-server-e2e';
const cleanups: Array<() => Promise<unknown>> = [];

/** A ServiceAccount on cluster1 with no rights but `view` on one namespace, and a token for it. */
async function cluster1Token(name: string, bindView: boolean): Promise<string> {
  await cluster1Core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => {});
  await cluster1Core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  cleanups.push(() => cluster1Core.deleteNamespacedServiceAccount({ name, namespace }).catch(() => {}));
  if (bindView) {
    const { RbacAuthorizationV1Api } = await import('@kubernetes/client-node');
    const { cluster1Kc } = await import('./fixtures/gateway.ts');
    const rbac = cluster1Kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: `${name}-view` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      },
    });
  }
  const tr = await cluster1Core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return tr.status?.token ?? '';
}

/** A kubeconfig file for `<user-server>/<target>` with `token` (what the MSA Secret's kubeconfig holds). */
function userServerKubeconfig(target: string, token: string | undefined): string {
  return f.file(
    `${uniqueName('us')}.kubeconfig`,
    kubeconfigToYaml(
      kubeconfigFromParts({
        name: 'user-server',
        server: `https://127.0.0.1:${port}/${target}`,
        caPem: servingCaPem,
        ...(token ? { token } : {}),
      }),
    ),
  );
}

/** One raw request (path as written, no normalisation) to the user-server. */
function raw(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'GET', ca: servingCaPem, headers, servername: 'localhost' },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  const ca = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  const serving = await issueCertificate(ca, {
    commonName: 'user-server-e2e',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
    dnsNames: ['localhost'],
  });
  servingCaPem = ca.certPem;
  f = await startGatewayFixture({
    userServer: { host: '127.0.0.1', port: 0, tls: { certPem: serving.certPem, keyPem: serving.keyPem } },
  });
  port = f.gateway.userServerPort ?? 0;
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(`${cluster}-gw`));
  const hubUrl = new URL(env.hub.apiserverUrl);
  await f.addCluster(
    {
      name: other,
      apiserver: { host: hubUrl.hostname, port: Number(hubUrl.port) },
      url: env.hub.apiserverUrl,
      caPem: readFileSync(env.hub.caCertPath, 'utf8'),
    },
    undefined,
  );
  // the user-server knows a cluster once the gateway's informers saw its ManagedCluster
  await pollUntil(
    async () => (await raw(`/${other}/version`, { authorization: 'Bearer x' })).status !== 404,
    {
      timeoutMs: 20_000,
      description: `the user-server to know ${other}`,
    },
  );
}, 120_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  await hubCore.deleteNamespace({ name: namespace }).catch(() => {});
  await cluster1Core.deleteNamespace({ name: namespace }).catch(() => {});
  await f?.stop();
});

describe('user-server (cluster-proxy-addon-user): /<cluster>/… with the caller’s bearer token', () => {
  it('kubectl with a managed ServiceAccount token reaches cluster1 through the tunnel, as that ServiceAccount', async () => {
    const sa = uniqueName('viewer');
    const token = await cluster1Token(sa, true);
    const kc = userServerKubeconfig(cluster, token);
    const whoami = JSON.parse(await kubectl(kc, ['auth', 'whoami', '-o', 'json']));
    expect(whoami.status.userInfo.username).toBe(`system:serviceaccount:${namespace}:${sa}`);
    const pods = await kubectl(kc, ['-n', namespace, 'get', 'serviceaccounts', '-o', 'name']);
    expect(pods).toContain(`serviceaccount/${sa}`);
    // a watch streams through (a long-running request; `kubectl get --raw` would drop the /<cluster> prefix)
    const { body: watched } = await raw(
      `/${cluster}/api/v1/namespaces/${namespace}/serviceaccounts?watch=1&timeoutSeconds=1`,
      { authorization: `Bearer ${token}` },
    );
    expect(watched).toContain('"ADDED"');
  });

  it('adds no rights: the managed cluster’s RBAC decides (view in one namespace, nothing elsewhere, no impersonation)', async () => {
    const kc = userServerKubeconfig(cluster, await cluster1Token(uniqueName('viewer'), true));
    await expect(kubectl(kc, ['get', 'namespaces'])).rejects.toThrow(/forbidden/i);
    await expect(kubectl(kc, ['-n', namespace, 'create', 'configmap', uniqueName('x')])).rejects.toThrow(
      /forbidden/i,
    );
    // Impersonate-* go through unchanged: the managed apiserver refuses them for this token
    await expect(kubectl(kc, ['--as=system:admin', 'get', 'namespaces'])).rejects.toThrow(
      /cannot impersonate/i,
    );
  });

  it('a token for cluster1 sent to another cluster’s path is refused by that cluster (401)', async () => {
    const token = await cluster1Token(uniqueName('cross'), true);
    const res = await raw(`/${other}/api/v1/namespaces`, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(401);
    await expect(kubectl(userServerKubeconfig(other, token), ['get', 'ns'])).rejects.toThrow(
      /Unauthorized|must be logged in/,
    );
  });

  it('forwards nothing anonymous: no bearer token is 401 from the user-server itself', async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Basic YWRtaW46YWRtaW4=' }];
    for (const headers of attempts) {
      const res = await raw(`/${cluster}/version`, headers);
      expect(res.status).toBe(401);
      expect(res.body).toContain('Authorization: Bearer');
    }
  });

  it('refuses path tricks and unknown clusters before dialling anything', async () => {
    const bearer = { authorization: 'Bearer not-checked-here' };
    const cases: Array<[string, number, RegExp]> = [
      [`/${cluster}/../${other}/api`, 400, /"\." or "\.\." segments/],
      [`/${cluster}/%2e%2E/${other}/api`, 400, /segments/],
      [`/${cluster}%2f..%2f${other}/api`, 400, /not a cluster name/],
      [`/${cluster.toUpperCase()}/api`, 400, /not a cluster name/],
      ['//api/v1/namespaces', 404, /name a cluster/],
      [`/${cluster}/api/v1/namespaces/default/services/web:80/proxy-service/x`, 400, /service-proxy/],
      ['/no-such-cluster/api', 404, /not an accepted ManagedCluster/],
    ];
    for (const [path, status, message] of cases) {
      const res = await raw(path, bearer);
      expect({ path, status: res.status }).toEqual({ path, status });
      expect(JSON.parse(res.body).message).toMatch(message);
    }
  });

  it('the hub’s own credential means nothing to a managed cluster (no hub identity is added)', async () => {
    const hubToken = (
      await hubCore.createNamespacedServiceAccountToken({
        name: 'default',
        namespace: 'default',
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      })
    ).status?.token;
    const res = await raw(`/${cluster}/api/v1/namespaces`, { authorization: `Bearer ${hubToken}` });
    expect(res.status).toBe(401);
  });
});
