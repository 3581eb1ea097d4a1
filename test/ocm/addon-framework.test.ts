import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AppsV1Api,
  CertificatesV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterNameLabel, ManagedClusterCondition, managedCrds } from '../../src/api/index.ts';
import { installCrds } from '../../src/localenv/crds.ts';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { getToken, joinBootstrapKubeconfig } from '../e2e/fixtures/clusteradm.ts';
import { adminKubeConfig, uniqueName } from '../e2e/fixtures/helpers.ts';
import { ocmBinDir } from './fixtures/binaries.ts';
import { ocmEnv } from './fixtures/env.ts';
import { klusterletNamespace, startRegistrationAgent, startWorkAgent } from './fixtures/klusterlet-agents.ts';
import { tetherCli as tether, waitWhileRunning } from './fixtures/processes.ts';

const env = ocmEnv();
const hub = adminKubeConfig(env.hub);
const dir = mkdtempSync(join(tmpdir(), 'tether-addon-framework-'));

const helloworldBinary = join(ocmBinDir(), 'helloworld');
/** The example's names (examples/helloworld): fixed by the add-on, not by the test. */
const addonName = 'helloworld';
const installNamespace = 'open-cluster-management-agent-addon';
const deployWorkName = `addon-${addonName}-deploy-0`;
const agentDeployment = 'helloworld-agent';
const agentClusterRoleBinding = 'helloworld-agent';
const hubKubeconfigSecret = `${addonName}-hub-kubeconfig`;
/** The framework's controller command serves its healthz on this port and has no flag to move it. */
const helloworldServingPort = 8443;

const addonLabel = 'open-cluster-management.io/addon-name';
const cmas = {
  group: 'addon.open-cluster-management.io',
  version: 'v1alpha1',
  plural: 'clustermanagementaddons',
};
const mcas = {
  group: 'addon.open-cluster-management.io',
  version: 'v1alpha1',
  plural: 'managedclusteraddons',
};
const cluster = { group: 'cluster.open-cluster-management.io', version: 'v1', plural: 'managedclusters' };
const work = { group: 'work.open-cluster-management.io', version: 'v1', plural: 'manifestworks' };
const appliedWork = {
  group: 'work.open-cluster-management.io',
  version: 'v1',
  plural: 'appliedmanifestworks',
};

interface Managed {
  /** ManagedCluster name on the hub */
  name: string;
  which: 'tether agent' | "OCM's klusterlet";
  kc: KubeConfig;
  kubeconfigPath: string;
}

const tetherCluster: Managed = {
  name: uniqueName('af-tether'),
  which: 'tether agent',
  kc: adminKubeConfig(env.cluster1),
  kubeconfigPath: env.cluster1.kubeconfigPath,
};
const klusterletCluster: Managed = {
  name: uniqueName('af-ocm'),
  which: "OCM's klusterlet",
  kc: adminKubeConfig(env.cluster2),
  kubeconfigPath: env.cluster2.kubeconfigPath,
};
const clusters = [tetherCluster, klusterletCluster];
/** tether agent's own namespace on cluster1 (its bootstrap and hub-kubeconfig secrets). */
const tetherAgentNamespace = uniqueName('af-agent');
const klusterletBootstrapSecret = `${klusterletCluster.name}-bootstrap-hub-kubeconfig`;
const klusterletHubSecret = `${klusterletCluster.name}-hub-kubeconfig-secret`;

const processes: SupervisedProcess[] = [];
let hubProcess: SupervisedProcess | undefined;
let manager: SupervisedProcess | undefined;
let createdKlusterletNamespace = false;
let createdCma = false;

type Condition = { type: string; status: string; reason?: string; message?: string };
type Obj = {
  metadata: { name: string; namespace?: string; finalizers?: string[] };
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[]; registrations?: Registration[]; namespace?: string };
};
type Registration = { signerName: string; subject?: { user?: string; groups?: string[] } };

const conditionOf = (o: Obj | undefined, type: string): Condition | undefined =>
  o?.status?.conditions?.find((c) => c.type === type);

