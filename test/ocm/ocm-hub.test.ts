// tether's agent against OCM's own hub: cluster1 becomes an OCM hub (OCM's CRDs, webhook
// configurations and bootstrap objects read from an OCM checkout; OCM's `registration controller`,
// `placement controller`, `addon manager` and the registration, work and add-on webhook servers as
// host processes), and a real `tether agent` on cluster2 joins it the way a klusterlet would: its
// CSR approved and the cluster accepted by the real `clusteradm accept`, Joined and Available on
// OCM's hub with its lease renewed, a ManifestWork created on the hub applied, updated and deleted
// on cluster2, a Placement decided by OCM's placement controller selecting the tether-joined
// cluster, and an AddOnTemplate add-on whose CSR OCM's add-on manager approves.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificatesV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type V1CertificateSigningRequest,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { type PollOptions, pollUntil } from '../../src/wait.ts';
import { getToken, joinBootstrapKubeconfig } from '../e2e/fixtures/clusteradm.ts';
import { adminKubeConfig, uniqueName } from '../e2e/fixtures/helpers.ts';
import { ocmBinDir } from './fixtures/binaries.ts';
import { ocmEnv } from './fixtures/env.ts';
import {
  emptyOcmHubInstall,
  installOcmHub,
  installOcmWebhooks,
  type OcmHubInstall,
  ocmSourceDir,
  removeOcmHub,
  removeOcmWebhooks,
  startOcmController,
  startOcmWebhookServer,
  writeWebhookServingCert,
} from './fixtures/ocm-hub-install.ts';

const env = ocmEnv();
const ocmHubKubeconfig = env.cluster1.kubeconfigPath;
const ocmHub = adminKubeConfig(env.cluster1);
const managed = adminKubeConfig(env.cluster2);
const dir = mkdtempSync(join(tmpdir(), 'tether-ocm-hub-'));
const clusterName = uniqueName('ocmhub');
const agentNamespace = uniqueName('ocmhub-agent');
const workNamespace = uniqueName('ocmhub-work');
const placementNamespace = uniqueName('ocmhub-placement');
const addonName = uniqueName('ocmhub-addon');
const addonInstallNamespace = uniqueName('ocmhub-addon-agent');
/** OCM's add-on manager and conversion webhook: not among the suite's required binaries, beside them in OCM_BIN. */
const addonBinary = join(ocmBinDir(), 'addon');
const clusterSet = uniqueName('ocmhub-set');
/** Put on everything OCM's registration controller creates (its --labels), so all of it can be removed. */
const runLabel = { key: 'tether.test/ocm-hub', value: clusterName };
const leaseDurationSeconds = 10;
const processes: SupervisedProcess[] = [];
const installed: OcmHubInstall = emptyOcmHubInstall();
let agent: SupervisedProcess | undefined;

const cluster = { group: 'cluster.open-cluster-management.io', version: 'v1', plural: 'managedclusters' };
const work = { group: 'work.open-cluster-management.io', version: 'v1', plural: 'manifestworks' };
const clusterSets = {
  group: 'cluster.open-cluster-management.io',
  version: 'v1beta2',
  plural: 'managedclustersets',
};
const placements = { group: 'cluster.open-cluster-management.io', version: 'v1beta1', plural: 'placements' };
const addonApi = { group: 'addon.open-cluster-management.io', version: 'v1alpha1' };
const managedClusterAddOns = { ...addonApi, plural: 'managedclusteraddons' };
const decisions = {
  group: 'cluster.open-cluster-management.io',
  version: 'v1beta1',
  plural: 'placementdecisions',
};

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface OcmObject {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; finalizers?: string[] };
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[] } & Record<string, unknown>;
}

const conditionStatus = (obj: OcmObject | undefined, type: string) =>
  obj?.status?.conditions?.find((c) => c.type === type)?.status;

function clusteradm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      env.bin.clusteradm,
      [...args, `--kubeconfig=${ocmHubKubeconfig}`],
      { timeout: 60_000, env: localChildEnv() },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

