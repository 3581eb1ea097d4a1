// Argo CD on a real hub: the seed's ClusterDecisionResource generator reads tether's
// PlacementDecisions the way Argo CD's duck-type generator does, and a GitOpsCluster turns the same
// decisions into Argo CD cluster Secrets. What Argo CD reads from such a Secret — server, bearer
// token, TLS config, nothing else — lists namespaces on the managed cluster through the gateway
// and the tunnel; a cluster leaving the decisions loses its Secret.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  argoCdSecretTypeLabel,
  clusterSetLabel,
  type GitOpsCluster,
  gitOpsClusterCrd,
  gitOpsClusterResource,
  type ManagedServiceAccount,
  managedServiceAccountResource,
  toCustomResourceDefinition,
} from '../../src/api/index.ts';
import { kubeconfigFromParts, kubeconfigToYaml, ResourceClient } from '../../src/kube/index.ts';
import { installCrds } from '../../src/localenv/crds.ts';
import {
  type ArgoCdClusterConfig,
  argoCdWorkName,
  gatewayAccessRoleName,
  startArgoCdClusterController,
} from '../../src/placement/argocd/index.ts';
import { startPlacementController } from '../../src/placement/hub/placement-controller.ts';
import { secretResource } from '../../src/serviceaccount/core.ts';
import {
  cacheArgs,
  cluster1Core,
  cluster1GatewayToken,
  cluster1Target,
  type GatewayFixture,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  Cleanups,
  createBoundSet,
  createClusters,
  createNamespace,
  createPlacement,
  env,
  hub,
  waitFor,
  waitForDecisions,
} from './fixtures/placement-scheduling.ts';
import { setUpWorkCluster, type WorkCluster } from './fixtures/work.ts';

