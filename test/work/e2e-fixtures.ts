// Shared set-up for the work agent e2e files (test/e2e/work*.test.ts): a cluster namespace on the
// real hub, a *restricted* hub identity for it (client certificate from the hub CA with the
// registration subject, and only the Role OCM's hub grants a cluster in its namespace), agents
// started on that identity against cluster1, and helpers to build works and wait for them.
// Everything made here is undone by `cleanup()` (agents stopped, works, namespaces, leftovers).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type AppliedManifestWork,
  appliedManifestWorkResource,
  type Manifest,
  type ManifestCondition,
  type ManifestWork,
  type ManifestWorkSpec,
  manifestWorkFinalizer,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { findCondition, type KubeObject, kubeconfigFromParts, ResourceClient } from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { clusterRbac, sharedClusterRoles } from '../../src/registration/hub/rbac.ts';
import { sharedClusterRoleName } from '../../src/registration/hub/resources.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  hubHashOf,
  startWorkAgent,
  type WorkAgent,
  type WorkAgentOptions,
} from '../../src/work/agent/index.ts';
import { testEnv } from '../e2e/env.ts';
import { adminKubeConfig, uniqueName } from '../e2e/helpers.ts';

export const env = testEnv();
export const hubAdmin = adminKubeConfig(env.hub);
export const managed = adminKubeConfig(env.cluster1);
export const hubHash = hubHashOf(hubAdmin.getCurrentCluster()?.server ?? '');

const core = (plural: string, kind: string, namespaced = true) => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
});
export const kinds = {
  namespace: core('namespaces', 'Namespace', false),
  configMap: core('configmaps', 'ConfigMap'),
  serviceAccount: core('serviceaccounts', 'ServiceAccount'),
  secret: core('secrets', 'Secret'),
  deployment: { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
  role: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'roles',
    kind: 'Role',
    namespaced: true,
  },
  roleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    kind: 'RoleBinding',
    namespaced: true,
  },
  clusterRole: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    kind: 'ClusterRole',
    namespaced: false,
  },
} as const;

/** Admin clients: hub works, managed AppliedManifestWorks, and any kind on either side. */
export const hubWorks = new ResourceClient<ManifestWork>(hubAdmin, manifestWorkResource);
export const appliedWorks = new ResourceClient<AppliedManifestWork>(managed, appliedManifestWorkResource);
export const onManaged = <T extends KubeObject = KubeObject>(d: (typeof kinds)[keyof typeof kinds]) =>
  new ResourceClient<T>(managed, d);
export const onHub = <T extends KubeObject = KubeObject>(d: (typeof kinds)[keyof typeof kinds]) =>
  new ResourceClient<T>(hubAdmin, d);

/** A name unique to this run and file (short enough for every kind). */
export function unique(prefix: string): string {
  return `${uniqueName(prefix)}-${randomBytes(2).toString('hex')}`;
}