async function clusteradmOk(args: string[]): Promise<string> {
  const r = await clusteradm(args);
  if (r.code !== 0)
    throw new Error(`clusteradm ${args.join(' ')} failed (${r.code}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Every process's last lines, for a failure message: the agent's and OCM's controllers' view. */
function logs(): string {
  return processes.map((p) => `--- ${p.name}${p.running ? '' : ' (exited)'}:\n${p.tail(25)}`).join('\n');
}

/** pollUntil, with every process's last lines (as they are at the deadline) in the timeout error. */
async function waitFor<T>(check: () => Promise<T | undefined | false>, opts: PollOptions): Promise<T> {
  try {
    return await pollUntil(check, opts);
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logs()}`);
  }
}

function assertRunning(): void {
  for (const p of processes) if (!p.running) throw new Error(`${p.name} exited:\n${p.tail(40)}`);
}

async function managedCluster(): Promise<OcmObject | undefined> {
  return (await ocmHub
    .makeApiClient(CustomObjectsApi)
    .getClusterCustomObject({ ...cluster, name: clusterName })
    .catch(() => undefined)) as OcmObject | undefined;
}

async function configMapValue(name: string): Promise<string | undefined> {
  const cm = await managed
    .makeApiClient(CoreV1Api)
    .readNamespacedConfigMap({ name, namespace: workNamespace })
    .catch(() => undefined);
  return cm?.data?.value;
}

function manifestWork(name: string, value: string) {
  return {
    apiVersion: 'work.open-cluster-management.io/v1',
    kind: 'ManifestWork',
    metadata: { name, namespace: clusterName },
    spec: {
      workload: {
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'ocm-hub-cm', namespace: workNamespace },
            data: { value },
          },
        ],
      },
    },
  };
}

async function readWork(name: string): Promise<OcmObject | undefined> {
  return (await ocmHub
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...work, namespace: clusterName, name })
    .catch(() => undefined)) as OcmObject | undefined;
}

beforeAll(async () => {
  const src = ocmSourceDir();
  const certDir = join(dir, 'webhook-certs');
  const caPem = await writeWebhookServingCert(certDir);
  // OCM's conversion webhook for the add-on APIs first: the add-on CRDs are installed pointing at it.
  const conversion = await startOcmWebhookServer({
    server: 'addon',
    binary: addonBinary,
    kubeconfigPath: ocmHubKubeconfig,
    certDir,
    logFile: join(dir, 'addon-webhook.log'),
  });
  processes.push(conversion.process);
  await installOcmHub(ocmHub, ocmHubKubeconfig, src, { url: conversion.url, caPem }, installed);
  // OCM's admission webhooks as host processes: the registration one labels a new cluster into the
  // `default` set and judges every ManagedCluster write (the agent's included), work's every ManifestWork write.
  for (const server of ['registration', 'work'] as const) {
    const webhook = await startOcmWebhookServer({
      server,
      binary: env.bin[server],
      kubeconfigPath: ocmHubKubeconfig,
      certDir,
      logFile: join(dir, `${server}-webhook.log`),
    });
    processes.push(webhook.process);
    await installOcmWebhooks(installed, ocmHubKubeconfig, {
      src,
      server,
      url: webhook.url,
      caPem,
      labels: { [runLabel.key]: runLabel.value },
    });
  }
  processes.push(
    await startOcmController({
      name: 'ocm-registration-controller',
      binary: env.bin.registration,
      kubeconfigPath: ocmHubKubeconfig,
      logFile: join(dir, 'registration-controller.log'),
      extraArgs: [`--labels=${runLabel.key}=${runLabel.value}`],
    }),
    await startOcmController({
      name: 'ocm-placement-controller',
      binary: env.bin.placement,
      kubeconfigPath: ocmHubKubeconfig,
      logFile: join(dir, 'placement-controller.log'),
    }),
    await startOcmController({
      name: 'ocm-addon-manager',
      binary: addonBinary,
      subcommand: 'manager',
      kubeconfigPath: ocmHubKubeconfig,
      logFile: join(dir, 'addon-manager.log'),
    }),
  );
  await managed.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: workNamespace } } });
  await ocmHub.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: placementNamespace } } });
});