const absent = (p: Promise<unknown>): Promise<boolean> =>
  p.then(
    () => false,
    () => true,
  );

/** The Go manager can only start when nothing else holds its fixed serving port. */
function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err) =>
      reject(
        new Error(
          `helloworld controller serves on port ${port} (fixed by addon-framework's controller command), which is taken: ${err.message}`,
        ),
      ),
    );
    server.listen(port, () => server.close(() => resolve()));
  });
}

/** pollUntil that gives up at once when a process of this file exits, quoting its log. */
const waitWhileAllRun = <T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
  description: string,
) => waitWhileRunning(() => processes, check, timeoutMs, description);

function supervise(name: string, command: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}) {
  const p = new SupervisedProcess({
    name,
    command,
    args,
    logFile: join(dir, `${name}.log`),
    env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info', ...extraEnv }),
  });
  processes.push(p);
  return p;
}

async function managedCluster(name: string): Promise<Obj | undefined> {
  return (await hub
    .makeApiClient(CustomObjectsApi)
    .getClusterCustomObject({ ...cluster, name })
    .catch(() => undefined)) as Obj | undefined;
}

async function mca(c: Managed): Promise<Obj | undefined> {
  return (await hub
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...mcas, namespace: c.name, name: addonName })
    .catch(() => undefined)) as Obj | undefined;
}

async function bootstrapKubeconfig(): Promise<string> {
  const token = await getToken(hub);
  if (!token) throw new Error('no token for open-cluster-management/agent-registration-bootstrap');
  return joinBootstrapKubeconfig({
    server: env.hub.apiserverUrl,
    caPem: readFileSync(env.hub.caCertPath, 'utf8'),
    token,
    proxyUrl: env.tunnel.squidUrl,
  });
}

/** `tether accept` until the cluster is accepted, then Joined. */
async function acceptAndJoin(c: Managed): Promise<Obj> {
  return waitWhileAllRun(
    async () => {
      if (!(await managedCluster(c.name))) return undefined;
      const r = await tether(['accept', '--clusters', c.name, '--kubeconfig', env.hub.kubeconfigPath]);
      if (r.code !== 0) return undefined;
      const mc = await managedCluster(c.name);
      return conditionOf(mc, ManagedClusterCondition.Joined)?.status === 'True' ? mc : undefined;
    },
    180_000,
    `${c.which} on ${c.name} accepted and Joined`,
  );
}

async function agentDeploymentOn(c: Managed) {
  return c.kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: agentDeployment, namespace: installNamespace })
    .catch(() => undefined);
}

async function addonCsrs(c: Managed) {
  const list = await hub.makeApiClient(CertificatesV1Api).listCertificateSigningRequest({
    labelSelector: `${clusterNameLabel}=${c.name},${addonLabel}=${addonName}`,
  });
  return list.items;
}

beforeAll(async () => {
  try {
    accessSync(helloworldBinary, constants.X_OK);
  } catch {
    throw new Error(
      `addon-framework's helloworld example is missing or not executable at ${helloworldBinary}: build open-cluster-management-io/addon-framework cmd/example/helloworld there (or set OCM_BIN to its directory)`,
    );
  }
  await assertPortFree(helloworldServingPort);
  const init = await tether([
    'init',
    '--bootstrap-only',
    '--kubeconfig',
    env.hub.kubeconfigPath,
    '--ca-out',
    join(dir, 'hub-ca.crt'),
  ]);
  if (init.code !== 0) throw new Error(`tether init failed: ${init.stderr}`);
  // What OCM's klusterlet operator (cluster2) or tether agent (cluster1) would install: OCM's CRDs.
  for (const c of clusters) await installCrds(c.kc, managedCrds());
  const core2 = klusterletCluster.kc.makeApiClient(CoreV1Api);
  if (!(await core2.readNamespace({ name: klusterletNamespace }).catch(() => undefined))) {
    await core2.createNamespace({ body: { metadata: { name: klusterletNamespace } } });
    createdKlusterletNamespace = true;
  }
  // OCM's klusterlet operator creates the add-on agents' namespace next to its own; the Go
  // framework's ManifestWork does not carry it. (tether agent makes it on cluster1 itself.)
  await core2.createNamespace({ body: { metadata: { name: installNamespace } } }).catch(() => {});
  const hubLog = join(dir, 'tether-hub.log');
  hubProcess = supervise('tether-hub', process.execPath, [
    tetherBin,
    'hub',
    `--kubeconfig=${env.hub.kubeconfigPath}`,
    '--no-leader-elect',
    `--ops-port=${await freePort()}`,
  ]);
  await waitWhileAllRun(
    async () => existsSync(hubLog) && readFileSync(hubLog, 'utf8').includes('hub started'),
    90_000,
    'tether hub to start',
  );
});

