import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificatesV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterNameLabel,
  clusterSetLabel,
  ManagedClusterCondition,
  ManifestWorkReplicaSetCondition,
  managedClusterResource,
  managedClusterSetBindingResource,
  managedClusterSetResource,
  managedCrds,
  manifestWorkReplicaSetLabel,
  manifestWorkReplicaSetResource,
  manifestWorkResource,
  placementDecisionResource,
  placementLabel,
  placementResource,
} from '../../src/api/index.ts';
import { installCrds } from '../../src/localenv/crds.ts';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { getToken, joinBootstrapKubeconfig } from '../e2e/fixtures/clusteradm.ts';
import { adminKubeConfig, uniqueName } from '../e2e/fixtures/helpers.ts';
import { ocmEnv } from './fixtures/env.ts';
import {
  forbiddenLines,
  klusterletNamespace,
  startRegistrationAgent,
  startWorkAgent,
} from './fixtures/klusterlet-agents.ts';
import { run, tetherCli as tether, waitWhileRunning } from './fixtures/processes.ts';

const env = ocmEnv();
const hub = adminKubeConfig(env.hub);
const cluster1 = adminKubeConfig(env.cluster1);
const cluster2 = adminKubeConfig(env.cluster2);
const dir = mkdtempSync(join(tmpdir(), 'tether-mixed-fleet-'));

/** cluster2's ManagedCluster, run by OCM's klusterlet agents. */
const klusterletCluster = uniqueName('mixed-kl');
/** cluster1's ManagedCluster, run by `tether agent`. */
const tetherCluster = uniqueName('mixed-ta');
const clusterNames = [klusterletCluster, tetherCluster];
/** cluster1's namespace for tether's agent secrets (not open-cluster-management-agent: OCM's agents use that). */
const tetherAgentNamespace = uniqueName('mixed-agent');
const clusterSet = uniqueName('mixed-set');
const placementNamespace = uniqueName('mixed-pl');
const placementName = 'fleet';
const replicaSetName = uniqueName('mixed-mwrs');
/** Where the work's ConfigMap goes, on both managed clusters. */
const workloadNamespace = uniqueName('mixed-app');
const configMapName = 'mixed-fleet-cm';
/** The label the Placement selects on; both clusters carry it until one is dropped. */
const fleetLabel = 'mixed-fleet.tether.test/member';
const fleetValue = uniqueName('fleet');

const clusterApi = managedClusterResource;
const setApi = managedClusterSetResource;
const bindingApi = managedClusterSetBindingResource;
const placementApi = placementResource;
const decisionApi = placementDecisionResource;
const replicaSetApi = manifestWorkReplicaSetResource;
const workApi = { group: manifestWorkResource.group, version: 'v1', plural: 'manifestworks' };
const appliedWorkApi = { group: manifestWorkResource.group, version: 'v1', plural: 'appliedmanifestworks' };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const bootstrapSecret = `${klusterletCluster}-bootstrap-hub-kubeconfig`;
const hubKubeconfigSecret = `${klusterletCluster}-hub-kubeconfig-secret`;
const hubKubeconfigDir = join(dir, klusterletCluster, 'hub-kubeconfig');

const processes: SupervisedProcess[] = [];
let hubProcess: SupervisedProcess | undefined;
let tetherAgent: SupervisedProcess | undefined;
/** tether's agent's forbidden lines from before both clusters were Available (see the last test). */
let tetherAgentForbiddenWhileJoining = 0;
let createdKlusterletNamespace = false;

type Condition = { type: string; status: string; reason?: string };
type Obj = {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; finalizers?: string[] };
  spec?: Record<string, unknown>;
  status?: {
    conditions?: Condition[];
    decisions?: { clusterName: string }[];
    summary?: Record<string, number>;
  };
};

const objects = (kc: KubeConfig) => kc.makeApiClient(CustomObjectsApi);
const conditionStatus = (o: Obj | undefined, type: string) =>
  o?.status?.conditions?.find((c) => c.type === type)?.status;

/** pollUntil that fails at once, with the process's last lines, when the hub or an agent exits. */
const waitWhileAllRun = <T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
  description: string,
) =>
  waitWhileRunning(() => [...(hubProcess ? [hubProcess] : []), ...processes], check, timeoutMs, description);