afterAll(async () => {
  const objects = ocmHub.makeApiClient(CustomObjectsApi);
  const steps: Array<() => Promise<unknown>> = [
    // The add-on first, while OCM's add-on manager and tether's agent run to undo what they did for it.
    async () => {
      await objects.deleteNamespacedCustomObject({
        ...managedClusterAddOns,
        namespace: clusterName,
        name: addonName,
      });
      await pollUntil(
        () =>
          objects
            .getNamespacedCustomObject({ ...managedClusterAddOns, namespace: clusterName, name: addonName })
            .then(
              () => false,
              () => true,
            ),
        { timeoutMs: 30_000, description: `ManagedClusterAddOn ${addonName} gone` },
      );
    },
    async () =>
      objects.deleteClusterCustomObject({ ...addonApi, plural: 'clustermanagementaddons', name: addonName }),
    async () => objects.deleteClusterCustomObject({ ...addonApi, plural: 'addontemplates', name: addonName }),
    // Works first, while tether's work agent still runs to take its finalizer off them.
    async () => {
      const list = (await objects.listNamespacedCustomObject({ ...work, namespace: clusterName })) as {
        items: OcmObject[];
      };
      for (const w of list.items)
        await objects.deleteNamespacedCustomObject({
          ...work,
          namespace: clusterName,
          name: w.metadata.name,
        });
      await pollUntil(
        async () =>
          (
            (await objects.listNamespacedCustomObject({ ...work, namespace: clusterName })) as {
              items: unknown[];
            }
          ).items.length === 0,
        { timeoutMs: 30_000, description: 'the ManifestWorks gone' },
      );
    },
    async () => agent?.stop(5000),
    async () => ocmHub.makeApiClient(CoreV1Api).deleteNamespace({ name: placementNamespace }),
    async () => objects.deleteClusterCustomObject({ ...clusterSets, name: clusterSet }),
    // Then the cluster, while OCM's registration controller runs to take its RBAC and finalizer away.
    async () => {
      await objects.deleteClusterCustomObject({ ...cluster, name: clusterName });
      await pollUntil(async () => (await managedCluster()) === undefined, {
        timeoutMs: 30_000,
        description: `ManagedCluster ${clusterName} gone`,
      });
    },
    async () => removeOcmWebhooks(installed, ocmHubKubeconfig),
    async () => {
      for (const p of processes) await p.stop(5000);
    },
    async () => {
      const certs = ocmHub.makeApiClient(CertificatesV1Api);
      const list = await certs.listCertificateSigningRequest({
        labelSelector: `open-cluster-management.io/cluster-name=${clusterName}`,
      });
      for (const csr of list.items)
        await certs.deleteCertificateSigningRequest({ name: csr.metadata?.name ?? '' }).catch(() => {});
    },
    async () => {
      const rbac = ocmHub.makeApiClient(RbacAuthorizationV1Api);
      const labelSelector = `${runLabel.key}=${runLabel.value}`;
      for (const b of (await rbac.listClusterRoleBinding({ labelSelector })).items)
        await rbac.deleteClusterRoleBinding({ name: b.metadata?.name ?? '' }).catch(() => {});
      for (const r of (await rbac.listClusterRole({ labelSelector })).items)
        await rbac.deleteClusterRole({ name: r.metadata?.name ?? '' }).catch(() => {});
    },
    async () => ocmHub.makeApiClient(CoreV1Api).deleteNamespace({ name: clusterName }),
    async () => removeOcmHub(ocmHub, ocmHubKubeconfig, installed),
    async () => {
      const core = managed.makeApiClient(CoreV1Api);
      for (const name of [agentNamespace, workNamespace, addonInstallNamespace])
        await core.deleteNamespace({ name }).catch(() => {});
    },
    // Namespaces finish terminating in the background; wait, so the next file starts from a clean slate.
    async () => {
      const gone = (kc: typeof ocmHub, names: string[]) =>
        Promise.all(
          names.map((name) =>
            kc
              .makeApiClient(CoreV1Api)
              .readNamespace({ name })
              .then(
                () => false,
                () => true,
              ),
          ),
        ).then((all) => all.every(Boolean));
      await pollUntil(
        async () =>
          (await gone(ocmHub, [clusterName, placementNamespace, ...installed.namespaces])) &&
          (await gone(managed, [agentNamespace, workNamespace, addonInstallNamespace])),
        { timeoutMs: 60_000, intervalMs: 500, description: 'the namespaces of this file gone' },
      );
    },
  ];
  const failures: string[] = [];
  for (const step of steps)
    await step().catch((err: unknown) => failures.push(err instanceof Error ? err.message : String(err)));
  rmSync(dir, { recursive: true, force: true });
  if (failures.length > 0 && failures.some((f) => !/not ?found/i.test(f)))
    process.stderr.write(`[ocm-hub cleanup] ${failures.join('\n[ocm-hub cleanup] ')}\n`);
});