export function configMap(namespace: string, name: string, data: Record<string, string> = {}): Manifest {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

/** The hub identity OCM gives a registered cluster, and the Role it gets in its namespace. */
export async function restrictedHubKubeConfig(cluster: string): Promise<KubeConfig> {
  const ca = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  const { certPem, keyPem } = await issueCertificate(ca, {
    ...agentSubject(cluster, 'work'),
    usage: 'client',
  });
  return kubeconfigFromParts({
    server: env.hub.apiserverUrl,
    caPem: readFileSync(env.hub.caCertPath, 'utf8'),
    certPem,
    keyPem,
    name: `${cluster}-work-agent`,
  });
}

export interface WorkCluster {
  /** the cluster's name = its namespace on the hub */
  name: string;
  /** the restricted hub identity the agent runs with */
  hubKc: KubeConfig;
  agentId: string;
  /** start an agent for this cluster, stopping one already running (cleanup stops the last) */
  startAgent(extra?: Partial<WorkAgentOptions>): Promise<WorkAgent>;
  /** create a work in this cluster's namespace (deleted by cleanup) */
  createWork(
    name: string,
    manifests: Manifest[],
    spec?: Omit<ManifestWorkSpec, 'workload'>,
  ): Promise<ManifestWork>;
  /** set a work's manifests (and other spec fields) */
  updateWork(
    name: string,
    manifests: Manifest[],
    spec?: Omit<ManifestWorkSpec, 'workload'>,
  ): Promise<ManifestWork>;
  getWork(name: string): Promise<ManifestWork | undefined>;
  /** poll the work until `check` returns something truthy */
  waitForWork<T>(
    name: string,
    description: string,
    check: (w: ManifestWork) => T | undefined | false,
  ): Promise<T>;
  /** a namespace on cluster1 removed by cleanup */
  managedNamespace(prefix: string): Promise<string>;
  cleanup(): Promise<void>;
}

export function conditionStatus(w: ManifestWork | undefined, type: string): string | undefined {
  return findCondition(w?.status?.conditions, type)?.status;
}

export function manifestStatus(w: ManifestWork | undefined, ordinal: number): ManifestCondition | undefined {
  return w?.status?.resourceStatus?.manifests?.find((m) => m.resourceMeta.ordinal === ordinal);
}

export function manifestCondition(w: ManifestWork | undefined, ordinal: number, type: string) {
  return findCondition(manifestStatus(w, ordinal)?.conditions, type);
}

/** Applied and Available True at the work's current generation. */
export function isSettled(w: ManifestWork): boolean {
  const applied = findCondition(w.status?.conditions, 'Applied');
  return (
    applied?.status === 'True' &&
    applied.observedGeneration === w.metadata.generation &&
    conditionStatus(w, 'Available') === 'True'
  );
}

export async function waitFor<T>(
  description: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
) {
  return pollUntil(check, { description, timeoutMs, intervalMs: 150 });
}

export async function setUpWorkCluster(prefix: string): Promise<WorkCluster> {
  const name = unique(prefix);
  const agentId = `${name}-agent`;
  await onHub(kinds.namespace).create({ metadata: { name } });
  // The hub's production grant (the registration hub's RBAC), not a test copy: the shared work
  // ClusterRole and the cluster's work RoleBinding. No hub controller runs here to release the
  // binding's manifest-work-cleanup finalizer, so it is left off (cleanup deletes the namespace).
  const workRole = sharedClusterRoles().find((r) => r.metadata?.name === sharedClusterRoleName('work'));
  await onHub(kinds.clusterRole).apply(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', ...workRole } as KubeObject,
    {
      fieldManager: 'e2e-hub',
      force: true,
    },
  );
  for (const binding of clusterRbac(name, true).roleBindings) {
    if (binding.roleRef.name !== sharedClusterRoleName('work')) continue;
    const { finalizers: _held, ...metadata } = binding.metadata ?? {};
    await onHub(kinds.roleBinding).create({ ...binding, metadata } as KubeObject);
  }
  const hubKc = await restrictedHubKubeConfig(name);
  const agents = new Set<WorkAgent>();
  const works = new Set<string>();
  const namespaces = new Set<string>();

  const spec = (manifests: Manifest[], extra: Omit<ManifestWorkSpec, 'workload'> = {}) => ({
    ...extra,
    workload: { manifests },
  });
  const cluster: WorkCluster = {
    name,
    hubKc,
    agentId,
    async startAgent(extra = {}) {
      // One agent per cluster at a time, like a real klusterlet.
      for (const running of [...agents]) await running.stop();
      const started = await startWorkAgent({
        clusterName: name,
        agentId,
        hubKubeConfig: hubKc,
        managedKubeConfig: managed,
        statusSyncIntervalMs: 1500,
        ...extra,
      });
      const stop = started.stop.bind(started);
      const agent: WorkAgent = {
        ...started,
        ready: started.ready,
        hubHash: started.hubHash,
        stop: async () => {
          agents.delete(agent);
          await stop();
        },
      };
      agents.add(agent);
      await agent.ready;
      return agent;
    },
    async createWork(workName, manifests, extra) {
      works.add(workName);
      return hubWorks.create({ metadata: { name: workName, namespace: name }, spec: spec(manifests, extra) });
    },
    async updateWork(workName, manifests, extra) {
      for (let attempt = 0; ; attempt++) {
        const current = await hubWorks.get(workName, name);
        if (!current) throw new Error(`work ${workName} is gone`);
        try {
          return await hubWorks.replace({ ...current, spec: spec(manifests, extra) });
        } catch (err) {
          if (attempt > 5) throw err;
        }
      }
    },
    getWork: (workName) => hubWorks.get(workName, name),
    async waitForWork(workName, description, check) {
      let last: ManifestWork | undefined;
      try {
        return await waitFor(`work ${workName}: ${description}`, async () => {
          last = await hubWorks.get(workName, name);
          return last ? check(last) : undefined;
        });
      } catch (err) {
        // The last status seen says more than "timed out".
        const status = JSON.stringify({ metadata: last?.metadata, status: last?.status }, null, 1);
        throw new Error(`${(err as Error).message}\nlast seen: ${status}`);
      }
    },
    async managedNamespace(nsPrefix) {
      const ns = unique(nsPrefix);
      namespaces.add(ns);
      await onManaged(kinds.namespace).create({ metadata: { name: ns } });
      return ns;
    },
    async cleanup() {
      // With an agent running, deleting the works removes what they applied; without one, the
      // finalizers are taken off so nothing is left behind on the hub.
      const running = [...agents];
      if (running.length === 0) await cluster.startAgent().catch(() => undefined);
      for (const w of works) await hubWorks.delete(w, name, { ignoreNotFound: true });
      await waitFor('works to be removed by the agent', async () => {
        for (const w of works) if (await hubWorks.get(w, name)) return false;
        return true;
      }).catch(async () => {
        for (const w of works) await dropFinalizers(hubWorks, w, name);
      });
      for (const agent of [...agents]) await agent.stop();
      // AppliedManifestWorks of this file's works that a test left (e.g. an evicted agent).
      for (const w of works) await dropFinalizers(appliedWorks, `${hubHash}-${w}`);
      for (const w of works)
        await appliedWorks.delete(`${hubHash}-${w}`, undefined, { ignoreNotFound: true });
      for (const ns of namespaces)
        await onManaged(kinds.namespace).delete(ns, undefined, { ignoreNotFound: true });
      await onHub(kinds.namespace).delete(name, undefined, { ignoreNotFound: true });
    },
  };
  return cluster;
}

/** Remove every finalizer (test clean-up only). */
export async function dropFinalizers<T extends KubeObject>(
  client: ResourceClient<T>,
  name: string,
  namespace?: string,
) {
  const obj = await client.get(name, namespace).catch(() => undefined);
  if (!obj?.metadata?.finalizers?.length) return;
  await client.patchMerge(name, { metadata: { finalizers: null } }, namespace).catch(() => undefined);
}

export { manifestWorkFinalizer };
