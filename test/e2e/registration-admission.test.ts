// The hub admission policies (src/registration/hub/admission-policies.ts) against real callers: a
// bootstrap token, a cluster agent's certificate, a hub user without execute-as.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterAgentUser, type ManifestWork, manifestWorkResource } from '../../src/api/index.ts';
import { isForbidden, kubeconfigFromParts, ResourceClient } from '../../src/kube/index.ts';
import { createBootstrapToken, ensureBootstrapIdentity } from '../../src/registration/bootstrap.ts';
import {
  type RbacBinding,
  type RbacRole,
  roleBindingResource,
  roleResource,
} from '../../src/registration/hub/resources.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  agentKubeconfig,
  Cleanups,
  clientsFor,
  createCluster,
  env,
  hub,
  kubeconfigAs,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

async function refusal(write: Promise<unknown>): Promise<Error> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error('the write was admitted');
  expect(isForbidden(err)).toBe(true);
  return err;
}

describe('hub admission', () => {
  it('a bootstrap-token holder cannot create a ManagedCluster that accepts itself', async () => {
    await ensureBootstrapIdentity(hub);
    const { token } = await createBootstrapToken(hub, 600);
    const bootstrap = clientsFor(
      kubeconfigFromParts({
        name: 'bootstrap',
        server: env.hub.apiserverUrl,
        caPem: readFileSync(env.hub.caCertPath, 'utf8'),
        token,
      }),
    );
    const name = uniqueName('selfaccept');
    cleanups.add(() => admin.clusters.delete(name, undefined, { ignoreNotFound: true }));
    const err = await refusal(
      bootstrap.clusters.create({ metadata: { name }, spec: { hubAcceptsClient: true } }),
    );
    expect(err.message).toContain('managedclusters/accept');
    expect(await admin.clusters.get(name)).toBeUndefined();
    expect(await admin.namespaces.get(name)).toBeUndefined();
    // What a joining agent does is still allowed: create it unaccepted, for a hub admin to accept.
    await bootstrap.clusters.create({ metadata: { name }, spec: { hubAcceptsClient: false } });
    await admin.clusters.patchMerge(name, { spec: { hubAcceptsClient: true } });
  });

  it('an agent cannot rewrite its own lease duration, taints, acceptance or labels', async () => {
    const scope = uniqueName('admission');
    await startScopedHub(cleanups, scope);
    const cluster = await createCluster(cleanups, scope, {
      hubAcceptsClient: true,
      leaseDurationSeconds: 60,
    });
    const agent = clientsFor(await agentKubeconfig(cluster)).clusters;
    // The hub grants the agent its ManagedCluster once it has accepted it.
    await waitFor(
      () => agent.get(cluster).then(Boolean, () => false),
      `the hub to grant ${clusterAgentUser(cluster, 'agent1')} its ManagedCluster`,
    );
    for (const change of [
      { spec: { leaseDurationSeconds: 3600 } },
      { spec: { taints: [{ key: 'x.io/held', effect: 'NoSelect' }] } },
      { metadata: { labels: { 'cluster.open-cluster-management.io/clusterset': 'prod' } } },
    ]) {
      const err = await refusal(agent.patchMerge(cluster, change));
      // A set label change is also refused by the cluster-set join policy (when the placement hub
      // has installed it); the apiserver evaluates policies in no fixed order.
      expect(err.message).toMatch(
        'labels' in (change.metadata ?? {})
          ? /may change only spec\.managedClusterClientConfigs|managedclustersets\/join/
          : /may change only spec\.managedClusterClientConfigs/,
      );
    }
    const unaccept = await refusal(agent.patchMerge(cluster, { spec: { hubAcceptsClient: false } }));
    // Both policies deny this write; the apiserver evaluates them in no fixed order, so either
    // message may come back.
    expect(unaccept.message).toMatch(
      /managedclusters\/accept|may change only spec\.managedClusterClientConfigs/,
    );
    const after = await admin.clusters.get(cluster);
    expect(after?.spec).toMatchObject({ hubAcceptsClient: true, leaseDurationSeconds: 60 });
    expect((after?.spec?.taints ?? []).map((t) => t.key)).not.toContain('x.io/held');
    // What the agent does write still goes through.
    await agent.patchMerge(cluster, {
      spec: { managedClusterClientConfigs: [{ url: 'https://cluster.example:6443' }] },
    });
    expect((await admin.clusters.get(cluster))?.spec?.managedClusterClientConfigs?.[0]?.url).toBe(
      'https://cluster.example:6443',
    );
  });

  it('a hub user without execute-as cannot create a ManifestWork with an executor', async () => {
    const namespace = uniqueName('executor');
    const user = uniqueName('alice');
    const roles = new ResourceClient<RbacRole>(hub, roleResource);
    const roleBindings = new ResourceClient<RbacBinding>(hub, roleBindingResource);
    await admin.namespaces.create({ metadata: { name: namespace } });
    cleanups.add(() => admin.namespaces.delete(namespace, undefined, { ignoreNotFound: true }));
    await roles.create({
      metadata: { name: 'works', namespace },
      rules: [
        {
          apiGroups: ['work.open-cluster-management.io'],
          resources: ['manifestworks'],
          verbs: ['create', 'get'],
        },
      ],
    });
    await roleBindings.create({
      metadata: { name: 'works', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'works' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    const works = new ResourceClient<ManifestWork>(
      await kubeconfigAs({ commonName: user }),
      manifestWorkResource,
    );
    const work = (name: string) => ({
      metadata: { name, namespace },
      spec: {
        workload: { manifests: [] },
        executor: {
          subject: {
            type: 'ServiceAccount' as const,
            serviceAccount: { namespace: 'kube-system', name: 'deployer' },
          },
        },
      },
    });
    // RBAC lets the user create works at all once the Role is visible; admission then refuses this one.
    const err = await waitFor(async () => {
      const e = await refusal(works.create(work('as-deployer')));
      return e.message.includes('execute-as') ? e : undefined;
    }, 'a refusal by the executor policy');
    expect(err.message).toContain('system:serviceaccount:kube-system:deployer');
    // Without an executor the work is the agent's to apply, as in OCM: no extra right needed.
    await works.create({ metadata: { name: 'plain', namespace }, spec: { workload: { manifests: [] } } });
    // Granted execute-as for exactly that ServiceAccount, the same work is admitted.
    await roles.create({
      metadata: { name: 'execute-as-deployer', namespace },
      rules: [
        {
          apiGroups: ['work.open-cluster-management.io'],
          resources: ['manifestworks'],
          verbs: ['execute-as'],
          resourceNames: ['system:serviceaccount:kube-system:deployer'],
        },
      ],
    });
    await roleBindings.create({
      metadata: { name: 'execute-as-deployer', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'execute-as-deployer' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    await waitFor(
      () =>
        works.create(work('as-deployer')).then(
          () => true,
          (e: unknown) => (isForbidden(e) ? false : Promise.reject(e)),
        ),
      'the execute-as grant to admit the work',
    );
  });
});
