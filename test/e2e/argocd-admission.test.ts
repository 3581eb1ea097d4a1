// The GitOpsCluster admission policy on the real hub (attack: a hub user who may only create
// GitOpsClusters uses the controller's rights to plant Argo CD cluster Secrets in a namespace they
// cannot write, to get `clustergateways/proxy` for a ServiceAccount, or cluster-admin on managed
// clusters through the per-cluster RBAC work). Also: a Placement in another namespace, and the
// GitOpsCluster fields tether does not act on, are refused rather than ignored.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type GitOpsCluster, gitOpsClusterResource } from '../../src/api/index.ts';
import { applyObjects, ResourceClient } from '../../src/kube/index.ts';
import { installPlacementAdmission } from '../../src/placement/hub/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { Cleanups, createNamespace, hub, waitFor } from './fixtures/placement.ts';
import { kubeconfigAs, admin as rbacAdmin } from './fixtures/registration-hub.ts';

const fileCleanups = new Cleanups();
const cleanups = new Cleanups();

beforeAll(async () => {
  await installPlacementAdmission(hub, 60_000);
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

const rbac = 'rbac.authorization.k8s.io';

/** A user allowed `create` on GitOpsClusters everywhere, plus `extra` rules; returns its client. */
async function userWith(extra: object[]): Promise<ResourceClient<GitOpsCluster>> {
  const user = uniqueName('gitops-user');
  const role = uniqueName('tether-e2e-gitops');
  cleanups.add(() => rbacAdmin.clusterRoles.delete(role, undefined, { ignoreNotFound: true }));
  cleanups.add(() => rbacAdmin.clusterRoleBindings.delete(role, undefined, { ignoreNotFound: true }));
  await applyObjects(
    hub,
    [
      {
        apiVersion: `${rbac}/v1`,
        kind: 'ClusterRole',
        metadata: { name: role },
        rules: [
          { apiGroups: [gitOpsClusterResource.group], resources: ['gitopsclusters'], verbs: ['create'] },
          ...extra,
        ],
      },
      {
        apiVersion: `${rbac}/v1`,
        kind: 'ClusterRoleBinding',
        metadata: { name: role },
        roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: rbac, kind: 'User', name: user }],
      },
    ] as never,
    'tether-e2e',
  );
  return new ResourceClient<GitOpsCluster>(await kubeconfigAs({ commonName: user }), gitOpsClusterResource);
}

function gitOpsCluster(namespace: string, spec: Partial<GitOpsCluster['spec']> = {}): GitOpsCluster {
  return {
    apiVersion: 'apps.open-cluster-management.io/v1beta1',
    kind: 'GitOpsCluster',
    metadata: { name: uniqueName('argo'), namespace },
    spec: { argoServer: { argoNamespace: 'argocd' }, placementRef: { name: 'prod' }, ...spec },
  };
}

/** The dry-run create's refusal message, or 'allowed'. */
async function attempt(client: ResourceClient<GitOpsCluster>, obj: GitOpsCluster): Promise<string> {
  try {
    await client.create(obj, { dryRun: true });
    return 'allowed';
  } catch (err) {
    return String((err as Error).message);
  }
}

const secrets = { apiGroups: [''], resources: ['secrets'], verbs: ['create'] };
const proxy = {
  apiGroups: ['cluster.core.oam.dev'],
  resources: ['clustergateways/proxy'],
  verbs: ['create'],
};
const works = {
  apiGroups: ['work.open-cluster-management.io'],
  resources: ['manifestworks'],
  verbs: ['create'],
};
const everything = [secrets, proxy, works];

describe('GitOpsCluster admission', () => {
  it('refuses a user who may create GitOpsClusters but not write the Argo CD Secrets themselves', async () => {
    const namespace = await createNamespace(cleanups);
    const client = await userWith([proxy, works]);
    await waitFor(
      async () =>
        (await attempt(client, gitOpsCluster(namespace))).includes('create on secrets in namespace argocd'),
      'a GitOpsCluster refused without create on secrets in argocd',
    );
  });

  it('refuses a user without clustergateways/proxy, and one without manifestworks', async () => {
    const namespace = await createNamespace(cleanups);
    const noProxy = await userWith([secrets, works]);
    await waitFor(
      async () => (await attempt(noProxy, gitOpsCluster(namespace))).includes('clustergateways/proxy'),
      'refused without clustergateways/proxy',
    );
    const noWorks = await userWith([secrets, proxy]);
    await waitFor(
      async () => (await attempt(noWorks, gitOpsCluster(namespace))).includes('create on manifestworks'),
      'refused without manifestworks',
    );
  });

  it('admits a user who holds everything the controller will hand out', async () => {
    const namespace = await createNamespace(cleanups);
    const client = await userWith(everything);
    await waitFor(
      async () => (await attempt(client, gitOpsCluster(namespace))) === 'allowed',
      'allowed with every right',
    );
  });

  it('refuses a Placement in another namespace, another kind, and fields tether does not act on', async () => {
    const namespace = await createNamespace(cleanups);
    const client = await userWith(everything);
    await waitFor(
      async () => (await attempt(client, gitOpsCluster(namespace))) === 'allowed',
      'the user is allowed at all',
    );
    const refusals = await Promise.all([
      attempt(client, gitOpsCluster(namespace, { placementRef: { name: 'prod', namespace: 'other' } })),
      attempt(client, gitOpsCluster(namespace, { placementRef: { name: 'prod', kind: 'ConfigMap' } })),
      attempt(client, gitOpsCluster(namespace, { createPolicyTemplate: true })),
      attempt(client, gitOpsCluster(namespace, { createBlankClusterSecrets: true })),
      attempt(client, gitOpsCluster(namespace, { managedServiceAccountRef: 'argo-msa' })),
    ]);
    expect(refusals[0]).toContain("Placement in the GitOpsCluster's own namespace");
    expect(refusals[1]).toContain('spec.placementRef.kind must be Placement');
    expect(refusals[2]).toContain('spec.createPolicyTemplate is not supported');
    expect(refusals[3]).toContain('spec.createBlankClusterSecrets is not supported');
    expect(refusals[4]).toContain('spec.managedServiceAccountRef is not supported');
    // the same fields at their neutral values pass
    expect(
      await attempt(
        client,
        gitOpsCluster(namespace, {
          placementRef: { name: 'prod', namespace, kind: 'Placement' },
          createPolicyTemplate: false,
          createBlankClusterSecrets: false,
        }),
      ),
    ).toBe('allowed');
  });
});
