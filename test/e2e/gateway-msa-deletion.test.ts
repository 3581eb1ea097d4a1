// Issue 23, finding 4: the gateway dials a cluster with the token of ManagedServiceAccount
// `tether-gateway` in the cluster's namespace, which the cluster-gateway add-on's hub controller
// creates. Whoever may delete ManagedServiceAccounts there (a hub user, not the cluster's agents)
// deleting it must not cut the gateway off: the controller recreates it at once, the
// managed-serviceaccount agent projects a new token, and the gateway reaches the cluster again.
// Real pieces: the hub, cluster1, the proxy-server/agent tunnel behind squid, the gateway behind
// the hub's aggregator, the serviceaccount agent and the add-on's hub controller.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterGatewayAddonHub } from '../../src/addon/builtin/cluster-gateway-hub.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/addon.ts';
import { gatewayManagedClusterRbac } from '../../src/gateway/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  applyOnCluster1,
  cacheArgs,
  cluster1Target,
  type GatewayFixture,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl } from './fixtures/helpers.ts';
import {
  hubAdmin,
  hubSecrets,
  type MsaCluster,
  msaCluster,
  msas,
  onCleanup,
  runCleanups,
  startAgent,
  tokenOf,
} from './fixtures/serviceaccount.ts';

const msaName = 'tether-gateway';
const addons = new ResourceClient<ManagedClusterAddOn>(hubAdmin, managedClusterAddOnResource);
let f: GatewayFixture;
let cluster: MsaCluster;

/** Whether a hub admin reads a namespace of the cluster through the gateway (needs a valid token). */
async function gatewayReaches(): Promise<boolean> {
  try {
    const out = await kubectl(f.kubeconfigFor(cluster.name), [
      ...cacheArgs(f),
      'get',
      '--raw',
      '/api/v1/namespaces/default',
    ]);
    return JSON.parse(out).metadata?.name === 'default';
  } catch {
    return false;
  }
}

beforeAll(async () => {
  f = await startGatewayFixture();
  cluster = await msaCluster('gw-msa');
  const agent = await startAgent(cluster);
  // What tether up's ManifestWork grants the gateway's ServiceAccount on the cluster.
  await applyOnCluster1(
    gatewayManagedClusterRbac({ namespace: agent.installNamespace, serviceAccount: msaName }),
  );
  await f.addCluster({ name: cluster.name, ...cluster1Target() }, undefined);
  const hub = startClusterGatewayAddonHub({ hubKubeConfig: hubAdmin });
  onCleanup(() => hub.stop());
  await addons.create({
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ManagedClusterAddOn',
    metadata: { name: 'cluster-gateway', namespace: cluster.name },
    spec: {},
  });
  onCleanup(() => addons.delete('cluster-gateway', cluster.name, { ignoreNotFound: true }));
  await pollUntil(gatewayReaches, {
    timeoutMs: 60_000,
    intervalMs: 500,
    description: 'the gateway to reach the cluster with the ManagedServiceAccount token',
  });
});

afterAll(async () => {
  await runCleanups();
  await f?.stop();
});

describe('the gateway ManagedServiceAccount', () => {
  it("deleting the gateway's ManagedServiceAccount does not cut the gateway off a cluster", async () => {
    const before = await msas.get(msaName, cluster.name);
    expect(before?.metadata.uid).toBeDefined();
    // The projected token before the deletion (in one CI run the Secret had none yet right after
    // the gateway's first answer; what this test proves starts once it has one).
    const oldToken = await pollUntil(
      async () => tokenOf(await hubSecrets.get(msaName, cluster.name)) || undefined,
      {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: 'the gateway ManagedServiceAccount token projected into the hub Secret',
      },
    );
    expect(oldToken).not.toBe('');
    const started = Date.now();
    await msas.delete(msaName, cluster.name);

    const recreated = await pollUntil(
      async () => {
        const msa = await msas.get(msaName, cluster.name);
        return msa && msa.metadata.uid !== before?.metadata.uid && !msa.metadata.deletionTimestamp
          ? msa
          : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'the ManagedServiceAccount to be recreated' },
    );
    expect(recreated.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'ManagedClusterAddOn', name: 'cluster-gateway' }),
    ]);
    // The old token's Secret went with the old ManagedServiceAccount; the gateway reaches the
    // cluster with the new one.
    const renewed = async () => {
      const token = tokenOf(await hubSecrets.get(msaName, cluster.name));
      return token !== '' && token !== oldToken && (await gatewayReaches());
    };
    await pollUntil(renewed, {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the gateway to reach the cluster again',
    });
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(
      `[gateway-msa-deletion] gateway reached the cluster again ${seconds.toFixed(1)} s after the deletion\n`,
    );
  });
});
