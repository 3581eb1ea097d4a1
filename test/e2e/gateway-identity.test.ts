// Who a hub caller is on a managed cluster: the gateway impersonates them as `cluster:hub:<user>`
// (groups `cluster:hub:<group>`), and its own ServiceAccount on cluster1 may only impersonate — the
// RBAC `tether up` gives it. Real kubectl → hub kube-apiserver → aggregator → gateway → tunnel →
// cluster1's kube-apiserver, with hub users authenticated by client certificates from the hub CA.

import { spawn } from 'node:child_process';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { gatewayManagedClusterRbac, hubUserManagedClusterRbac } from '../../src/gateway/index.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  applyOnCluster1,
  cacheArgs,
  cluster1Core,
  cluster1GatewayToken,
  cluster1Kc,
  cluster1Target,
  type GatewayFixture,
  hubUser,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
const cluster = uniqueName('gwid');
const reader = uniqueName('gw-reader');
const viewer = uniqueName('gw-viewer');
const readerRole = uniqueName('gw-e2e-configmap-reader');
const agentNamespace = 'open-cluster-management-agent';
let createdAgentNamespace = false;
let createdHubKubeconfigSecret = false;
let readerUser: Awaited<ReturnType<typeof hubUser>>;
let viewerUser: Awaited<ReturnType<typeof hubUser>>;
const rbac1 = cluster1Kc.makeApiClient(RbacAuthorizationV1Api);

beforeAll(async () => {
  f = await startGatewayFixture();
  // No cluster:hub:system:masters binding here: the admin case below adds it itself.
  await f.addCluster(
    { name: cluster, ...cluster1Target() },
    await cluster1GatewayToken(cluster, { hubAdmins: false }),
  );
  // reader: only `get` on clustergateways/proxy on the hub; on cluster1 it may read ConfigMaps.
  readerUser = await hubUser(f, reader, ['get'], cluster);
  // viewer: may send GETs and POSTs to the cluster (hub get + create); on cluster1 the same reader role.
  viewerUser = await hubUser(f, viewer, ['get', 'create'], cluster);
  // Our own role: these control planes run no clusterrole-aggregation controller, so `view` is empty.
  await applyOnCluster1([
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: readerRole },
      rules: [{ apiGroups: [''], resources: ['configmaps', 'namespaces'], verbs: ['get', 'list', 'watch'] }],
    } as KubeObject,
    hubUserManagedClusterRbac(reader, readerRole),
    hubUserManagedClusterRbac(viewer, readerRole),
  ]);
  // The agent's own hub credential, as a registered cluster has it.
  createdAgentNamespace = await cluster1Core
    .createNamespace({ body: { metadata: { name: agentNamespace } } })
    .then(() => true)
    .catch(() => false);
  createdHubKubeconfigSecret = await cluster1Core
    .createNamespacedSecret({
      namespace: agentNamespace,
      body: { metadata: { name: 'hub-kubeconfig-secret' }, stringData: { kubeconfig: 'hub credential' } },
    })
    .then(() => true)
    .catch(() => false);
});

afterAll(async () => {
  if (createdHubKubeconfigSecret)
    await cluster1Core
      .deleteNamespacedSecret({ name: 'hub-kubeconfig-secret', namespace: agentNamespace })
      .catch(() => {});
  if (createdAgentNamespace) await cluster1Core.deleteNamespace({ name: agentNamespace }).catch(() => {});
  await f?.stop();
});

const message = (body: string): string => (JSON.parse(body) as { message?: string }).message ?? body;

/** `kubectl auth can-i`: "yes" (exit 0) or "no" (exit 1), from stdout. */
function canI(kubeconfig: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfig, ...cacheArgs(f), 'auth', 'can-i', ...args]);
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 || code === 1 ? resolve(out.trim()) : reject(new Error(`can-i exited ${code}: ${err}`)),
    );
  });
}

const k = (kubeconfig: string, args: string[]) => kubectl(kubeconfig, [...cacheArgs(f), ...args]);

/** Opens a WebSocket through the hub as `user`; resolves with the HTTP status the upgrade got. */
function webSocketStatus(
  user: Awaited<ReturnType<typeof hubUser>>,
  path: string,
  protocol: string,
): Promise<{ status: number; body: string }> {
  const { tls } = user;
  const ws = new WebSocket(
    `wss://${tls.host}:${tls.port}/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy${path}`,
    [protocol],
    { ca: tls.ca, cert: tls.cert, key: tls.key },
  );
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.terminate();
      resolve({ status: 101, body: '' });
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => {
        ws.terminate();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    ws.once('error', reject);
  });
}

