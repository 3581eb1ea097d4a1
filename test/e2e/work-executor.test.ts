// Finding 8 of issue 10: ManifestWork.spec.executor is a permission boundary. The work agent runs as
// cluster admin on cluster1, yet a work naming an executor ServiceAccount gets applied only what
// that account may do there (SubjectAccessReviews on cluster1); a refused manifest fails its own
// Applied condition with OCM's reason, the others still apply, and granting the rights later lets
// the refused one through on the next retry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest, ManifestWork } from '../../src/api/index.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import {
  configMap,
  kinds,
  manifestCondition,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
} from './fixtures/work.ts';

let cluster: WorkCluster;
const rbac = 'rbac.authorization.k8s.io' as const;

beforeAll(async () => {
  cluster = await setUpWorkCluster('work-exec');
  await cluster.startAgent();
});
afterAll(async () => {
  await cluster?.cleanup();
});

/** A ServiceAccount on cluster1 allowed every verb on `resources` in its own namespace. */
async function executorWithRights(namespace: string, resources: string[]) {
  const name = 'deployer';
  await onManaged(kinds.serviceAccount).create({ metadata: { namespace, name } });
  await grant(namespace, name, 'deployer-rights', [{ apiGroups: ['', rbac], resources, verbs: ['*'] }]);
  return { namespace, name };
}

async function grant(namespace: string, sa: string, role: string, rules: unknown[]) {
  await onManaged(kinds.role).create({ metadata: { namespace, name: role }, rules } as KubeObject);
  await onManaged(kinds.roleBinding).create({
    metadata: { namespace, name: role },
    roleRef: { apiGroup: rbac, kind: 'Role', name: role },
    subjects: [{ kind: 'ServiceAccount', namespace, name: sa }],
  } as KubeObject);
}

const executorSpec = (sa: { namespace: string; name: string }) => ({
  executor: { subject: { type: 'ServiceAccount' as const, serviceAccount: sa } },
});

const appliedStatus = (w: ManifestWork, ordinal: number) => manifestCondition(w, ordinal, 'Applied')?.status;

describe('ManifestWork spec.executor', () => {
  it("a hub user cannot apply through the agent what the executor ServiceAccount may not; the executor's own rights still apply", async () => {
    const ns = await cluster.managedNamespace('exec');
    const other = await cluster.managedNamespace('exec-other');
    const sa = await executorWithRights(ns, ['configmaps']);
    const secret: Manifest = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace: ns, name: 'stolen' },
      stringData: { k: 'v' },
    };
    const workName = unique('as-deployer');
    await cluster.createWork(
      workName,
      [configMap(ns, 'allowed'), secret, configMap(other, 'elsewhere')],
      executorSpec(sa),
    );
    const work = await cluster.waitForWork(
      workName,
      'the configmap applied, the other two refused',
      (w) =>
        appliedStatus(w, 0) === 'True' &&
        appliedStatus(w, 1) === 'False' &&
        appliedStatus(w, 2) === 'False' &&
        w,
    );
    for (const ordinal of [1, 2]) {
      expect(manifestCondition(work, ordinal, 'Applied')).toMatchObject({
        reason: 'AppliedManifestFailed',
        message: expect.stringContaining('not allowed to apply the resource'),
      });
    }
    expect(manifestCondition(work, 1, 'Applied')?.message).toContain(`system:serviceaccount:${ns}:deployer`);
    expect(work.status?.conditions?.find((c) => c.type === 'Applied')?.status).toBe('False');
    expect(await onManaged(kinds.configMap).get('allowed', ns)).toBeDefined();
    expect(await onManaged(kinds.secret).get('stolen', ns)).toBeUndefined();
    expect(await onManaged(kinds.configMap).get('elsewhere', other)).toBeUndefined();

    // Once the executor may manage Secrets, the refused manifest goes through on a retry.
    await grant(ns, sa.name, 'deployer-secrets', [{ apiGroups: [''], resources: ['secrets'], verbs: ['*'] }]);
    await cluster.waitForWork(
      workName,
      'the secret applied after the grant',
      (w) => appliedStatus(w, 1) === 'True',
    );
    expect(await onManaged(kinds.secret).get('stolen', ns)).toBeDefined();
    expect(await onManaged(kinds.configMap).get('elsewhere', other)).toBeUndefined();
  });

  it('an executor allowed to write RoleBindings cannot bind, through the agent, a role it does not hold', async () => {
    const ns = await cluster.managedNamespace('exec-bind');
    const sa = await executorWithRights(ns, ['rolebindings', 'configmaps']);
    const escalation: Manifest = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { namespace: ns, name: 'deployer-is-admin' },
      roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', namespace: ns, name: sa.name }],
    };
    const workName = unique('escalate');
    await cluster.createWork(workName, [escalation, configMap(ns, 'fine')], executorSpec(sa));
    const work = await cluster.waitForWork(
      workName,
      'the binding refused, the configmap applied',
      (w) => appliedStatus(w, 0) === 'False' && appliedStatus(w, 1) === 'True' && w,
    );
    expect(manifestCondition(work, 0, 'Applied')).toMatchObject({
      reason: 'AppliedManifestFailed',
      message: expect.stringContaining('bind clusterroles.rbac.authorization.k8s.io cluster-admin'),
    });
    expect(await onManaged(kinds.roleBinding).get('deployer-is-admin', ns)).toBeUndefined();
  });
});