describe('tether agent against OCM’s own hub controllers', () => {
  it('OCM’s hub processes run on cluster1: the registration controller creates the default and global ManagedClusterSets', async () => {
    const objects = ocmHub.makeApiClient(CustomObjectsApi);
    const sets = await waitFor(
      async () => {
        assertRunning();
        const list = (await objects.listClusterCustomObject(clusterSets)) as { items: OcmObject[] };
        const names = list.items.map((s) => s.metadata.name);
        return names.includes('default') && names.includes('global') ? names : undefined;
      },
      { timeoutMs: 60_000, description: `OCM's default and global ManagedClusterSets` },
    );
    expect(sets).toEqual(expect.arrayContaining(['default', 'global']));
  });

  it('tether agent on cluster2 asks with the bootstrap token, clusteradm accept approves it, the cluster turns Joined and Available', async () => {
    // As `clusteradm get token` does it (its hub check looks for the operator's ClusterManager CRD,
    // which a hub of bare controllers lacks): a TokenRequest for the bootstrap ServiceAccount.
    const hubToken = await getToken(ocmHub);
    expect(hubToken).not.toBe('');
    const bootstrapPath = join(dir, 'bootstrap.kubeconfig');
    writeFileSync(
      bootstrapPath,
      joinBootstrapKubeconfig({
        server: env.cluster1.apiserverUrl,
        caPem: readFileSync(env.cluster1.caCertPath, 'utf8'),
        token: hubToken,
      }),
    );
    await managed.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: agentNamespace } } });
    agent = new SupervisedProcess({
      name: 'tether-agent',
      command: process.execPath,
      args: [
        tetherBin,
        'agent',
        `--cluster-name=${clusterName}`,
        `--kubeconfig=${env.cluster2.kubeconfigPath}`,
        `--bootstrap-kubeconfig=${bootstrapPath}`,
        `--agent-namespace=${agentNamespace}`,
        '--no-serviceaccount',
        // A short heartbeat, so that renewals of OCM's lease are seen within the test.
        `--lease-duration=${leaseDurationSeconds}`,
        `--ops-port=${await freePort()}`,
      ],
      logFile: join(dir, 'tether-agent.log'),
      env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
    });
    processes.push(agent);

    const certs = ocmHub.makeApiClient(CertificatesV1Api);
    const csr = await waitFor(
      async () => {
        assertRunning();
        const list = await certs.listCertificateSigningRequest({
          labelSelector: `open-cluster-management.io/cluster-name=${clusterName}`,
        });
        return list.items[0];
      },
      { timeoutMs: 60_000, description: `the agent's CSR on OCM's hub` },
    );
    expect(csr.spec.username).toBe(
      `system:serviceaccount:open-cluster-management:agent-registration-bootstrap`,
    );
    expect(await managedCluster()).toBeDefined();

    const out = await waitFor(
      async () => {
        assertRunning();
        return clusteradmOk(['accept', `--clusters=${clusterName}`]);
      },
      { timeoutMs: 60_000, description: `clusteradm accept --clusters ${clusterName}` },
    );
    expect(out).toContain(`CSR ${csr.metadata?.name} approved`);
    const approved = (await certs.readCertificateSigningRequest({
      name: csr.metadata?.name ?? '',
    })) as V1CertificateSigningRequest;
    expect(approved.status?.conditions?.find((c) => c.type === 'Approved')?.status).toBe('True');

    const joined = await waitFor(
      async () => {
        assertRunning();
        const mc = await managedCluster();
        return [
          'HubAcceptedManagedCluster',
          'ManagedClusterJoined',
          'ManagedClusterConditionAvailable',
        ].every((t) => conditionStatus(mc, t) === 'True')
          ? mc
          : undefined;
      },
      {
        timeoutMs: 120_000,
        description: `ManagedCluster ${clusterName} accepted, Joined and Available on OCM's hub`,
      },
    );
    expect(joined.spec?.hubAcceptsClient).toBe(true);
    expect(joined.status?.version).toMatchObject({ kubernetes: expect.stringMatching(/^v1\.\d+/) });

    expect(joined.spec?.leaseDurationSeconds).toBe(leaseDurationSeconds);

    // OCM's hub creates managed-cluster-lease in the cluster namespace and turns Available Unknown
    // when it is not renewed; the agent renews it every leaseDurationSeconds.
    const leases = ocmHub.makeApiClient(CoordinationV1Api);
    const renewTime = async () => {
      const lease = await leases.readNamespacedLease({
        name: 'managed-cluster-lease',
        namespace: clusterName,
      });
      return new Date(lease.spec?.renewTime ?? 0).getTime();
    };
    const first = await waitFor(renewTime, { timeoutMs: 30_000, description: 'managed-cluster-lease' });
    const renewed = await waitFor(
      async () => {
        const t = await renewTime();
        return t > first ? t : undefined;
      },
      {
        timeoutMs: leaseDurationSeconds * 3 * 1000,
        description: 'managed-cluster-lease renewed by the agent',
      },
    );
    expect(renewed).toBeGreaterThan(first);
    expect(conditionStatus(await managedCluster(), 'ManagedClusterConditionAvailable')).toBe('True');

    // `get clusters` reads what OCM's hub holds.
    const tree = await waitFor(
      async () => {
        const text = await clusteradmOk(['get', 'clusters']);
        return text.includes(`<${clusterName}>`) ? text : undefined;
      },
      { timeoutMs: 30_000, description: 'clusteradm get clusters lists the cluster' },
    );
    expect(tree).toMatch(/<Accepted> true/);
    expect(tree).toMatch(/<Available> True/);
    expect(tree).toMatch(/<KubernetesVersion> v1\.\d+/);
    // OCM's mutating webhook put the new cluster into the `default` set.
    expect(tree).toMatch(/<ClusterSet> default/);
    expect(joined.metadata.labels?.['cluster.open-cluster-management.io/clusterset']).toBe('default');
  });

  it('a ManifestWork on OCM’s hub is applied on cluster2 by tether’s work agent, Applied and Available; update and delete reach cluster2', async () => {
    const objects = ocmHub.makeApiClient(CustomObjectsApi);
    await objects.createNamespacedCustomObject({
      ...work,
      namespace: clusterName,
      body: manifestWork('ocm-hub-work', 'one'),
    });
    const applied = await waitFor(
      async () => {
        assertRunning();
        const w = await readWork('ocm-hub-work');
        return conditionStatus(w, 'Applied') === 'True' && conditionStatus(w, 'Available') === 'True'
          ? w
          : undefined;
      },
      { timeoutMs: 90_000, description: `the ManifestWork Applied and Available` },
    );
    expect(await configMapValue('ocm-hub-cm')).toBe('one');
    const manifests = (applied.status?.resourceStatus as { manifests?: { conditions?: Condition[] }[] })
      ?.manifests;
    expect(manifests).toHaveLength(1);
    expect(manifests?.[0]?.conditions?.find((c) => c.type === 'Applied')?.status).toBe('True');

    await objects.patchNamespacedCustomObject({
      ...work,
      namespace: clusterName,
      name: 'ocm-hub-work',
      body: [{ op: 'replace', path: '/spec/workload/manifests/0/data/value', value: 'two' }],
    });
    await waitFor(async () => (await configMapValue('ocm-hub-cm')) === 'two', {
      timeoutMs: 60_000,
      description: `the updated ManifestWork applied on cluster2`,
    });

    await objects.deleteNamespacedCustomObject({ ...work, namespace: clusterName, name: 'ocm-hub-work' });
    await waitFor(
      async () =>
        (await readWork('ocm-hub-work')) === undefined && (await configMapValue('ocm-hub-cm')) === undefined,
      { timeoutMs: 60_000, description: `the ManifestWork and its ConfigMap gone` },
    );
  });

  it('a Placement bound to a cluster set holding the tether-joined cluster selects it in OCM’s PlacementDecision', async () => {
    await clusteradmOk(['create', 'clusterset', clusterSet]);
    await clusteradmOk(['clusterset', 'set', clusterSet, `--clusters=${clusterName}`]);
    await clusteradmOk(['clusterset', 'bind', clusterSet, `--namespace=${placementNamespace}`]);
    await clusteradmOk([
      'create',
      'placement',
      'ocm-hub-placement',
      `--clustersets=${clusterSet}`,
      `--namespace=${placementNamespace}`,
    ]);
    const objects = ocmHub.makeApiClient(CustomObjectsApi);
    const decided = await waitFor(
      async () => {
        assertRunning();
        const list = (await objects.listNamespacedCustomObject({
          ...decisions,
          namespace: placementNamespace,
          labelSelector: 'cluster.open-cluster-management.io/placement=ocm-hub-placement',
        })) as { items: OcmObject[] };
        const chosen = list.items.flatMap(
          (d) =>
            (d.status?.decisions as { clusterName: string }[] | undefined)?.map((x) => x.clusterName) ?? [],
        );
        return chosen.length > 0 ? chosen : undefined;
      },
      { timeoutMs: 60_000, description: `OCM's PlacementDecision for ocm-hub-placement` },
    );
    expect(decided).toEqual([clusterName]);
    // The Placement's own status follows its decisions in a later write of the controller.
    const placement = await waitFor(
      async () => {
        const p = (await objects.getNamespacedCustomObject({
          ...placements,
          namespace: placementNamespace,
          name: 'ocm-hub-placement',
        })) as OcmObject;
        return p.status?.numberOfSelectedClusters !== undefined ? p : undefined;
      },
      { timeoutMs: 30_000, description: `the Placement's status` },
    );
    expect(placement.status?.numberOfSelectedClusters).toBe(1);
    expect(conditionStatus(placement, 'PlacementSatisfied')).toBe('True');
  });

  it('an add-on from an AddOnTemplate: OCM’s add-on manager approves the CSR tether’s agent makes for it, tether writes its hub kubeconfig and applies its agent’s work', async () => {
    const objects = ocmHub.makeApiClient(CustomObjectsApi);
    await objects.createNamespacedCustomObject({
      ...addonApi,
      plural: 'addondeploymentconfigs',
      namespace: placementNamespace,
      body: {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'AddOnDeploymentConfig',
        metadata: { name: addonName, namespace: placementNamespace },
        spec: { agentInstallNamespace: addonInstallNamespace },
      },
    });
    await objects.createClusterCustomObject({
      ...addonApi,
      plural: 'addontemplates',
      body: {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'AddOnTemplate',
        metadata: { name: addonName },
        spec: {
          addonName,
          agentSpec: {
            workload: {
              manifests: [
                // OCM's add-on manager moves both into the AddOnDeploymentConfig's agentInstallNamespace.
                {
                  apiVersion: 'v1',
                  kind: 'Namespace',
                  metadata: { name: 'open-cluster-management-agent-addon' },
                },
                {
                  apiVersion: 'v1',
                  kind: 'ConfigMap',
                  metadata: { name: `${addonName}-agent`, namespace: 'open-cluster-management-agent-addon' },
                  data: { cluster: '{{CLUSTER_NAME}}' },
                },
              ],
            },
          },
          registration: [{ type: 'KubeClient', kubeClient: {} }],
        },
      },
    });
    await objects.createClusterCustomObject({
      ...addonApi,
      plural: 'clustermanagementaddons',
      body: {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'ClusterManagementAddOn',
        metadata: { name: addonName },
        spec: {
          addOnMeta: { displayName: addonName },
          supportedConfigs: [
            { group: addonApi.group, resource: 'addontemplates', defaultConfig: { name: addonName } },
            {
              group: addonApi.group,
              resource: 'addondeploymentconfigs',
              defaultConfig: { name: addonName, namespace: placementNamespace },
            },
          ],
          installStrategy: { type: 'Manual' },
        },
      },
    });
    await clusteradmOk([
      'addon',
      'enable',
      `--names=${addonName}`,
      `--clusters=${clusterName}`,
      `--namespace=${addonInstallNamespace}`,
    ]);

    const certs = ocmHub.makeApiClient(CertificatesV1Api);
    const csr = await waitFor(
      async () => {
        assertRunning();
        const list = await certs.listCertificateSigningRequest({
          labelSelector: `open-cluster-management.io/cluster-name=${clusterName},open-cluster-management.io/addon-name=${addonName}`,
        });
        const approved = list.items.find((c) =>
          c.status?.conditions?.some((x) => x.type === 'Approved' && x.status === 'True'),
        );
        return approved?.status?.certificate ? approved : undefined;
      },
      {
        timeoutMs: 90_000,
        description: `the add-on CSR approved by OCM's add-on manager and issued`,
      },
    );
    expect(csr.spec.signerName).toBe('kubernetes.io/kube-apiserver-client');

    const secret = await waitFor(
      () =>
        managed
          .makeApiClient(CoreV1Api)
          .readNamespacedSecret({ name: `${addonName}-hub-kubeconfig`, namespace: addonInstallNamespace })
          .catch(() => undefined),
      { timeoutMs: 60_000, description: `${addonName}-hub-kubeconfig on cluster2` },
    );
    expect(Object.keys(secret.data ?? {})).toEqual(
      expect.arrayContaining(['kubeconfig', 'tls.crt', 'tls.key']),
    );

    const addon = await waitFor(
      async () => {
        assertRunning();
        const mca = (await objects.getNamespacedCustomObject({
          ...managedClusterAddOns,
          namespace: clusterName,
          name: addonName,
        })) as OcmObject;
        return conditionStatus(mca, 'RegistrationApplied') === 'True' ? mca : undefined;
      },
      { timeoutMs: 60_000, description: `ManagedClusterAddOn ${addonName} RegistrationApplied` },
    );
    expect(addon.status?.registrations).toEqual([
      expect.objectContaining({ signerName: 'kubernetes.io/kube-apiserver-client' }),
    ]);

    // The agent's manifests, which OCM's add-on manager puts in a ManifestWork, applied by tether.
    const agentConfig = await waitFor(
      () =>
        managed
          .makeApiClient(CoreV1Api)
          .readNamespacedConfigMap({ name: `${addonName}-agent`, namespace: addonInstallNamespace })
          .catch(() => undefined),
      { timeoutMs: 60_000, description: `the add-on agent's ConfigMap on cluster2` },
    );
    expect(agentConfig.data?.cluster).toBe(clusterName);
  });
});
