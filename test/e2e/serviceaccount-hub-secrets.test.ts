// What a managed-cluster admin can do with the hub Secrets of its cluster namespace. It holds its
// agent's registration identity (the hub-kubeconfig-secret) and the managed-serviceaccount add-on's
// identity; both may create only ManagedServiceAccount token Secrets (the hub admission policy
// managedcluster-secrets.open-cluster-management.io) and read or change only the Secrets named like
// the namespace's MSAs (the Role the hub's ManagedServiceAccount controller keeps). Before: both
// could write and read every Secret there, so a `kubernetes.io/service-account-token` Secret made
// the hub's token controller hand them a non-expiring token of any hub ServiceAccount.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managedServiceAccountHubPermissions } from '../../src/addon/builtin/managed-serviceaccount.ts';
import { addonClusterGroup } from '../../src/api/addon-registration.ts';
import { errorMessage } from '../../src/errors.ts';
import { isForbidden, ResourceClient } from '../../src/kube/index.ts';
import { clusterSecretsPolicyName } from '../../src/registration/hub/admission-policies.ts';
import {
  type Role,
  type RoleBinding,
  roleBindingResource,
  roleResource,
  type Secret,
  type ServiceAccount,
  secretResource,
  serviceAccountResource,
} from '../../src/serviceaccount/core.ts';
import { tokenSecretsRoleName } from '../../src/serviceaccount/rbac.ts';
import { pollUntil } from '../../src/wait.ts';
import { addonSubject } from './fixtures/addon-builtin.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  createMsa,
  hubAdmin,
  hubSecrets,
  type MsaCluster,
  mintHubIdentity,
  msaCluster,
  msas,
  runCleanups,
  startAgent,
  waitForProjection,
  waitGone,
} from './fixtures/serviceaccount.ts';

const hubServiceAccounts = new ResourceClient<ServiceAccount>(hubAdmin, serviceAccountResource);
const hubRoles = new ResourceClient<Role>(hubAdmin, roleResource);
const hubRoleBindings = new ResourceClient<RoleBinding>(hubAdmin, roleBindingResource);
const hubServiceAccount = 'hub-robot';
const addon = 'managed-serviceaccount';

let cluster: MsaCluster;
/** The two hub credentials a managed-cluster admin holds, by what they are. */
let identities: Array<{ what: string; kc: KubeConfig }> = [];

/** What the add-on manager grants the add-on identity: its hubPermissions, bound to its group. */
async function grantAddonHubPermissions(namespace: string): Promise<void> {
  const name = 'open-cluster-management:managed-serviceaccount:addon-agent';
  await hubRoles.create({
    metadata: { name, namespace },
    rules: managedServiceAccountHubPermissions(),
  } as Role);
  await hubRoleBindings.create({
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: addonClusterGroup(namespace, addon) },
    ],
  });
}

beforeAll(async () => {
  cluster = await msaCluster('msa-sec');
  await grantAddonHubPermissions(cluster.name);
  const addonKc = await mintHubIdentity(
    `${cluster.name}-addon`,
    addonSubject(cluster.name, addon, 'addon-agent'),
  );
  identities = [
    { what: "its agent's hub credential", kc: cluster.hubKubeConfig },
    { what: 'the managed-serviceaccount add-on identity', kc: addonKc },
  ];
  await hubServiceAccounts.create({ metadata: { name: hubServiceAccount, namespace: cluster.name } });
});
afterAll(runCleanups);

/** The error `call` fails with (undefined when it succeeds). */
const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => undefined,
    (err: unknown) => err,
  );

const serviceAccountTokenSecret = (namespace: string, name: string): Secret => ({
  metadata: {
    name,
    namespace,
    annotations: { 'kubernetes.io/service-account.name': hubServiceAccount },
  },
  type: 'kubernetes.io/service-account-token',
});

