// Every hub credential holds exactly the rights hub-rights.ts lists, on the shared real hub with its
// RBAC made by tether's own code: what `tether init` applies (hub.ts's namespaces, ServiceAccounts
// and RBAC, the bootstrap identity), two accepted clusters whose namespaces and grants the
// registration hub made (and one it has not accepted), and the built-in add-ons' Roles their
// registration controllers made. Each identity (user and groups) is impersonated in a
// SelfSubjectRulesReview in each namespace that matters — its own cluster's, another cluster's, an
// unrelated one, kube-system and the hub's namespaces — and what comes back, less what every
// authenticated user holds, must be its list: a right not listed fails, and so does a listed right
// it does not hold.
import { type KubeConfig, type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinAddon, builtinAddonNames } from '../../src/addon/builtin/index.ts';
import {
  RegistrationApplied,
  startAddonRegistrationController,
} from '../../src/addon/hub/registration/index.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/index.ts';
import { applyAll, deleteAll } from '../../src/install/apply.ts';
import { hubManifests } from '../../src/install/hub.ts';
import { hubNamespace } from '../../src/install/names.ts';
import { findCondition, isNotFound, ResourceClient } from '../../src/kube/index.ts';
import { BOOTSTRAP_NAMESPACE, bootstrapIdentityObjects } from '../../src/registration/bootstrap.ts';
import { clusterRbacName, namespaceGrants, namespaceRbacName } from '../../src/registration/hub/resources.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  credentialNamespace,
  type HubSubject,
  hubRights,
  type IdentityRights,
  rightsTestName,
} from './fixtures/hub-rights.ts';
import {
  baselineRights,
  describeProblems,
  expectedRights,
  isServiceAccount,
  type RightsProblem,
  rightsProblems,
  rulesReview,
} from './fixtures/hub-rights-review.ts';
import { admin, Cleanups, createCluster, hub, startScopedHub, waitFor } from './fixtures/registration-hub.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

const rbacKinds = ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const unrelated = scratchNamespace(hub, 'rights-unrelated');
const cleanups = new Cleanups();
const addons = new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource);
let ownCluster = '';
let otherCluster = '';
let notAcceptedCluster = '';

/** What `tether init` applies that decides hub rights: its namespaces, ServiceAccounts and RBAC. */
function initRbacObjects(): KubernetesObject[] {
  const manifests = hubManifests({
    image: 'registry.example/tether:hub-rights',
    imagePullPolicy: 'IfNotPresent',
    replicas: 1,
    agentEndpoint: { type: 'ClusterIP' },
    gatewayCaBundle: '',
  });
  return [...bootstrapIdentityObjects(), ...manifests].filter((o) => rbacKinds.includes(o.kind ?? ''));
}

/** Applies `objects` as init does; what did not exist before is deleted again by `cleanups`. */
async function installAsInit(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const created: KubernetesObject[] = [];
  for (const o of objects) {
    const exists = await api.read(o as never).then(
      () => true,
      (err: unknown) => {
        if (isNotFound(err)) return false;
        throw err;
      },
    );
    if (!exists) created.push(o);
  }
  cleanups.add(async () => {
    await deleteAll(kc, created);
    const namespaces = created.filter((o) => o.kind === 'Namespace').map((o) => o.metadata?.name ?? '');
    await waitFor(
      async () => (await Promise.all(namespaces.map((n) => admin.namespaces.get(n)))).every((n) => !n),
      `namespaces ${namespaces.join(', ')} gone`,
      60_000,
    );
  });
  await applyAll(kc, objects);
}

/** An accepted cluster, its namespace's grants made by the registration hub, the built-in add-ons enabled. */
async function acceptedClusterWithAddons(scope: string): Promise<string> {
  const name = await createCluster(cleanups, scope);
  for (const grant of namespaceGrants)
    await waitFor(
      () => admin.roleBindings.get(namespaceRbacName(name, grant), name),
      `the registration hub's ${grant} RoleBinding in ${name}`,
    );
  for (const addon of builtinAddonNames) {
    cleanups.add(() => addons.delete(addon, name, { ignoreNotFound: true }));
    await addons.create({ metadata: { name: addon, namespace: name }, spec: {} });
  }
  for (const addon of builtinAddonNames)
    await waitFor(async () => {
      const mca = await addons.get(addon, name);
      return findCondition(mca?.status?.conditions, RegistrationApplied.type)?.status === 'True';
    }, `RegistrationApplied of ${name}/${addon}`);
  return name;
}

