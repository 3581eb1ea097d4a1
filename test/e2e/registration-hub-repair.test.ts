// The registration hub writes a cluster's namespace and RBAC only when they differ from what it
// wrote (it does not re-apply them at every status update), and repairs them as soon as someone
// else changes them: a grant deleted or edited by hand comes back at once, without waiting for
// the ManagedCluster to change or for a resync.
import { isDeepStrictEqual } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clusterAgentGroups, ManagedClusterCondition, ManagedClusterTaint } from '../../src/api/index.ts';
import { findCondition } from '../../src/kube/index.ts';
import { clusterRbacName, namespaceRbacName } from '../../src/registration/hub/index.ts';
import { clusterRules } from '../../src/registration/hub/rbac.ts';
import type { RbacBinding } from '../../src/registration/hub/resources.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { admin, Cleanups, createCluster, startScopedHub, waitFor } from './fixtures/registration-hub.ts';

const scope = uniqueName('hub-repair');
const fileCleanups = new Cleanups();
const cleanups = new Cleanups();

beforeAll(async () => {
  // No resync during the test: a repair can only come from the caches' events.
  await startScopedHub(fileCleanups, scope, { resyncPeriodMs: 0 });
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

/** An accepted cluster at rest: accepted, and tainted unreachable (no agent reports for it). */
async function acceptedCluster(): Promise<string> {
  const name = await createCluster(cleanups, scope);
  await waitFor(async () => {
    const cluster = await admin.clusters.get(name);
    const accepted = findCondition(cluster?.status?.conditions, ManagedClusterCondition.HubAccepted);
    const tainted = cluster?.spec.taints?.some((t) => t.key === ManagedClusterTaint.Unreachable);
    return accepted?.status === 'True' && tainted;
  }, `${name} accepted and tainted`);
  return name;
}

describe("a cluster's grants are repaired when someone else changes them", () => {
  it('a deleted RoleBinding and ClusterRoleBinding come back, the ManagedCluster untouched', async () => {
    const name = await acceptedCluster();
    const before = await admin.clusters.get(name);
    const bindingName = namespaceRbacName(name, 'registration');
    const first = await admin.roleBindings.get(bindingName, name);
    expect(first).toBeDefined();
    await admin.roleBindings.delete(bindingName, name);
    await admin.clusterRoleBindings.delete(clusterRbacName(name));
    const restored = await waitFor(async () => {
      const binding = await admin.roleBindings.get(bindingName, name);
      return binding?.metadata?.uid !== first?.metadata?.uid ? binding : undefined;
    }, `${bindingName} restored`);
    expect((restored as RbacBinding | undefined)?.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: clusterAgentGroups(name)[0] },
    ]);
    await waitFor(
      async () => (await admin.clusterRoleBindings.get(clusterRbacName(name))) !== undefined,
      `${clusterRbacName(name)} restored`,
    );
    // Nothing about the ManagedCluster changed: the repair came from the RBAC caches.
    expect((await admin.clusters.get(name))?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
  });

  it("an edited ClusterRole gets the hub's rules back", async () => {
    const name = await acceptedCluster();
    const role = await admin.clusterRoles.get(clusterRbacName(name));
    if (!role) throw new Error('no ClusterRole');
    await admin.clusterRoles.replace({ ...role, rules: [] });
    await waitFor(
      async () =>
        isDeepStrictEqual(
          (await admin.clusterRoles.get(clusterRbacName(name)))?.rules,
          clusterRules(name, true),
        ),
      `${clusterRbacName(name)} rules restored`,
    );
  });
});
