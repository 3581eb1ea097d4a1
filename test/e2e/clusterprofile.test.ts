// ClusterProfiles on a real hub: one per ManagedCluster in the namespace the controller is given,
// labelled, with conditions, version and properties mirrored as OCM does, and an access provider
// pointing at the gateway. A kubeconfig built only from that access provider, with `tether
// credentials` as its exec plugin, lists namespaces on the managed cluster through the gateway;
// a deleted cluster loses its profile.
import { resolve } from 'node:path';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClusterProfile,
  clusterProfileCrd,
  clusterProfileResource,
  type ManagedCluster,
  managedClusterResource,
  toCustomResourceDefinition,
} from '../../src/api/index.ts';
import { managedClusterUser } from '../../src/gateway/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { installCrds } from '../../src/localenv/crds.ts';
import { startClusterProfileController } from '../../src/placement/clusterprofile/index.ts';
import {
  applyOnCluster1,
  cacheArgs,
  cluster1Core,
  cluster1GatewayToken,
  cluster1Target,
  env,
  type GatewayFixture,
  hubCore,
  hubKc,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';
import { Cleanups, waitFor } from './fixtures/placement-scheduling.ts';

const profiles = new ResourceClient<ClusterProfile>(hubKc, clusterProfileResource);
const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const cleanups = new Cleanups();
const cluster = uniqueName('cp');
const profileNamespace = uniqueName('profiles');
let f: GatewayFixture;

beforeAll(async () => {
  await installCrds(hubKc, [toCustomResourceDefinition(clusterProfileCrd())]);
  f = await startGatewayFixture();
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
}, 120_000);

afterAll(async () => {
  await cleanups.run();
  await f?.stop();
  await hubCore.deleteNamespace({ name: profileNamespace }).catch(() => {});
});

describe('ClusterProfile', () => {
  it('mirrors the ManagedCluster, and its access provider + tether credentials reach the cluster through the gateway', async () => {
    // What the registration agent reports, written here since no agent runs for this cluster.
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await clusters.patchStatus(cluster, {
      status: {
        conditions: [
          {
            type: 'ManagedClusterJoined',
            status: 'True',
            reason: 'ManagedClusterJoined',
            message: 'joined',
            lastTransitionTime: now,
          },
          {
            type: 'ManagedClusterConditionAvailable',
            status: 'True',
            reason: 'ManagedClusterAvailable',
            message: 'available',
            lastTransitionTime: now,
          },
        ],
        version: { kubernetes: 'v1.33.1' },
        clusterClaims: [{ name: 'region.open-cluster-management.io', value: 'eu-west' }],
      },
    });
    const controller = startClusterProfileController({ hubKubeConfig: hubKc, namespace: profileNamespace });
    cleanups.add(() => controller.stop());

    const profile = await waitFor(async () => {
      const p = await profiles.get(cluster, profileNamespace);
      return p?.status?.accessProviders?.length ? p : undefined;
    }, 'the ClusterProfile with its access provider');
    expect(profile.metadata.labels).toMatchObject({
      'x-k8s.io/cluster-manager': 'open-cluster-management',
      'open-cluster-management.io/cluster-name': cluster,
    });
    expect(profile.spec.clusterManager.name).toBe('open-cluster-management');
    expect(profile.status?.version?.kubernetes).toBe('v1.33.1');
    expect(profile.status?.properties).toEqual([
      { name: 'region.open-cluster-management.io', value: 'eu-west' },
    ]);
    expect(profile.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['ControlPlaneHealthy', 'True', 'ManagedClusterAvailable'],
      ['Joined', 'True', 'ManagedClusterJoined'],
    ]);

    // A hub ServiceAccount allowed through the gateway to this cluster only, and allowed to view
    // on cluster1 under the name the gateway impersonates.
    const saNamespace = 'default';
    const sa = uniqueName('profile-consumer');
    await hubCore.createNamespacedServiceAccount({
      namespace: saNamespace,
      body: { metadata: { name: sa } },
    });
    cleanups.add(() =>
      hubCore.deleteNamespacedServiceAccount({ name: sa, namespace: saNamespace }).catch(() => {}),
    );
    const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: sa },
        rules: [
          {
            apiGroups: ['cluster.core.oam.dev'],
            resources: ['clustergateways/proxy'],
            resourceNames: [cluster],
            verbs: ['*'],
          },
        ],
      },
    });
    cleanups.add(() => rbac.deleteClusterRole({ name: sa }).catch(() => {}));
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: sa },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: saNamespace }],
      },
    });
    cleanups.add(() => rbac.deleteClusterRoleBinding({ name: sa }).catch(() => {}));
    await applyOnCluster1([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `tether-e2e-${sa}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [
          {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'User',
            name: managedClusterUser(`system:serviceaccount:${saNamespace}:${sa}`),
          },
        ],
      } as never,
    ]);
    const marker = uniqueName('cp-marker');
    await cluster1Core.createNamespace({ body: { metadata: { name: marker } } });
    cleanups.add(() => cluster1Core.deleteNamespace({ name: marker }).catch(() => {}));

    // A consumer's kubeconfig: the access provider's cluster as is, `tether credentials` as exec.
    const provider = profile.status?.accessProviders?.[0];
    expect(provider?.cluster.server).toMatch(new RegExp(`/clustergateways/${cluster}/proxy$`));
    const kubeconfig = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: cluster, cluster: provider?.cluster }],
      users: [
        {
          name: 'consumer',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: process.execPath,
              args: [
                resolve('bin/tether.js'),
                'credentials',
                `--kubeconfig=${env.hub.kubeconfigPath}`,
                `--service-account=${saNamespace}/${sa}`,
              ],
              provideClusterInfo: true,
              interactiveMode: 'Never',
            },
          },
        },
      ],
      contexts: [{ name: cluster, context: { cluster, user: 'consumer' } }],
      'current-context': cluster,
    };
    const path = f.file(`${uniqueName('consumer')}.kubeconfig`, JSON.stringify(kubeconfig));
    const out = await waitFor(
      async () => {
        const names = await kubectl(path, [...cacheArgs(f), 'get', 'ns', '-o', 'name']).catch(() => '');
        return names.includes(`namespace/${marker}`) ? names : undefined;
      },
      'the consumer to list namespaces on cluster1 through the gateway',
      60_000,
    );
    expect(out).toContain(`namespace/${marker}`);

    // The cluster goes: so does its profile.
    await clusters.delete(cluster);
    await waitFor(
      async () => ((await profiles.get(cluster, profileNamespace)) ? undefined : true),
      'the profile of the deleted cluster to go',
    );
  });
});
