// Why a ManagedServiceAccount token cannot go through the aggregated gateway: it is signed by the
// managed cluster, so the hub kube-apiserver — which authenticates every request before its
// aggregator hands it to the gateway — rejects it (401), and the gateway never sees a caller's token
// anyway (the aggregator forwards only X-Remote-* identity headers; the gateway dials with its own
// credential). That is why the token Secret's `kubeconfig` points at the user-server where the hub
// runs one (test/e2e/user-server.test.ts, in-cluster.test.ts) and, without one (this agent), at the
// managed apiserver. The same cluster is reachable through the gateway with a hub credential, and
// directly with the MSA token.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayServerUrl } from '../../src/gateway/index.ts';
import { kubeconfigFromParts } from '../../src/kube/index.ts';
import {
  cacheArgs,
  cluster1GatewayToken,
  cluster1Target,
  type GatewayFixture,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';
import {
  createMsa,
  decode,
  env,
  kubeconfigFile,
  msaCluster,
  runCleanups,
  scratchFile,
  startAgent,
  waitForProjection,
} from './fixtures/serviceaccount.ts';

let f: GatewayFixture;
const gatewayCluster = uniqueName('msa-gw');

beforeAll(async () => {
  f = await startGatewayFixture();
  await f.addCluster(
    { name: gatewayCluster, ...cluster1Target() },
    await cluster1GatewayToken(gatewayCluster),
  );
});

afterAll(async () => {
  await runCleanups();
  await f?.stop();
});

describe('ManagedServiceAccount token and the gateway', () => {
  it('the hub answers 401 to the MSA token at the gateway URL; a hub credential there and the token directly both work', async () => {
    const cluster = await msaCluster('msa-gw');
    const agent = await startAgent(cluster);
    const msa = await createMsa(cluster);
    const { secret, token } = await waitForProjection(cluster, msa.metadata.name);

    // The gateway is installed and routes to the cluster: the hub admin gets through.
    const viaGatewayAsHubAdmin = await kubectl(f.kubeconfigFor(gatewayCluster), [
      ...cacheArgs(f),
      'get',
      '--raw',
      '/version',
    ]);
    expect(JSON.parse(viaGatewayAsHubAdmin).gitVersion).toMatch(/^v1\./);

    // The MSA token at the gateway URL: refused by the hub's authenticator, not by the gateway.
    const viaGatewayWithToken = kubeconfigFile(
      kubeconfigFromParts({
        name: 'msa-via-gateway',
        server: gatewayServerUrl(env.hub.apiserverUrl, gatewayCluster),
        caPem: readFileSync(env.hub.caCertPath, 'utf8'),
        token,
      }),
    );
    await expect(kubectl(viaGatewayWithToken, [...cacheArgs(f), 'get', 'ns'])).rejects.toThrow(
      /Unauthorized|must be logged in/,
    );

    // The Secret's own kubeconfig (managed apiserver, managed CA, the token) works, as the MSA.
    const own = decode(secret.data?.['kubeconfig']);
    expect(own).toContain(env.cluster1.apiserverUrl);
    const whoami = await kubectl(scratchFile(`${uniqueName('own')}.yaml`, own), [
      'auth',
      'whoami',
      '-o',
      'jsonpath={.status.userInfo.username}',
    ]);
    expect(whoami).toBe(`system:serviceaccount:${agent.installNamespace}:${msa.metadata.name}`);
  });
});