describe('gateway callers act on the managed cluster as themselves (cluster:hub:<user>)', () => {
  it('a read-only gateway user cannot read Secrets on the managed cluster (not even hub-kubeconfig-secret)', async () => {
    // What `view` allows works …
    expect(await k(readerUser.kubeconfig, ['get', 'configmaps', '-n', 'default', '-o', 'name'])).toContain(
      'configmap/kube-root-ca.crt',
    );
    // … Secrets do not, neither the agent's hub credential nor any other.
    await expect(
      k(readerUser.kubeconfig, ['get', 'secret', 'hub-kubeconfig-secret', '-n', agentNamespace]),
    ).rejects.toThrow(new RegExp(`User "cluster:hub:${reader}" cannot get resource "secrets"`));
    await expect(k(readerUser.kubeconfig, ['get', 'secrets', '-A'])).rejects.toThrow(/Forbidden|forbidden/);
  });

  it('a read-only gateway user cannot exec/port-forward over WebSocket', async () => {
    const exec = await webSocketStatus(
      readerUser,
      '/api/v1/namespaces/default/pods/any/exec?command=sh&stdin=true&stdout=true',
      'v5.channel.k8s.io',
    );
    expect(exec.status).toBe(403);
    expect(message(exec.body)).toContain(`User "${reader}" cannot create resource "clustergateways/proxy"`);
    const portForward = await webSocketStatus(
      readerUser,
      '/api/v1/namespaces/default/pods/any/portforward?ports=80',
      'v4.channel.k8s.io',
    );
    expect(portForward.status).toBe(403);
    expect(message(portForward.body)).toContain('cannot create resource "clustergateways/proxy"');
  });

  it('`kubectl auth can-i` through the gateway answers for the caller', async () => {
    const kc = viewerUser.kubeconfig;
    expect(await canI(kc, ['list', 'configmaps', '-n', 'default'])).toBe('yes');
    expect(await canI(kc, ['get', 'secrets', '-n', agentNamespace])).toBe('no');
    expect(await canI(kc, ['create', 'pods/exec', '-n', 'default'])).toBe('no');
    expect(await canI(kc, ['*', '*'])).toBe('no');
  });

  // The hub kube-apiserver authorizes aggregated requests itself before the gateway sees them, and
  // these are POSTs: the hub asks `create` on clustergateways/proxy. So the hub grant is get + create
  // ("may talk to the cluster"); what the user may do there is the managed cluster's read-only role.
  it('a read-only user can run `kubectl auth whoami` / `auth can-i`', async () => {
    const who = JSON.parse(await k(viewerUser.kubeconfig, ['auth', 'whoami', '-o', 'json'])) as {
      status: { userInfo: { username: string; groups?: string[] } };
    };
    expect(who.status.userInfo.username).toBe(`cluster:hub:${viewer}`);
    expect(await canI(viewerUser.kubeconfig, ['list', 'configmaps', '-n', 'default'])).toBe('yes');
    expect(await canI(viewerUser.kubeconfig, ['--list', '-n', 'default'])).toContain('configmaps');
    // … and it stays read-only: writes are the managed cluster's to refuse.
    await expect(
      k(viewerUser.kubeconfig, ['create', 'configmap', uniqueName('nope'), '-n', 'default']),
    ).rejects.toThrow(new RegExp(`User "cluster:hub:${viewer}" cannot create resource "configmaps"`));
  });

  it("a hub user's group system:masters does not make it admin of a managed cluster", async () => {
    // The hub admin: client certificate CN=tether-admin, O=system:masters.
    const admin = f.kubeconfigFor(cluster);
    await rbac1.deleteClusterRoleBinding({ name: 'tether-gateway:hub-admins' }).catch(() => {});
    const who = JSON.parse(await k(admin, ['auth', 'whoami', '-o', 'json'])) as {
      status: { userInfo: { username: string; groups?: string[] } };
    };
    expect(who.status.userInfo.username).toBe('cluster:hub:tether-admin');
    expect(who.status.userInfo.groups).toContain('cluster:hub:system:masters');
    expect(who.status.userInfo.groups).not.toContain('system:masters');
    await expect(k(admin, ['get', 'secret', 'hub-kubeconfig-secret', '-n', agentNamespace])).rejects.toThrow(
      /cannot get resource "secrets"/,
    );
    // Unless the managed cluster binds the prefixed group, as `tether up` does for its hub admins.
    const hubAdmins = gatewayManagedClusterRbac({ namespace: 'x', serviceAccount: 'x' }).filter(
      (o) => o.metadata?.name === 'tether-gateway:hub-admins',
    );
    expect(hubAdmins).toHaveLength(1);
    await applyOnCluster1(hubAdmins);
    await pollUntil(
      () =>
        k(admin, ['get', 'secret', 'hub-kubeconfig-secret', '-n', agentNamespace, '-o', 'name']).then(
          (out) => out.includes('hub-kubeconfig-secret'),
          () => false,
        ),
      {
        timeoutMs: 20_000,
        description: 'the hub admin to read Secrets once cluster:hub:system:masters is bound',
      },
    );
  });
});