afterAll(async () => {
  const objects = hub.makeApiClient(CustomObjectsApi);
  const quietly = (p: Promise<unknown>) => p.catch(() => {});
  // Disable first, while the manager and the work agents still run and can remove the agent.
  for (const c of clusters)
    await quietly(objects.deleteNamespacedCustomObject({ ...mcas, namespace: c.name, name: addonName }));
  await pollUntil(
    async () => (await Promise.all(clusters.map(agentDeploymentOn))).every((d) => d === undefined),
    { timeoutMs: 60_000, description: 'the helloworld agents removed' },
  ).catch(() => {});
  await manager?.stop(5000);
  if (createdCma) await quietly(objects.deleteClusterCustomObject({ ...cmas, name: addonName }));
  for (const p of processes.filter((x) => x !== hubProcess)) await p.stop(5000);
  const names = clusters.map((c) => c.name);
  for (const name of names) await quietly(objects.deleteClusterCustomObject({ ...cluster, name }));
  await pollUntil(async () => (await Promise.all(names.map(managedCluster))).every((mc) => !mc), {
    timeoutMs: 60_000,
    description: 'the ManagedClusters deleted by tether hub',
  }).catch(async () => {
    for (const name of names)
      await quietly(
        objects.patchClusterCustomObject(
          { ...cluster, name, body: { metadata: { finalizers: null } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      );
  });
  await hubProcess?.stop(10_000);
  const hubCore = hub.makeApiClient(CoreV1Api);
  const certs = hub.makeApiClient(CertificatesV1Api);
  for (const name of names) {
    await quietly(hubCore.deleteNamespace({ name }));
    const csrs = await certs
      .listCertificateSigningRequest({ labelSelector: `${clusterNameLabel}=${name}` })
      .catch(() => ({ items: [] }));
    for (const csr of csrs.items)
      await quietly(certs.deleteCertificateSigningRequest({ name: csr.metadata?.name ?? '' }));
  }
  // The managed clusters: what the works applied (if the disable did not get to it), the work
  // agents' AppliedManifestWorks (their finalizers need the stopped agents), secrets, namespaces.
  for (const c of clusters) {
    const managedObjects = c.kc.makeApiClient(CustomObjectsApi);
    const applied = (await managedObjects
      .listClusterCustomObject(appliedWork)
      .catch(() => ({ items: [] }))) as {
      items: Obj[];
    };
    for (const a of applied.items.filter((i) =>
      String(i.spec?.manifestWorkName).startsWith(`addon-${addonName}-`),
    )) {
      await quietly(
        managedObjects.patchClusterCustomObject(
          { ...appliedWork, name: a.metadata.name, body: { metadata: { finalizers: null } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        ),
      );
      await quietly(managedObjects.deleteClusterCustomObject({ ...appliedWork, name: a.metadata.name }));
    }
    await quietly(
      c.kc.makeApiClient(RbacAuthorizationV1Api).deleteClusterRoleBinding({ name: agentClusterRoleBinding }),
    );
  }
  const core1 = tetherCluster.kc.makeApiClient(CoreV1Api);
  const core2 = klusterletCluster.kc.makeApiClient(CoreV1Api);
  for (const name of [klusterletBootstrapSecret, klusterletHubSecret])
    await quietly(core2.deleteNamespacedSecret({ name, namespace: klusterletNamespace }));
  const namespaces: [CoreV1Api, string][] = [
    [core1, tetherAgentNamespace],
    [core1, installNamespace],
    [core2, installNamespace],
    ...(createdKlusterletNamespace ? [[core2, klusterletNamespace] as [CoreV1Api, string]] : []),
  ];
  for (const [core, name] of namespaces) await quietly(core.deleteNamespace({ name }));
  // The next file may create these namespaces again: wait until they are really gone.
  await pollUntil(
    async () =>
      (await Promise.all(namespaces.map(([core, name]) => absent(core.readNamespace({ name }))))).every(
        Boolean,
      ),
    { timeoutMs: 60_000, description: 'the namespaces on cluster1 and cluster2 deleted' },
  ).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

describe("addon-framework's helloworld add-on, managed by tether's hub, on tether's and OCM's agents", () => {
  it("tether agent joins cluster1 and OCM's klusterlet agents join cluster2; the Go add-on manager starts against tether's hub", async () => {
    // cluster1: tether agent with the clusteradm-style bootstrap secret in its own namespace
    const kubeconfig = await bootstrapKubeconfig();
    const core1 = tetherCluster.kc.makeApiClient(CoreV1Api);
    await core1.createNamespace({ body: { metadata: { name: tetherAgentNamespace } } });
    await core1.createNamespacedSecret({
      namespace: tetherAgentNamespace,
      body: {
        metadata: { name: 'bootstrap-hub-kubeconfig', namespace: tetherAgentNamespace },
        stringData: { kubeconfig },
      },
    });
    supervise('tether-agent', process.execPath, [
      tetherBin,
      'agent',
      `--cluster-name=${tetherCluster.name}`,
      `--kubeconfig=${tetherCluster.kubeconfigPath}`,
      `--agent-namespace=${tetherAgentNamespace}`,
      '--no-serviceaccount',
      '--status-sync-interval=5',
      `--ops-port=${await freePort()}`,
    ]);

    // cluster2: OCM's registration and work agents, as klusterlet.test.ts runs them
    await klusterletCluster.kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: klusterletNamespace,
      body: {
        metadata: { name: klusterletBootstrapSecret, namespace: klusterletNamespace },
        stringData: { kubeconfig },
      },
    });
    const agentDir = join(dir, klusterletCluster.name);
    const hubKubeconfigDir = join(agentDir, 'hub-kubeconfig');
    mkdirSync(hubKubeconfigDir, { recursive: true });
    const bootstrapFile = join(agentDir, 'bootstrap-kubeconfig');
    writeFileSync(bootstrapFile, kubeconfig, { mode: 0o600 });
    processes.push(
      await startRegistrationAgent({
        clusterName: klusterletCluster.name,
        kubeconfig: klusterletCluster.kubeconfigPath,
        bootstrapKubeconfig: bootstrapFile,
        bootstrapSecret: klusterletBootstrapSecret,
        hubKubeconfigSecret: klusterletHubSecret,
        hubKubeconfigDir,
        binary: env.bin.registration,
        logDir: dir,
      }),
    );

    for (const c of clusters) {
      const mc = await acceptAndJoin(c);
      expect(mc.spec?.hubAcceptsClient).toBe(true);
    }
    // the work agent reads the hub credential the registration agent wrote once accepted
    await waitWhileAllRun(
      async () => existsSync(join(hubKubeconfigDir, 'kubeconfig')),
      60_000,
      `${klusterletCluster.name}'s hub kubeconfig in ${hubKubeconfigDir}`,
    );
    processes.push(
      await startWorkAgent({
        clusterName: klusterletCluster.name,
        kubeconfig: klusterletCluster.kubeconfigPath,
        hubKubeconfigDir,
        binary: env.bin.work,
        logDir: dir,
      }),
    );

    // the add-on: its ClusterManagementAddOn as the example deploys it (without the Placement
    // install strategy: this test enables it per cluster), then its Go manager
    await hub.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      ...cmas,
      body: {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'ClusterManagementAddOn',
        metadata: { name: addonName },
        spec: {
          addOnMeta: {
            displayName: addonName,
            description: 'addon-framework example, run by the tether interop suite',
          },
          supportedConfigs: [
            { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' },
          ],
        },
      },
    });
    createdCma = true;
    // TMPDIR: the controller writes its self-signed serving certificate into a fresh temp dir
    manager = supervise(
      'helloworld-controller',
      helloworldBinary,
      ['controller', `--kubeconfig=${env.hub.kubeconfigPath}`, '--v=2'],
      {
        TMPDIR: dir,
      },
    );
    const started = manager;
    await waitWhileAllRun(
      async () =>
        existsSync(started.logFile) && /Starting|started/i.test(readFileSync(started.logFile, 'utf8')),
      60_000,
      'helloworld controller to start',
    );
  }, 300_000);

  it("enabling helloworld on both clusters: each cluster's work agent applies the Go manager's ManifestWork addon-helloworld-deploy-0 (agent Deployment, ServiceAccount, ClusterRoleBinding)", async () => {
    const objects = hub.makeApiClient(CustomObjectsApi);
    for (const c of clusters)
      await objects.createNamespacedCustomObject({
        ...mcas,
        namespace: c.name,
        body: {
          apiVersion: 'addon.open-cluster-management.io/v1alpha1',
          kind: 'ManagedClusterAddOn',
          metadata: { name: addonName, namespace: c.name },
          spec: {},
        },
      });
    for (const c of clusters) {
      const mw = await waitWhileAllRun(
        () =>
          objects
            .getNamespacedCustomObject({ ...work, namespace: c.name, name: deployWorkName })
            .catch(() => undefined) as Promise<Obj | undefined>,
        90_000,
        `the Go manager's ManifestWork ${deployWorkName} in ${c.name}`,
      );
      const workload = mw.spec?.workload as
        | { manifests: { kind: string; metadata: { name: string } }[] }
        | undefined;
      const manifests = workload?.manifests ?? [];
      expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual(
        expect.arrayContaining([`Deployment/${agentDeployment}`, 'ServiceAccount/helloworld-agent-sa']),
      );
      const deployment = await waitWhileAllRun(
        () => agentDeploymentOn(c),
        120_000,
        `${c.which}'s work agent to apply ${agentDeployment} on ${c.name}`,
      );
      expect(deployment.spec?.template.spec?.containers[0]?.args).toContain(`--cluster-name=${c.name}`);
      const sa = await c.kc
        .makeApiClient(CoreV1Api)
        .readNamespacedServiceAccount({ name: 'helloworld-agent-sa', namespace: installNamespace });
      expect(sa.metadata?.name).toBe('helloworld-agent-sa');
      const crb = await c.kc
        .makeApiClient(RbacAuthorizationV1Api)
        .readClusterRoleBinding({ name: agentClusterRoleBinding });
      expect(crb.subjects?.[0]).toMatchObject({ name: 'helloworld-agent-sa', namespace: installNamespace });
      const applied = await waitWhileAllRun(
        async () => {
          const w = (await objects.getNamespacedCustomObject({
            ...work,
            namespace: c.name,
            name: deployWorkName,
          })) as Obj;
          return conditionOf(w, 'Applied')?.status === 'True' ? w : undefined;
        },
        60_000,
        `${deployWorkName} in ${c.name} Applied`,
      );
      expect(conditionOf(applied, 'Applied')?.status).toBe('True');
    }
  }, 300_000);

  it("the add-on's registration: the framework sets status.registrations, each cluster's registration agent asks by CSR, the Go manager approves it, helloworld-hub-kubeconfig is written in the install namespace", async () => {
    for (const c of clusters) {
      const withRegistration = await waitWhileAllRun(
        async () => {
          const a = await mca(c);
          return a?.status?.registrations?.length ? a : undefined;
        },
        60_000,
        `status.registrations of ${addonName} in ${c.name}`,
      );
      const [registration, ...more] = withRegistration.status?.registrations ?? [];
      expect(more).toEqual([]);
      expect(registration?.signerName).toBe('kubernetes.io/kube-apiserver-client');
      expect(registration?.subject?.user).toMatch(
        new RegExp(`^system:open-cluster-management:cluster:${c.name}:addon:${addonName}:agent:\\w+$`),
      );
      expect(registration?.subject?.groups).toEqual(
        expect.arrayContaining([`system:open-cluster-management:cluster:${c.name}:addon:${addonName}`]),
      );

      const approved = await waitWhileAllRun(
        async () =>
          (await addonCsrs(c)).find((csr) =>
            csr.status?.conditions?.some((x) => x.type === 'Approved' && x.status === 'True'),
          ),
        120_000,
        `${c.which}'s CSR for ${addonName} on ${c.name} approved`,
      );
      expect(approved.spec.signerName).toBe('kubernetes.io/kube-apiserver-client');
      // the requester is the cluster's agent identity, the approver the Go manager's CSR controller
      expect(approved.spec.username).toMatch(new RegExp(`^system:open-cluster-management:${c.name}:`));
      expect(approved.status?.conditions?.find((x) => x.type === 'Approved')?.reason).toBe(
        'AutoApprovedByHubCSRApprovingController',
      );

      const secret = await waitWhileAllRun(
        () =>
          c.kc
            .makeApiClient(CoreV1Api)
            .readNamespacedSecret({ name: hubKubeconfigSecret, namespace: installNamespace })
            .then((s) => (s.data?.['tls.crt'] ? s : undefined))
            .catch(() => undefined),
        120_000,
        `${hubKubeconfigSecret} in ${installNamespace} on ${c.name}`,
      );
      expect(Object.keys(secret.data ?? {})).toEqual(
        expect.arrayContaining(['kubeconfig', 'tls.crt', 'tls.key']),
      );
      const kubeconfig = Buffer.from(secret.data?.kubeconfig ?? '', 'base64').toString('utf8');
      expect(kubeconfig).toContain(env.hub.apiserverUrl);
    }
  }, 300_000);

  it('each ManagedClusterAddOn carries the conditions the Go framework sets: RegistrationApplied and ManifestApplied True', async () => {
    for (const c of clusters) {
      const a = await waitWhileAllRun(
        async () => {
          const x = await mca(c);
          return conditionOf(x, 'RegistrationApplied')?.status === 'True' &&
            conditionOf(x, 'ManifestApplied')?.status === 'True'
            ? x
            : undefined;
        },
        90_000,
        `${addonName} in ${c.name} RegistrationApplied and ManifestApplied`,
      );
      expect(conditionOf(a, 'ManifestApplied')?.reason).toBe('AddonManifestApplied');
      expect(conditionOf(a, 'RegistrationApplied')?.reason).toBe('SetPermissionApplied');
      expect(a.status?.namespace).toBe(installNamespace);
    }
  }, 300_000);

  it('disabling the add-on (deleting both ManagedClusterAddOns) removes its ManifestWork and its agent from both clusters', async () => {
    const objects = hub.makeApiClient(CustomObjectsApi);
    for (const c of clusters)
      await objects.deleteNamespacedCustomObject({ ...mcas, namespace: c.name, name: addonName });
    for (const c of clusters) {
      await waitWhileAllRun(
        async () =>
          (await absent(
            objects.getNamespacedCustomObject({ ...mcas, namespace: c.name, name: addonName }),
          )) &&
          (await absent(
            objects.getNamespacedCustomObject({ ...work, namespace: c.name, name: deployWorkName }),
          )),
        90_000,
        `${addonName}'s ManagedClusterAddOn and ${deployWorkName} gone from ${c.name}`,
      );
      await waitWhileAllRun(
        async () =>
          (await agentDeploymentOn(c)) === undefined &&
          (await absent(
            c.kc
              .makeApiClient(RbacAuthorizationV1Api)
              .readClusterRoleBinding({ name: agentClusterRoleBinding }),
          )),
        90_000,
        `${c.which}'s work agent to remove ${agentDeployment} and ${agentClusterRoleBinding} from ${c.name}`,
      );
    }
  }, 300_000);
});