beforeAll(async () => {
  try {
    await installAsInit(hub, initRbacObjects());
    const scope = uniqueName('rights');
    await startScopedHub(cleanups, scope);
    const options = {
      image: 'registry.example/tether:hub-rights',
      proxyServer: 'proxy-server.example:8091',
      proxyServerCaPem: 'unused: no agent runs',
    };
    for (const name of builtinAddonNames) {
      const controller = startAddonRegistrationController({
        hubKubeConfig: hub,
        addon: builtinAddon(name, options),
      });
      cleanups.add(() => controller.stop());
    }
    ownCluster = await acceptedClusterWithAddons(scope);
    otherCluster = await acceptedClusterWithAddons(scope);
    notAcceptedCluster = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    await waitFor(
      () => admin.clusterRoles.get(clusterRbacName(notAcceptedCluster)),
      `the registration hub's ClusterRole of ${notAcceptedCluster}`,
    );
  } catch (err) {
    await cleanups.run().catch(() => undefined);
    throw err;
  }
}, 180_000);

afterAll(() => cleanups.run(), 120_000);

/** The cluster `identity` belongs to (a per-cluster identity's own; any for the others). */
function clusterOf(identity?: IdentityRights): string {
  return identity?.notAccepted ? notAcceptedCluster : ownCluster;
}

/** The namespaces every identity is looked at in, each with what it is to the identity. */
function namespaces(identity?: IdentityRights): Array<{ label: string; namespace: string }> {
  const perCluster = identity?.perCluster === true;
  return [
    { label: perCluster ? 'its cluster namespace' : 'a cluster namespace', namespace: clusterOf(identity) },
    {
      label: perCluster ? "another cluster's namespace" : 'another cluster namespace',
      namespace: identity?.notAccepted ? ownCluster : otherCluster,
    },
    { label: 'an unrelated namespace', namespace: unrelated.namespace },
    { label: 'kube-system', namespace: 'kube-system' },
    { label: "the hub components' namespace", namespace: hubNamespace },
    { label: 'the bootstrap namespace', namespace: BOOTSTRAP_NAMESPACE },
    { label: "cluster-gateway's credential namespace", namespace: credentialNamespace },
  ];
}

/**
 * What `subject` holds in each namespace, less `base`, against `listed(namespace)`: one line per
 * right too many or too few, and per review the hub could not complete.
 */
async function findings(
  who: string,
  subject: HubSubject,
  places: Array<{ label: string; namespace: string }>,
  listed: (namespace: string) => Set<string>,
  base: Set<string>,
): Promise<string[]> {
  const incomplete: string[] = [];
  const problems: RightsProblem[] = [];
  for (const { label, namespace } of places) {
    const where = `${label} (${namespace})`;
    const review = await rulesReview(hub, subject, namespace);
    // an authorizer that cannot list its rules would hide rights from this test
    if (review.incomplete) incomplete.push(`${who} in ${where}: incomplete, ${review.evaluationError}`);
    const held = new Set([...review.rights].filter((r) => !base.has(r)));
    problems.push(...rightsProblems(who, where, held, listed(namespace)));
  }
  return [...incomplete, ...describeProblems(problems)];
}

describe('hub credentials', () => {
  it('an identity nothing is bound to holds only what every authenticated user (and ServiceAccount) holds', async () => {
    const nobody = { label: 'nobody', user: uniqueName('nobody'), groups: [] };
    const nobodySa = {
      label: 'a ServiceAccount nobody bound',
      user: `system:serviceaccount:${unrelated.namespace}:${uniqueName('sa')}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${unrelated.namespace}`],
    };
    const lines: string[] = [];
    for (const subject of [nobody, nobodySa]) {
      const baseline = baselineRights(isServiceAccount(subject));
      lines.push(...(await findings(subject.label, subject, namespaces(), () => baseline, new Set())));
    }
    expect(lines).toEqual([]);
  });

  for (const identity of hubRights)
    it(rightsTestName(identity), async () => {
      const lines: string[] = [];
      const cluster = clusterOf(identity);
      for (const subject of identity.subjects(cluster)) {
        const who = `${identity.key} (${subject.label} ${subject.user})`;
        const listed = (namespace: string) => expectedRights(identity, namespace, cluster);
        const base = baselineRights(isServiceAccount(subject));
        lines.push(...(await findings(who, subject, namespaces(identity), listed, base)));
      }
      expect(lines).toEqual([]);
    });
});