describe('a managed-cluster admin and the hub Secrets of its cluster namespace', () => {
  for (const index of [0, 1]) {
    const what = index === 0 ? "its agent's hub credential" : 'the managed-serviceaccount add-on identity';
    it(`a managed-cluster admin cannot mint a token for a hub ServiceAccount with ${what}`, async () => {
      const identity = identities[index];
      if (!identity) throw new Error('identities not set up');
      const secrets = new ResourceClient<Secret>(identity.kc, secretResource);
      const ns = cluster.name;
      const name = uniqueName('mint');
      // The apiserver loads admission policies asynchronously: wait until a dry run is refused.
      await pollUntil(
        async () => {
          const err = await failure(secrets.create(serviceAccountTokenSecret(ns, name), { dryRun: true }));
          return isForbidden(err) && errorMessage(err).includes('may write on the hub only');
        },
        { timeoutMs: 10_000, intervalMs: 200, description: `${clusterSecretsPolicyName} to be enforced` },
      );
      const refused = await failure(secrets.create(serviceAccountTokenSecret(ns, name)));
      expect(isForbidden(refused)).toBe(true);
      expect(errorMessage(refused)).toContain(clusterSecretsPolicyName);
      expect(errorMessage(refused)).toContain('ManagedServiceAccount token Secrets');

      // Dressed as a token Secret (label, controller reference to an MSA of its name): the type counts.
      const msa = await createMsa(cluster);
      const disguised = serviceAccountTokenSecret(ns, msa.metadata.name);
      disguised.metadata.labels = {
        'authentication.open-cluster-management.io/is-managed-serviceaccount': 'true',
      };
      disguised.metadata.ownerReferences = [
        {
          apiVersion: 'authentication.open-cluster-management.io/v1beta1',
          kind: 'ManagedServiceAccount',
          name: msa.metadata.name,
          uid: msa.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ];
      expect(isForbidden(await failure(secrets.create(disguised)))).toBe(true);
      // An Opaque Secret that is no token Secret (no label, no owner) is refused too.
      const plain = { metadata: { name: uniqueName('plain'), namespace: ns }, type: 'Opaque', data: {} };
      expect(isForbidden(await failure(secrets.create(plain)))).toBe(true);

      // Nothing was stored, so the hub's token controller filled in no token.
      expect(await hubSecrets.get(name, ns)).toBeUndefined();
      expect(await hubSecrets.get(msa.metadata.name, ns)).toBeUndefined();
      expect(await hubSecrets.get(plain.metadata.name, ns)).toBeUndefined();
    });
  }

  it('a managed-cluster admin cannot read Secrets hub users keep in its cluster namespace', async () => {
    const ns = cluster.name;
    // A hub user's plain Secret and a legacy token Secret of a hub ServiceAccount, filled in by the hub.
    const plain = await hubSecrets.create({
      metadata: { name: uniqueName('team-db'), namespace: ns },
      type: 'Opaque',
      data: { password: Buffer.from('s3cret').toString('base64') },
    });
    const legacy = await hubSecrets.create(serviceAccountTokenSecret(ns, uniqueName('robot-token')));
    await pollUntil(async () => (await hubSecrets.get(legacy.metadata.name ?? '', ns))?.data?.token, {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: 'the hub token controller to fill in the legacy token Secret',
    });

    // The MSA token Secret flow still works end to end with the agent's hub credential.
    await startAgent(cluster);
    const msa = await createMsa(cluster);
    const projected = await waitForProjection(cluster, msa.metadata.name);
    expect(projected.token).not.toBe('');

    for (const { what, kc } of identities) {
      const secrets = new ResourceClient<Secret>(kc, secretResource);
      for (const secret of [plain, legacy]) {
        const name = secret.metadata.name ?? '';
        expect(isForbidden(await failure(secrets.get(name, ns))), `${what}: get ${name}`).toBe(true);
        const byName = secrets.list({ namespace: ns, fieldSelector: `metadata.name=${name}` });
        expect(isForbidden(await failure(byName)), `${what}: list ${name}`).toBe(true);
        const rewrite = secrets.patchMerge(name, { metadata: { labels: { x: 'y' } } }, ns);
        expect(isForbidden(await failure(rewrite)), `${what}: patch ${name}`).toBe(true);
        expect(isForbidden(await failure(secrets.delete(name, ns))), `${what}: delete ${name}`).toBe(true);
      }
      expect(isForbidden(await failure(secrets.list({ namespace: ns }))), `${what}: list`).toBe(true);
      // Its own token Secret, by name, it may read.
      expect((await secrets.get(msa.metadata.name, ns))?.metadata.name, what).toBe(msa.metadata.name);
    }
  });

  it('a managed-cluster admin keeps no read on Secrets once its cluster namespace has no ManagedServiceAccount', async () => {
    const other = await msaCluster('msa-sec-empty');
    const secrets = new ResourceClient<Secret>(other.hubKubeConfig, secretResource);
    const msa = await createMsa(other);
    const name = msa.metadata.name;
    const role = await pollUntil(() => hubRoles.get(tokenSecretsRoleName, other.name), {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the token Secrets Role',
    });
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
        resourceNames: [name],
      },
    ]);
    // Granted by name: absent is a 404, not a 403.
    await pollUntil(async () => !isForbidden(await failure(secrets.get(name, other.name))), {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the token Secrets Role to take effect',
    });
    await msas.delete(name, other.name);
    // No Role with an empty resourceNames (that would be every Secret): none at all.
    await waitGone('token Secrets Role', () => hubRoles.get(tokenSecretsRoleName, other.name), 10_000);
    await waitGone(
      'token Secrets RoleBinding',
      () => hubRoleBindings.get(tokenSecretsRoleName, other.name),
      10_000,
    );
    await pollUntil(async () => isForbidden(await failure(secrets.get(name, other.name))), {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the token Secret to be unreadable again',
    });
  });
});
