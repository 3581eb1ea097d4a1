// Hosted mode (clusteradm's `join --mode hosted`): `tether join --mode hosted` installs the agent on
// a *hosting* cluster (here the hub's control plane, as OCM's own example hosts it) in namespace
// klusterlet-<cluster>, with the managed cluster's kubeconfig as Secret external-managed-kubeconfig.
// The agent then runs with exactly what that install gives a pod: the Deployment's own arguments,
// the Secret's kubeconfig, and a token of the Deployment's ServiceAccount on the hosting cluster
// (this environment has no nodes; the real-node case is `tether up`'s). Checked: the cluster joins
// and turns Available, its works are applied on the managed cluster, the tunnel reaches the
// managed apiserver, the agent's credentials live on the hosting cluster only, its rights there are
// its own namespace's, and `tether unjoin --mode hosted` removes both sides.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { AppsV1Api, AuthorizationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AppliedManifestWork,
  appliedManifestWorkResource,
  ManagedClusterCondition,
  type ManifestWork,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { findCondition, ResourceClient } from '../../src/kube/index.ts';
import { writeKubeconfigFile } from '../../src/localenv/kubeconfig-file.ts';
import { freePort, localChildEnv, SupervisedProcess } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { apiserverThroughTunnel, getVersion } from './fixtures/apiserver-through-tunnel.ts';
import { adminKubeConfig, configMapResource } from './fixtures/helpers.ts';
import { clusters, env, hubKc, type JoinedCluster, joinedCluster } from './fixtures/joined-cluster.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tether-hosted-'));
const hostingKc = hubKc; // the hosting cluster is the hub's control plane
const managedKc = adminKubeConfig(env.cluster1);
let joined: JoinedCluster;
let namespace: string;
let agent: SupervisedProcess | undefined;
let opsPort: number;
const sockets: TLSSocket[] = [];

function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/tether.js', ...args], { timeout: 150_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function bootstrapToken(): string {
  const kc = new KubeConfig();
  kc.loadFromFile(joined.bootstrapKubeconfigPath);
  return kc.getCurrentUser()?.token ?? '';
}

async function namespaceExists(kc: KubeConfig, name: string): Promise<boolean> {
  try {
    await kc.makeApiClient(CoreV1Api).readNamespace({ name });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  joined = await joinedCluster('hosted', 60);
  namespace = `klusterlet-${joined.name}`;
  opsPort = await freePort();
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await agent?.stop(5000);
  await hostingKc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: namespace })
    .catch(() => {});
  await joined?.cleanup();
  rmSync(tmp, { recursive: true, force: true });
});

/** `tether join` to the shared hub for the test's cluster, installing on the hosting cluster. */
function joinArgs(): string[] {
  return [
    'join',
    '--hub-token',
    bootstrapToken(),
    '--hub-apiserver',
    env.hub.apiserverUrl,
    '--ca-file',
    env.hub.caCertPath,
    '--cluster-name',
    joined.name,
    '--kubeconfig',
    env.hub.kubeconfigPath,
  ];
}

/** The Deployment's arguments with its mounted files swapped for this machine's copies. */
function hostArgs(deploymentArgs: string[], spokePath: string, hostingPath: string): string[] {
  return [
    ...deploymentArgs
      .filter((a) => !a.startsWith('--ops-'))
      .map((a) =>
        a === '--spoke-kubeconfig=/etc/tether/spoke/kubeconfig'
          ? `--spoke-kubeconfig=${spokePath}`
          : a === '--hub-ca-file=/etc/tether/proxy-server-ca/ca.crt'
            ? `--hub-ca-file=${env.tunnel.hubCaPath}`
            : a,
      ),
    `--kubeconfig=${hostingPath}`,
    `--ops-port=${opsPort}`,
    '--ops-bind-address=127.0.0.1',
    '--status-sync-interval=1',
  ];
}

