// The opt-in shared identity mode (`tether gateway --identity shared`): every caller the hub lets
// through acts on the managed cluster as the gateway's own ServiceAccount (cluster-gateway's
// default), except on a cluster whose ClusterGateway asks for impersonation. Hub RBAC on
// clustergateways/proxy is then the only check, so its verb mapping must hold for upgrades too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { impersonateAnnotation } from '../../src/gateway/index.ts';
import {
  cacheArgs,
  cluster1AdminToken,
  cluster1GatewayToken,
  cluster1Target,
  type GatewayFixture,
  hubUser,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
const shared = uniqueName('gwsh');
const annotated = uniqueName('gwsh-imp');
const reader = uniqueName('gw-sh-reader');
let readerUser: Awaited<ReturnType<typeof hubUser>>;

beforeAll(async () => {
  f = await startGatewayFixture({ identityMode: 'shared' });
  // Shared mode needs the gateway's ServiceAccount to hold the rights itself (here cluster-admin).
  await f.addCluster({ name: shared, ...cluster1Target() }, await cluster1AdminToken(shared));
  await f.addCluster({ name: annotated, ...cluster1Target() }, await cluster1GatewayToken(annotated), {
    [impersonateAnnotation]: 'true',
  });
  readerUser = await hubUser(f, reader, ['get'], shared);
});

afterAll(async () => {
  await f?.stop();
});

const whoami = async (kubeconfig: string): Promise<string> =>
  (
    JSON.parse(await kubectl(kubeconfig, [...cacheArgs(f), 'auth', 'whoami', '-o', 'json'])) as {
      status: { userInfo: { username: string } };
    }
  ).status.userInfo.username;

describe('shared identity, opted in', () => {
  it('every caller acts as the gateway ServiceAccount; a cluster annotated impersonate still impersonates', async () => {
    expect(await whoami(f.kubeconfigFor(shared))).toBe(`system:serviceaccount:tether-gateway-e2e:${shared}`);
    // The risk of this mode, as documented: a hub user with only `get` reads what the gateway reads.
    await expect(
      kubectl(readerUser.kubeconfig, [...cacheArgs(f), 'get', 'secrets', '-A', '-o', 'name']),
    ).resolves.toBeTypeOf('string');
    expect(await whoami(f.kubeconfigFor(annotated))).toBe('cluster:hub:tether-admin');
  });

  it('a read-only gateway user cannot exec/port-forward over WebSocket (shared mode)', async () => {
    const { tls } = readerUser;
    for (const [path, protocol] of [
      ['/api/v1/namespaces/default/pods/any/exec?command=sh&stdin=true&stdout=true', 'v5.channel.k8s.io'],
      ['/api/v1/namespaces/default/pods/any/portforward?ports=80', 'v4.channel.k8s.io'],
    ] as const) {
      const ws = new WebSocket(
        `wss://${tls.host}:${tls.port}/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${shared}/proxy${path}`,
        [protocol],
        { ca: tls.ca, cert: tls.cert, key: tls.key },
      );
      const status = await new Promise<number>((resolve, reject) => {
        ws.once('open', () => resolve(101));
        ws.once('unexpected-response', (_req, res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        ws.once('error', reject);
      }).finally(() => ws.terminate());
      expect(status).toBe(403);
    }
  });
});