async function managedCluster(name: string): Promise<Obj | undefined> {
  return (await objects(hub)
    .getClusterCustomObject({ ...clusterApi, name })
    .catch(() => undefined)) as Obj | undefined;
}

async function labelCluster(name: string, labels: Record<string, string | null>): Promise<void> {
  await objects(hub).patchClusterCustomObject(
    { ...clusterApi, name, body: { metadata: { labels } } },
    mergePatch,
  );
}

/** The bootstrap kubeconfig `clusteradm join` writes: a token of agent-registration-bootstrap, through squid. */
async function bootstrapKubeconfig(): Promise<string> {
  const token = await getToken(hub);
  if (!token) throw new Error('no agent-registration-bootstrap token from the hub');
  return joinBootstrapKubeconfig({
    server: env.hub.apiserverUrl,
    caPem: readFileSync(env.hub.caCertPath, 'utf8'),
    token,
    proxyUrl: env.tunnel.squidUrl,
  });
}

async function configMapValue(kc: KubeConfig): Promise<string | undefined> {
  return kc
    .makeApiClient(CoreV1Api)
    .readNamespacedConfigMap({ name: configMapName, namespace: workloadNamespace })
    .then(
      (cm) => cm.data?.value,
      () => undefined,
    );
}

/** The clusters the Placement's PlacementDecisions list, sorted. */
async function decidedClusters(): Promise<string[]> {
  const list = (await objects(hub).listNamespacedCustomObject({
    ...decisionApi,
    namespace: placementNamespace,
    labelSelector: `${placementLabel}=${placementName}`,
  })) as { items: Obj[] };
  return list.items.flatMap((d) => d.status?.decisions?.map((x) => x.clusterName) ?? []).sort();
}

async function replicaSet(): Promise<Obj | undefined> {
  return (await objects(hub)
    .getNamespacedCustomObject({ ...replicaSetApi, namespace: placementNamespace, name: replicaSetName })
    .catch(() => undefined)) as Obj | undefined;
}

/** The hub's ManifestWorks the set made, as `<cluster>` names. */
async function replicaSetWorkClusters(): Promise<string[]> {
  const list = (await objects(hub).listClusterCustomObject({
    ...workApi,
    labelSelector: `${manifestWorkReplicaSetLabel}=${placementNamespace}.${replicaSetName}`,
  })) as { items: Obj[] };
  return list.items.map((w) => w.metadata.namespace ?? '').sort();
}

async function appliedWorks(kc: KubeConfig): Promise<Obj[]> {
  const list = (await objects(kc)
    .listClusterCustomObject(appliedWorkApi)
    .catch(() => ({ items: [] }))) as { items: Obj[] };
  return list.items.filter((a) => a.spec?.manifestWorkName === replicaSetName);
}

/** Runs every cleanup step, whatever the earlier ones did. */
async function step(what: () => Promise<unknown>): Promise<void> {
  try {
    await what();
  } catch {
    // cleanup goes on; leftovers are the next step's business
  }
}

type Resource = { group: string; version: string; plural: string };

/** Strips an object's finalizers once the process that would have released them is gone. */
async function dropFinalizers(kc: KubeConfig, api: Resource, name: string, namespace?: string) {
  const body = { metadata: { finalizers: null } };
  if (namespace)
    await objects(kc)
      .patchNamespacedCustomObject({ ...api, namespace, name, body }, mergePatch)
      .catch(() => {});
  else
    await objects(kc)
      .patchClusterCustomObject({ ...api, name, body }, mergePatch)
      .catch(() => {});
}

async function namespacesGone(kc: KubeConfig, names: string[]): Promise<boolean> {
  const core = kc.makeApiClient(CoreV1Api);
  const gone = await Promise.all(
    names.map((name) =>
      core.readNamespace({ name }).then(
        () => false,
        () => true,
      ),
    ),
  );
  return gone.every(Boolean);
}