describe('tether join --mode hosted', () => {
  let deploymentArgs: string[] = [];

  it('refuses a hosted join without the managed kubeconfig, and the kubeconfig without hosted mode', async () => {
    const common = joinArgs();
    const noKc = await tether([...common, '--mode', 'hosted']);
    expect(noKc.code).not.toBe(0);
    expect(noKc.stderr).toContain('--mode hosted needs --managed-cluster-kubeconfig');
    const noMode = await tether([...common, '--managed-cluster-kubeconfig', env.cluster1.kubeconfigPath]);
    expect(noMode.code).not.toBe(0);
    expect(noMode.stderr).toContain('--managed-cluster-kubeconfig goes with --mode hosted');
    expect(await namespaceExists(hostingKc, namespace)).toBe(false);
  });

  it('installs the agent on the hosting cluster with the managed kubeconfig, and only CRDs on the managed one', async () => {
    const r = await tether([
      ...joinArgs(),
      '--mode',
      'hosted',
      '--managed-cluster-kubeconfig',
      env.cluster1.kubeconfigPath,
      '--proxy-url',
      env.tunnel.squidUrl,
      '--proxy-server',
      env.tunnel.proxyServerAddress,
      '--proxy-server-ca-file',
      env.tunnel.hubCaPath,
      '--no-in-process-addons',
      '--no-serviceaccount',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Deployment ${namespace}/klusterlet-agent`);
    const d = await hostingKc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'klusterlet-agent', namespace });
    deploymentArgs = d.spec?.template.spec?.containers[0]?.args ?? [];
    expect(deploymentArgs).toContain('--spoke-kubeconfig=/etc/tether/spoke/kubeconfig');
    expect(deploymentArgs).toContain(`--agent-namespace=${namespace}`);
    const secret = await hostingKc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: 'external-managed-kubeconfig', namespace });
    const stored = new KubeConfig();
    stored.loadFromString(Buffer.from(secret.data?.kubeconfig ?? '', 'base64').toString());
    expect(stored.getCurrentCluster()?.server).toBe(env.cluster1.apiserverUrl);
    expect(await namespaceExists(managedKc, namespace)).toBe(false);
  });

  it('joins, turns Available and reaches the managed apiserver through the tunnel, its credentials on the hosting cluster only', async () => {
    const core = hostingKc.makeApiClient(CoreV1Api);
    const secret = await core.readNamespacedSecret({ name: 'external-managed-kubeconfig', namespace });
    const spokePath = join(tmp, 'spoke.kubeconfig');
    writeFileSync(spokePath, Buffer.from(secret.data?.kubeconfig ?? '', 'base64'), { mode: 0o600 });
    // what the pod would run as on the hosting cluster: its ServiceAccount
    const token = await core.createNamespacedServiceAccountToken({
      name: 'klusterlet-agent-sa',
      namespace,
      body: { spec: { expirationSeconds: 3600, audiences: [] } },
    });
    const hostingPath = join(tmp, 'hosting.kubeconfig');
    writeKubeconfigFile(hostingPath, {
      name: 'hosting',
      server: env.hub.apiserverUrl,
      caPem: readFileSync(env.hub.caCertPath, 'utf8'),
      token: token.status?.token ?? '',
    });
    agent = new SupervisedProcess({
      name: `${joined.name}/hosted-agent`,
      command: process.execPath,
      args: ['bin/tether.js', ...hostArgs(deploymentArgs, spokePath, hostingPath)],
      logFile: join(tmp, 'agent.log'),
      env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
    });
    await pollUntil(
      async () => {
        if (!agent?.running) throw new Error(`tether agent exited:\n${agent?.tail()}`);
        const res = await request(`http://127.0.0.1:${opsPort}/readyz`);
        await res.body.text();
        return res.statusCode === 200;
      },
      { timeoutMs: 90_000, intervalMs: 250, description: 'the hosted agent joined with a tunnel' },
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}\nagent log:\n${readFileSync(join(tmp, 'agent.log'), 'utf8').slice(-3000)}`,
      );
    });
    await pollUntil(
      async () => {
        const mc = await clusters.get(joined.name);
        const status = (type: string) => findCondition(mc?.status?.conditions ?? [], type)?.status;
        return (
          status(ManagedClusterCondition.Joined) === 'True' &&
          status(ManagedClusterCondition.Available) === 'True'
        );
      },
      { timeoutMs: 60_000, intervalMs: 250, description: `${joined.name} Joined and Available` },
    );
    // the ManagedCluster names the managed apiserver (from the spoke kubeconfig), not the hosting one
    const mc = await clusters.get(joined.name);
    expect(mc?.spec?.managedClusterClientConfigs?.[0]?.url).toBe(env.cluster1.apiserverUrl);

    // its hub credential is on the hosting cluster; nothing on the managed cluster holds it
    const hubSecret = await core.readNamespacedSecret({ name: 'hub-kubeconfig-secret', namespace });
    expect(Buffer.from(hubSecret.data?.['cluster-name'] ?? '', 'base64').toString()).toBe(joined.name);
    const managedSecrets = await managedKc.makeApiClient(CoreV1Api).listSecretForAllNamespaces();
    const onManaged = managedSecrets.items.filter(
      (s) => Buffer.from(s.data?.['cluster-name'] ?? '', 'base64').toString() === joined.name,
    );
    expect(onManaged.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)).toEqual([]);

    // the tunnel: CONNECT <cluster>:443 reaches the managed apiserver, verified by its own CA
    const inner = await apiserverThroughTunnel(env.tunnel, joined.name, env.cluster1, sockets);
    const answer = await getVersion(inner);
    expect(answer.status).toBe('HTTP/1.1 200 OK');
    expect(answer.body).toContain('gitVersion');
  });

  it('applies its works on the managed cluster', async () => {
    const works = new ResourceClient<ManifestWork>(hubKc, manifestWorkResource);
    const name = 'hosted-work';
    const cmName = `hosted-${joined.name}`;
    await works.create({
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: { name, namespace: joined.name },
      spec: {
        workload: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: cmName, namespace: 'default' },
              data: { from: 'hosted' },
            },
          ],
        },
      },
    } as ManifestWork);
    const configMaps = new ResourceClient<{ metadata: { name: string }; data?: Record<string, string> }>(
      managedKc,
      configMapResource,
    );
    try {
      await pollUntil(async () => (await configMaps.get(cmName, 'default'))?.data?.from === 'hosted', {
        timeoutMs: 30_000,
        intervalMs: 250,
        description: 'the work applied on the managed cluster',
      });
      await pollUntil(
        async () => {
          const w = await works.get(name, joined.name);
          return findCondition(w?.status?.conditions ?? [], 'Applied')?.status === 'True';
        },
        { timeoutMs: 30_000, intervalMs: 250, description: 'the work Applied' },
      );
      const applied = await new ResourceClient<AppliedManifestWork>(
        managedKc,
        appliedManifestWorkResource,
      ).list();
      expect(
        applied.items.some(
          (a) => a.spec?.manifestWorkName === name && a.metadata?.name?.endsWith(`-${name}`),
        ),
      ).toBe(true);
    } finally {
      await works.delete(name, joined.name, { ignoreNotFound: true });
      await pollUntil(async () => !(await configMaps.get(cmName, 'default')), {
        timeoutMs: 30_000,
        intervalMs: 250,
        description: 'the work removed from the managed cluster',
      });
    }
  });

  it("holds on the hosting cluster only its own namespace's Secrets and Events", async () => {
    const authz = hostingKc.makeApiClient(AuthorizationV1Api);
    const user = `system:serviceaccount:${namespace}:klusterlet-agent-sa`;
    const can = async (verb: string, resource: string, ns?: string, group = ''): Promise<boolean> => {
      const r = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
            resourceAttributes: { verb, resource, group, ...(ns ? { namespace: ns } : {}) },
          },
        },
      });
      return r.status?.allowed === true;
    };
    const allowed: Array<[string, string, string | undefined]> = [
      ['get', 'secrets', namespace],
      ['update', 'secrets', namespace],
      ['watch', 'secrets', namespace],
      ['delete', 'secrets', namespace],
      ['create', 'events', namespace],
    ];
    const denied: Array<[string, string, string | undefined]> = [
      ['get', 'secrets', 'kube-system'],
      ['list', 'secrets', undefined],
      ['delete', 'secrets', 'kube-system'],
      ['create', 'pods', namespace],
      ['create', 'rolebindings', namespace],
      ['create', 'namespaces', undefined],
      ['get', 'configmaps', 'default'],
      ['create', 'serviceaccounts/token', namespace],
    ];
    for (const [verb, resource, ns] of allowed)
      expect(await can(verb, resource, ns), `${verb} ${resource}`).toBe(true);
    for (const [verb, resource, ns] of denied)
      expect(await can(verb, resource, ns), `${verb} ${resource}`).toBe(false);
  });

  it('tether unjoin --mode hosted removes the agent from the hosting cluster and its add-on namespace from the managed one', async () => {
    await agent?.stop(5000);
    agent = undefined;
    const r = await tether([
      'unjoin',
      '--mode',
      'hosted',
      '--cluster-name',
      joined.name,
      '--kubeconfig',
      env.hub.kubeconfigPath,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('(hosting cluster)');
    expect(await namespaceExists(hostingKc, namespace)).toBe(false);
    expect(await namespaceExists(managedKc, 'open-cluster-management-agent-addon')).toBe(false);
  });
});