interface Secret {
  metadata: { name?: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
}
const secrets = new ResourceClient<Secret & { apiVersion?: string; kind?: string }>(hub, secretResource);
const gitOpsClusters = new ResourceClient<GitOpsCluster>(hub, gitOpsClusterResource);
const msas = new ResourceClient<ManagedServiceAccount>(hub, managedServiceAccountResource);
const clusterRoles = new ResourceClient(hub, {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'clusterroles',
  kind: 'ClusterRole',
  namespaced: false,
});
const decode = (v: string | undefined) => Buffer.from(v ?? '', 'base64').toString('utf8');

const cleanups = new Cleanups();
let f: GatewayFixture;
let work: WorkCluster;

beforeAll(async () => {
  await installCrds(hub, [toCustomResourceDefinition(gitOpsClusterCrd())]);
  work = await setUpWorkCluster('argo');
  f = await startGatewayFixture();
  await f.addCluster({ name: work.name, ...cluster1Target() }, await cluster1GatewayToken(work.name));
  await work.startAgent();
}, 120_000);

afterAll(async () => {
  await cleanups.run();
  await f?.stop();
  await work?.cleanup();
});

/**
 * Argo CD's duck-type (ClusterDecisionResource) generator: from the ConfigMap's apiVersion and kind
 * (a resource plural), list that resource in the ApplicationSet's namespace by the generator's label
 * selector, and take `status.<statusListKey>[].<matchKey>` of every item.
 */
async function duckTypeClusters(
  configMap: Record<string, string>,
  namespace: string,
  matchLabels: Record<string, string>,
): Promise<string[]> {
  const selector = Object.entries(matchLabels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const path = `/apis/${configMap['apiVersion']}/namespaces/${namespace}/${configMap['kind']}?labelSelector=${encodeURIComponent(selector)}`;
  const list = JSON.parse(await kubectl(env.hub.kubeconfigPath, ['get', '--raw', path])) as {
    items: Array<{ status?: Record<string, Array<Record<string, unknown>>> }>;
  };
  const statusListKey = configMap['statusListKey'] ?? '';
  const matchKey = configMap['matchKey'] ?? '';
  return list.items
    .flatMap((item) => (item.status?.[statusListKey] ?? []).map((e) => String(e[matchKey])))
    .sort();
}

describe('Argo CD integration', () => {
  it("the seed's ClusterDecisionResource ConfigMap and a GitOpsCluster register the Placement's clusters; the Secret reaches the cluster through the gateway", async () => {
    const ns = await createNamespace(cleanups, 'argocd');
    const set = await createBoundSet(cleanups, ns);
    const [offline] = await createClusters(cleanups, set, 1);
    // Its cluster namespace, as the registration hub makes it (the GitOpsCluster's ManifestWork goes there).
    await admin.namespaces.create({ metadata: { name: offline as string } });
    cleanups.add(() => admin.namespaces.delete(offline as string, undefined, { ignoreNotFound: true }));
    await admin.clusters.patchMerge(work.name, { metadata: { labels: { [clusterSetLabel]: set } } });
    const placements = startPlacementController({ hubKubeConfig: hub, namespace: ns });
    cleanups.add(() => placements.stop());
    const argo = startArgoCdClusterController({ hubKubeConfig: hub, tokenPollMs: 200 });
    cleanups.add(() => argo.stop());

    const placement = await createPlacement(ns, { clusterSets: [set] }, 'guestbook-app-placement');
    const expected = [offline as string, work.name].sort();
    await waitForDecisions(ns, placement, expected);

    // The seed's generator ConfigMap, read as Argo CD reads it.
    const configMap = {
      apiVersion: 'cluster.open-cluster-management.io/v1beta1',
      kind: 'placementdecisions',
      statusListKey: 'decisions',
      matchKey: 'clusterName',
    };
    const generated = await duckTypeClusters(configMap, ns, {
      'cluster.open-cluster-management.io/placement': placement,
    });
    expect(generated).toEqual(expected);

    await gitOpsClusters.create({
      metadata: { name: 'argo-ocm-importer', namespace: ns },
      spec: {
        argoServer: { cluster: 'notused', argoNamespace: ns },
        placementRef: {
          kind: 'Placement',
          apiVersion: 'cluster.open-cluster-management.io/v1beta1',
          name: placement,
          namespace: ns,
        },
      },
    });
    cleanups.add(() => gitOpsClusters.delete('argo-ocm-importer', ns, { ignoreNotFound: true }));

    // Argo CD's cluster list: every Secret labelled secret-type=cluster in its namespace; the
    // generator's matchKey values are matched against their `name`.
    const argoClusters = async () => {
      const list = await secrets.list({ namespace: ns, labelSelector: `${argoCdSecretTypeLabel}=cluster` });
      return list.items;
    };
    const registered = await waitFor(async () => {
      const items = await argoClusters();
      return items.length === expected.length ? items : undefined;
    }, 'an Argo CD cluster Secret per decided cluster');
    expect(registered.map((s) => decode(s.data?.['name'])).sort()).toEqual(generated);

    const mine = registered.find((s) => decode(s.data?.['name']) === work.name);
    const server = decode(mine?.data?.['server']);
    const config = JSON.parse(decode(mine?.data?.['config'])) as ArgoCdClusterConfig;
    expect(server).toMatch(
      new RegExp(`/apis/cluster\\.core\\.oam\\.dev/v1alpha1/clustergateways/${work.name}/proxy$`),
    );
    expect(config.tlsClientConfig.insecure).toBe(false);

    // Exactly what Argo CD uses: server, bearerToken, tlsClientConfig.caData. A namespace that
    // exists only on cluster1 proves where the answer came from.
    const marker = uniqueName('argo-marker');
    await cluster1Core.createNamespace({ body: { metadata: { name: marker } } });
    cleanups.add(() => cluster1Core.deleteNamespace({ name: marker }).catch(() => {}));
    const argoKubeconfig = f.file(
      `${uniqueName('argocd')}.kubeconfig`,
      kubeconfigToYaml(
        kubeconfigFromParts({
          name: 'argocd',
          server,
          caPem: decode(config.tlsClientConfig.caData),
          token: config.bearerToken,
        }),
      ),
    );
    // The ManifestWork granting Argo CD's identity its rights on cluster1 lands through the work agent.
    const names = await waitFor(
      async () => {
        const out = await kubectl(argoKubeconfig, [...cacheArgs(f), 'get', 'ns', '-o', 'name']).catch(
          () => '',
        );
        return out.includes(`namespace/${marker}`) ? out : undefined;
      },
      'Argo CD credentials to list namespaces on cluster1 through the gateway',
      60_000,
    );
    expect(names).toContain(`namespace/${marker}`);

    // The offline cluster has no gateway credential: its ManagedServiceAccount was asked for, and
    // the GitOpsCluster says it waits for its token.
    const waiting = await waitFor(async () => {
      const g = await gitOpsClusters.get('argo-ocm-importer', ns);
      const c = g?.status?.conditions?.find((x) => x.type === 'ClustersRegistered');
      return c?.reason === 'WaitingForGatewayCredential' ? c : undefined;
    }, 'ClustersRegistered=False waiting for the gateway credential');
    expect(waiting.message).toContain(offline);
    expect(waiting.message).not.toContain(work.name);
    expect(await msas.get('tether-gateway', offline as string)).toBeDefined();

    // The offline cluster leaves the set, so the decisions: its Secret goes, the other stays.
    await admin.clusters.patchMerge(offline as string, {
      metadata: { labels: { [clusterSetLabel]: 'default' } },
    });
    await waitForDecisions(ns, placement, [work.name]);
    await waitFor(async () => {
      const items = await argoClusters();
      return items.length === 1 && decode(items[0]?.data?.['name']) === work.name ? items : undefined;
    }, "the offline cluster's Secret to go");
    await waitFor(async () => {
      const g = await gitOpsClusters.get('argo-ocm-importer', ns);
      return g?.status?.phase === 'successful' &&
        g.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        ? g
        : undefined;
    }, 'GitOpsCluster Ready');

    // The GitOpsCluster goes: so do its Secrets.
    await gitOpsClusters.delete('argo-ocm-importer', ns);
    await waitFor(async () => ((await argoClusters()).length === 0 ? true : undefined), 'every Secret to go');
    // …and its hub RBAC and the ManifestWork on the remaining cluster.
    const ghost = { metadata: { name: 'argo-ocm-importer', namespace: ns } };
    await waitFor(
      async () => ((await clusterRoles.get(gatewayAccessRoleName(ghost))) ? undefined : true),
      'the gateway ClusterRole to go',
    );
    await waitFor(
      async () => ((await work.getWork(argoCdWorkName(ghost))) ? undefined : true),
      'the ManifestWork to go',
    );
  });
});