beforeAll(async () => {
  const init = await tether([
    'init',
    '--bootstrap-only',
    '--kubeconfig',
    env.hub.kubeconfigPath,
    '--ca-out',
    join(dir, 'hub-ca.crt'),
  ]);
  if (init.code !== 0) throw new Error(`tether init failed: ${init.stderr}`);
  // What the klusterlet operator (cluster2) and tether's agent install (cluster1) would install.
  for (const kc of [cluster1, cluster2]) await installCrds(kc, managedCrds());
  const core2 = cluster2.makeApiClient(CoreV1Api);
  if (!(await core2.readNamespace({ name: klusterletNamespace }).catch(() => undefined))) {
    await core2.createNamespace({ body: { metadata: { name: klusterletNamespace } } });
    createdKlusterletNamespace = true;
  }
  for (const kc of [cluster1, cluster2])
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: workloadNamespace } } });
  await cluster1
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: tetherAgentNamespace } } });
  await hub.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: placementNamespace } } });

  const logFile = join(dir, 'hub.log');
  const started = new SupervisedProcess({
    name: 'tether-hub',
    command: process.execPath,
    args: [
      tetherBin,
      'hub',
      `--kubeconfig=${env.hub.kubeconfigPath}`,
      '--no-leader-elect',
      `--ops-port=${await freePort()}`,
    ],
    logFile,
    env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
  });
  hubProcess = started;
  await pollUntil(
    () => {
      if (!started.running) throw new Error(`tether hub exited:\n${started.tail()}`);
      return existsSync(logFile) && readFileSync(logFile, 'utf8').includes('hub started');
    },
    { timeoutMs: 90_000, intervalMs: 500, description: 'tether hub to start' },
  );
}, 180_000);

afterAll(async () => {
  const hubObjects = objects(hub);
  // The set first, while the hub and both work agents run and can take its works away.
  await step(() =>
    hubObjects.deleteNamespacedCustomObject({
      ...replicaSetApi,
      namespace: placementNamespace,
      name: replicaSetName,
    }),
  );
  await step(() =>
    pollUntil(
      async () =>
        (await replicaSet()) === undefined && (await replicaSetWorkClusters().catch(() => [])).length === 0,
      { timeoutMs: 30_000, description: 'the ManifestWorkReplicaSet and its works gone' },
    ),
  );
  for (const p of [...processes].reverse()) await step(() => p.stop(5000));
  await step(() =>
    hubObjects.deleteNamespacedCustomObject({
      ...placementApi,
      namespace: placementNamespace,
      name: placementName,
    }),
  );
  await step(() =>
    hubObjects.deleteNamespacedCustomObject({
      ...bindingApi,
      namespace: placementNamespace,
      name: clusterSet,
    }),
  );
  await step(() => hubObjects.deleteClusterCustomObject({ ...setApi, name: clusterSet }));
  for (const name of clusterNames)
    await step(() => hubObjects.deleteClusterCustomObject({ ...clusterApi, name }));
  // The hub still runs: its finalizers clean up behind the clusters; what is left after that goes.
  await step(() =>
    pollUntil(async () => (await Promise.all(clusterNames.map(managedCluster))).every((mc) => !mc), {
      timeoutMs: 60_000,
      description: 'the ManagedClusters deleted by tether hub',
    }),
  );
  await step(async () => hubProcess?.stop(10_000));
  for (const name of clusterNames) {
    await dropFinalizers(hub, clusterApi, name);
    const works = (await hubObjects
      .listNamespacedCustomObject({ ...workApi, namespace: name })
      .catch(() => ({ items: [] }))) as { items: Obj[] };
    for (const w of works.items) await dropFinalizers(hub, workApi, w.metadata.name, name);
  }
  await dropFinalizers(hub, replicaSetApi, replicaSetName, placementNamespace);
  await dropFinalizers(hub, setApi, clusterSet);
  const hubCore = hub.makeApiClient(CoreV1Api);
  const certs = hub.makeApiClient(CertificatesV1Api);
  for (const name of [...clusterNames, placementNamespace])
    await step(() => hubCore.deleteNamespace({ name }));
  for (const name of clusterNames)
    await step(async () => {
      const csrs = await certs.listCertificateSigningRequest({
        labelSelector: `${clusterNameLabel}=${name}`,
      });
      for (const csr of csrs.items)
        await certs.deleteCertificateSigningRequest({ name: csr.metadata?.name ?? '' }).catch(() => {});
    });
  // Managed clusters: AppliedManifestWorks of the set (their finalizers need the stopped agents).
  for (const kc of [cluster1, cluster2])
    for (const a of await appliedWorks(kc)) {
      await dropFinalizers(kc, appliedWorkApi, a.metadata.name);
      await step(() => objects(kc).deleteClusterCustomObject({ ...appliedWorkApi, name: a.metadata.name }));
    }
  const core2 = cluster2.makeApiClient(CoreV1Api);
  for (const name of [bootstrapSecret, hubKubeconfigSecret])
    await step(() => core2.deleteNamespacedSecret({ name, namespace: klusterletNamespace }));
  const namespaces1 = [workloadNamespace, tetherAgentNamespace];
  const namespaces2 = [workloadNamespace, ...(createdKlusterletNamespace ? [klusterletNamespace] : [])];
  for (const name of namespaces1)
    await step(() => cluster1.makeApiClient(CoreV1Api).deleteNamespace({ name }));
  for (const name of namespaces2) await step(() => core2.deleteNamespace({ name }));
  // The next file may create open-cluster-management-agent again: wait until it is really gone.
  await step(() =>
    pollUntil(
      async () =>
        (await namespacesGone(cluster1, namespaces1)) &&
        (await namespacesGone(cluster2, namespaces2)) &&
        (await namespacesGone(hub, [...clusterNames, placementNamespace])),
      { timeoutMs: 60_000, description: 'the test namespaces deleted' },
    ),
  );
  rmSync(dir, { recursive: true, force: true });
}, 300_000);

describe('a mixed fleet on a tether hub: OCM klusterlet on cluster2, tether agent on cluster1', () => {
  it("OCM's klusterlet (accepted by tether accept) and tether's agent (accepted by clusteradm accept) both turn Joined and Available", async () => {
    // cluster2: OCM's registration agent with the klusterlet's bootstrap secret and its file.
    const kubeconfig2 = await bootstrapKubeconfig();
    await cluster2.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: klusterletNamespace,
      body: {
        metadata: { name: bootstrapSecret, namespace: klusterletNamespace },
        type: 'Opaque',
        stringData: { kubeconfig: kubeconfig2 },
      },
    });
    mkdirSync(hubKubeconfigDir, { recursive: true });
    const bootstrapFile = join(dir, klusterletCluster, 'bootstrap-kubeconfig');
    writeFileSync(bootstrapFile, kubeconfig2, { mode: 0o600 });
    processes.push(
      await startRegistrationAgent({
        clusterName: klusterletCluster,
        kubeconfig: env.cluster2.kubeconfigPath,
        bootstrapKubeconfig: bootstrapFile,
        bootstrapSecret,
        hubKubeconfigSecret,
        hubKubeconfigDir,
        binary: env.bin.registration,
        logDir: dir,
      }),
    );

    // cluster1: tether's agent with the bootstrap-hub-kubeconfig secret `clusteradm join` writes.
    await cluster1.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: tetherAgentNamespace,
      body: {
        metadata: { name: 'bootstrap-hub-kubeconfig', namespace: tetherAgentNamespace },
        type: 'Opaque',
        stringData: { kubeconfig: await bootstrapKubeconfig() },
      },
    });
    tetherAgent = new SupervisedProcess({
      name: `tether-agent-${tetherCluster}`,
      command: process.execPath,
      args: [
        tetherBin,
        'agent',
        `--cluster-name=${tetherCluster}`,
        `--kubeconfig=${env.cluster1.kubeconfigPath}`,
        `--agent-namespace=${tetherAgentNamespace}`,
        '--no-serviceaccount',
        '--status-sync-interval=5',
        `--ops-port=${await freePort()}`,
      ],
      logFile: join(dir, `tether-agent-${tetherCluster}.log`),
      env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
    });
    processes.push(tetherAgent);

    await waitWhileAllRun(
      async () => {
        const r = await tether([
          'accept',
          '--clusters',
          klusterletCluster,
          '--kubeconfig',
          env.hub.kubeconfigPath,
        ]);
        return r.code === 0 && (await managedCluster(klusterletCluster))?.spec?.['hubAcceptsClient'] === true;
      },
      120_000,
      `tether accept accepts ${klusterletCluster}`,
    );
    await waitWhileAllRun(
      async () => {
        const r = await run(env.bin.clusteradm, [
          'accept',
          '--clusters',
          tetherCluster,
          '--kubeconfig',
          env.hub.kubeconfigPath,
        ]);
        return r.code === 0 && /has joined the Hub successfully/.test(r.stdout);
      },
      120_000,
      `clusteradm accept accepts ${tetherCluster}`,
    );

    for (const name of clusterNames) {
      const mc = await waitWhileAllRun(
        async () => {
          const m = await managedCluster(name);
          return conditionStatus(m, ManagedClusterCondition.Joined) === 'True' &&
            conditionStatus(m, ManagedClusterCondition.Available) === 'True'
            ? m
            : undefined;
        },
        120_000,
        `ManagedCluster ${name} Joined and Available`,
      );
      expect(mc.spec?.['hubAcceptsClient']).toBe(true);
    }

    tetherAgentForbiddenWhileJoining = forbiddenLines(tetherAgent.logFile).length;

    // OCM's work agent reads the hub credential the registration agent wrote.
    await waitWhileAllRun(
      async () =>
        existsSync(join(hubKubeconfigDir, 'kubeconfig')) && existsSync(join(hubKubeconfigDir, 'tls.crt')),
      60_000,
      `the hub kubeconfig of ${klusterletCluster} in ${hubKubeconfigDir}`,
    );
    processes.push(
      await startWorkAgent({
        clusterName: klusterletCluster,
        kubeconfig: env.cluster2.kubeconfigPath,
        hubKubeconfigDir,
        binary: env.bin.work,
        logDir: dir,
      }),
    );
  }, 300_000);

  it("a ManagedClusterSet of both clusters, bound into a namespace: the Placement there selects both by a label, and tether's PlacementDecision lists exactly both", async () => {
    const hubObjects = objects(hub);
    await hubObjects.createClusterCustomObject({
      ...setApi,
      body: {
        apiVersion: `${setApi.group}/${setApi.version}`,
        kind: 'ManagedClusterSet',
        metadata: { name: clusterSet },
        spec: { clusterSelector: { selectorType: 'ExclusiveClusterSetLabel' } },
      },
    });
    for (const name of clusterNames)
      await labelCluster(name, { [clusterSetLabel]: clusterSet, [fleetLabel]: fleetValue });
    await hubObjects.createNamespacedCustomObject({
      ...bindingApi,
      namespace: placementNamespace,
      body: {
        apiVersion: `${bindingApi.group}/${bindingApi.version}`,
        kind: 'ManagedClusterSetBinding',
        metadata: { name: clusterSet, namespace: placementNamespace },
        spec: { clusterSet },
      },
    });
    await hubObjects.createNamespacedCustomObject({
      ...placementApi,
      namespace: placementNamespace,
      body: {
        apiVersion: `${placementApi.group}/${placementApi.version}`,
        kind: 'Placement',
        metadata: { name: placementName, namespace: placementNamespace },
        spec: {
          clusterSets: [clusterSet],
          predicates: [
            { requiredClusterSelector: { labelSelector: { matchLabels: { [fleetLabel]: fleetValue } } } },
          ],
        },
      },
    });
    const decided = await waitWhileAllRun(
      async () => {
        const d = await decidedClusters();
        return d.length === 2 ? d : undefined;
      },
      60_000,
      'the PlacementDecision to list both clusters',
    );
    expect(decided).toEqual([...clusterNames].sort());
    const placement = (await hubObjects.getNamespacedCustomObject({
      ...placementApi,
      namespace: placementNamespace,
      name: placementName,
    })) as Obj & { status?: { numberOfSelectedClusters?: number } };
    expect(placement.status?.numberOfSelectedClusters).toBe(2);
    expect(conditionStatus(placement, 'PlacementSatisfied')).toBe('True');
  }, 120_000);

  it("a ManifestWorkReplicaSet on the Placement lands its ConfigMap on cluster1 (tether's work agent) and cluster2 (OCM's), summary 2 applied and available; a label change drops cluster2's; deleting the set removes the rest", async () => {
    const hubObjects = objects(hub);
    await hubObjects.createNamespacedCustomObject({
      ...replicaSetApi,
      namespace: placementNamespace,
      body: {
        apiVersion: `${replicaSetApi.group}/${replicaSetApi.version}`,
        kind: 'ManifestWorkReplicaSet',
        metadata: { name: replicaSetName, namespace: placementNamespace },
        spec: {
          placementRefs: [{ name: placementName }],
          manifestWorkTemplate: {
            workload: {
              manifests: [
                {
                  apiVersion: 'v1',
                  kind: 'ConfigMap',
                  metadata: { name: configMapName, namespace: workloadNamespace },
                  data: { value: 'fleet' },
                },
              ],
            },
          },
        },
      },
    });
    await waitWhileAllRun(
      async () =>
        (await configMapValue(cluster1)) === 'fleet' && (await configMapValue(cluster2)) === 'fleet',
      120_000,
      'the ConfigMap on cluster1 and cluster2',
    );
    // Each cluster's own work agent applied it: the AppliedManifestWork is on that cluster.
    for (const kc of [cluster1, cluster2]) expect(await appliedWorks(kc)).toHaveLength(1);
    expect(await replicaSetWorkClusters()).toEqual([...clusterNames].sort());

    const both = await waitWhileAllRun(
      async () => {
        const s = await replicaSet();
        return s?.status?.summary?.['available'] === 2 ? s : undefined;
      },
      90_000,
      'the ManifestWorkReplicaSet summary: 2 available',
    );
    expect(both.status?.summary).toMatchObject({
      total: 2,
      applied: 2,
      available: 2,
      degraded: 0,
      progressing: 0,
    });
    expect(conditionStatus(both, ManifestWorkReplicaSetCondition.PlacementVerified)).toBe('True');
    expect(conditionStatus(both, ManifestWorkReplicaSetCondition.ManifestworkApplied)).toBe('True');

    // cluster2 no longer carries the label: the Placement drops it, its work and ConfigMap go.
    await labelCluster(klusterletCluster, { [fleetLabel]: null });
    await waitWhileAllRun(
      async () => {
        const d = await decidedClusters();
        return d.length === 1 && d[0] === tetherCluster;
      },
      60_000,
      `the PlacementDecision to list only ${tetherCluster}`,
    );
    await waitWhileAllRun(
      async () =>
        (await configMapValue(cluster2)) === undefined && (await appliedWorks(cluster2)).length === 0,
      90_000,
      "OCM's work agent to remove the ConfigMap from cluster2",
    );
    expect(await replicaSetWorkClusters()).toEqual([tetherCluster]);
    expect(await configMapValue(cluster1)).toBe('fleet');
    const one = await waitWhileAllRun(
      async () => {
        const s = await replicaSet();
        return s?.status?.summary?.['total'] === 1 ? s : undefined;
      },
      60_000,
      'the ManifestWorkReplicaSet summary: 1 in total',
    );
    expect(one.status?.summary).toMatchObject({ total: 1, applied: 1, available: 1 });

    await hubObjects.deleteNamespacedCustomObject({
      ...replicaSetApi,
      namespace: placementNamespace,
      name: replicaSetName,
    });
    await waitWhileAllRun(
      async () =>
        (await replicaSet()) === undefined &&
        (await replicaSetWorkClusters()).length === 0 &&
        (await configMapValue(cluster1)) === undefined &&
        (await appliedWorks(cluster1)).length === 0,
      90_000,
      "the set and its work gone, tether's work agent removing the ConfigMap from cluster1",
    );
    expect(await configMapValue(cluster2)).toBeUndefined();
    // Nothing was refused: OCM's agents never; tether's agent not since both clusters turned
    // Available (its add-on loops start with its client certificate and may list once before
    // clusteradm accept's hubAcceptsClient brings the cluster's RBAC; they retry within a second).
    expect(processes.filter((p) => p !== tetherAgent).flatMap((p) => forbiddenLines(p.logFile))).toEqual([]);
    expect(forbiddenLines(tetherAgent?.logFile ?? '').slice(tetherAgentForbiddenWhileJoining)).toEqual([]);
  }, 300_000);
});
