import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';
import { adminKubeConfig, uniqueName } from '../e2e/fixtures/helpers.ts';
import { ocmEnv } from './fixtures/env.ts';
import { type Run, run, tetherCli } from './fixtures/processes.ts';

const env = ocmEnv();
const hub = adminKubeConfig(env.hub);
const managed = adminKubeConfig(env.cluster2);
const dir = mkdtempSync(join(tmpdir(), 'tether-ocm-clusteradm-'));
const clusterName = uniqueName('ocmadm');
const workNamespace = uniqueName('ocmadm-work');
const placementNamespace = uniqueName('ocmadm-pl');
const clusterSet = uniqueName('ocmadm-set');
const addonName = uniqueName('ocmadm-addon');
const templateAddon = uniqueName('ocmadm-tmpl');
// where clusteradm join puts the bootstrap secret; the test's agent runs in a namespace of its own
const joinNamespace = 'open-cluster-management-agent';
const agentNamespace = uniqueName('ocmadm-agent');
const processes: SupervisedProcess[] = [];

/** The real clusteradm against tether's hub. */
const clusteradm = (...args: string[]) =>
  run(env.bin.clusteradm, ['--kubeconfig', env.hub.kubeconfigPath, ...args]);
const tether = (...args: string[]) => tetherCli(args);

/** clusteradm's success: exit 0 and no "Error:" line (some verbs print an error and exit 0). */
function ok(r: Run): string {
  const out = `${r.stdout}${r.stderr}`;
  if (r.code !== 0 || /^Error:/m.test(out)) throw new Error(`clusteradm failed (${r.code}): ${out}`);
  return out;
}

function start(name: string, args: string[]): SupervisedProcess {
  const p = new SupervisedProcess({
    name,
    command: process.execPath,
    args: [tetherBin, ...args],
    logFile: join(dir, `${name}.log`),
    env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
  });
  processes.push(p);
  return p;
}

function configMapFile(name: string, value: string): string {
  const file = join(dir, `${name}-${value}.yaml`);
  writeFileSync(
    file,
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${workNamespace}\ndata:\n  value: ${value}\n`,
  );
  return file;
}

async function configMapValue(name: string): Promise<string | undefined> {
  return managed
    .makeApiClient(CoreV1Api)
    .readNamespacedConfigMap({ name, namespace: workNamespace })
    .then(
      (cm) => cm.data?.value,
      () => undefined,
    );
}

/** The lines of clusteradm's tree output under `<name>` (up to the next sibling at its depth). */
function treeBlock(out: string, name: string): string {
  const lines = out.split('\n');
  const at = lines.findIndex((l) => l.includes(`<${name}>`));
  if (at < 0) return '';
  const depth = lines[at]?.indexOf('<') ?? 0;
  const end = lines.findIndex((l, i) => i > at && l.indexOf('<') <= depth && l.includes('<'));
  return lines.slice(at, end < 0 ? undefined : end).join('\n');
}

beforeAll(async () => {
  const init = await tether(
    'init',
    '--bootstrap-only',
    '--use-bootstrap-token',
    '--kubeconfig',
    env.hub.kubeconfigPath,
    '--ca-out',
    join(dir, 'hub-ca.crt'),
  );
  if (init.code !== 0) throw new Error(`tether init failed: ${init.stderr}`);
  const core = managed.makeApiClient(CoreV1Api);
  for (const name of [workNamespace])
    await core.createNamespace({ body: { metadata: { name } } }).catch(() => {});
  await hub
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: placementNamespace } } })
    .catch(() => {});
  start('hub', [
    'hub',
    `--kubeconfig=${env.hub.kubeconfigPath}`,
    '--no-leader-elect',
    `--ops-port=${await freePort()}`,
  ]);
});

afterAll(async () => {
  for (const p of processes) await p.stop(5000);
  const objects = hub.makeApiClient(CustomObjectsApi);
  const gone = (p: Promise<unknown>) => p.catch(() => {});
  await gone(
    objects.deleteClusterCustomObject({
      group: 'cluster.open-cluster-management.io',
      version: 'v1',
      plural: 'managedclusters',
      name: clusterName,
    }),
  );
  await gone(
    objects.deleteClusterCustomObject({
      group: 'cluster.open-cluster-management.io',
      version: 'v1beta2',
      plural: 'managedclustersets',
      name: clusterSet,
    }),
  );
  await gone(
    objects.deleteClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'clustermanagementaddons',
      name: addonName,
    }),
  );
  await gone(hub.makeApiClient(CoreV1Api).deleteNamespace({ name: placementNamespace }));
  await gone(
    objects.deleteClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'clustermanagementaddons',
      name: templateAddon,
    }),
  );
  const templates = (await objects
    .listClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'addontemplates',
    })
    .catch(() => ({ items: [] }))) as { items: { metadata: { name: string } }[] };
  for (const t of templates.items.filter((t) => t.metadata.name.startsWith(templateAddon)))
    await gone(
      objects.deleteClusterCustomObject({
        group: 'addon.open-cluster-management.io',
        version: 'v1alpha1',
        plural: 'addontemplates',
        name: t.metadata.name,
      }),
    );
  await gone(
    hub.makeApiClient(RbacAuthorizationV1Api).deleteClusterRole({ name: `${templateAddon}-reader` }),
  );
  const core = managed.makeApiClient(CoreV1Api);
  await gone(core.deleteNamespace({ name: agentNamespace }));
  await gone(
    core.deleteNamespacedSecret({
      name: `${templateAddon}-hub-kubeconfig`,
      namespace: 'open-cluster-management-agent-addon',
    }),
  );
  await gone(core.deleteNamespace({ name: workNamespace }));
  rmSync(dir, { recursive: true, force: true });
});

describe('the real clusteradm against a tether hub', () => {
  let token = '';

  it('get token prints a bootstrap token and the join line; --use-bootstrap-token finds the bootstrap-token Secret; get hub-info runs', async () => {
    const out = ok(await clusteradm('get', 'token'));
    token = /^token=(\S+)$/m.exec(out)?.[1] ?? '';
    expect(token.split('.')).toHaveLength(3);
    expect(out).toContain(`join --hub-token ${token} --hub-apiserver ${env.hub.apiserverUrl}`);

    const bt = ok(await clusteradm('get', 'token', '--use-bootstrap-token'));
    const bootstrapToken = /^token=(\S+)$/m.exec(bt)?.[1] ?? '';
    expect(bootstrapToken).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(bt).toContain(`--hub-token ${bootstrapToken}`);

    // tether has no ClusterManager (no registration operator): hub-info says so, and does not fail
    expect(ok(await clusteradm('get', 'hub-info'))).toMatch(/Registration Operator/);
  });

  it('join --output-file writes the bootstrap secret tether’s agent joins with; accept approves it; get clusters shows it Accepted and Available', async () => {
    const manifests = join(dir, 'join.yaml');
    ok(
      await run(env.bin.clusteradm, [
        'join',
        '--kubeconfig',
        env.cluster2.kubeconfigPath,
        '--hub-token',
        token,
        '--hub-apiserver',
        env.hub.apiserverUrl,
        '--cluster-name',
        clusterName,
        '--proxy-url',
        env.tunnel.squidUrl,
        '--output-file',
        manifests,
      ]),
    );
    // clusteradm writes its documents with neither `---` nor always a blank line between them, so
    // the secret is read by its lines, as a user would read it
    const written =
      /^kind: Secret\nmetadata:\n {2}name: bootstrap-hub-kubeconfig\n {2}namespace: "?([^"\n]+)"?\n[\s\S]*?^ {2}kubeconfig: "?([A-Za-z0-9+/=]+)"?$/m.exec(
        readFileSync(manifests, 'utf8'),
      );
    expect(written?.[1]).toBe(joinNamespace);
    const kubeconfigData = written?.[2] ?? '';
    const kubeconfig = Buffer.from(kubeconfigData, 'base64').toString();
    expect(kubeconfig).toContain(`proxy-url: ${env.tunnel.squidUrl}`);

    const core = managed.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: agentNamespace } } }).catch(() => {});
    await core.createNamespacedSecret({
      namespace: agentNamespace,
      body: {
        metadata: { name: 'bootstrap-hub-kubeconfig', namespace: agentNamespace },
        data: { kubeconfig: kubeconfigData },
      },
    });
    const agent = start('agent', [
      'agent',
      `--cluster-name=${clusterName}`,
      `--kubeconfig=${env.cluster2.kubeconfigPath}`,
      `--agent-namespace=${agentNamespace}`,
      '--no-serviceaccount',
      `--ops-port=${await freePort()}`,
    ]);

    const accepted = await pollUntil(
      async () => {
        if (!agent.running) throw new Error(`tether agent exited:\n${agent.tail()}`);
        const r = await clusteradm('accept', '--clusters', clusterName);
        return r.code === 0 && /has joined the Hub successfully/.test(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 2000, description: `clusteradm accept --clusters ${clusterName}` },
    );
    expect(accepted).toMatch(/CSR .* (approved|already approved)/);

    const block = await pollUntil(
      async () => {
        const b = treeBlock(ok(await clusteradm('get', 'clusters')), clusterName);
        return /<Available> True/.test(b) ? b : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 2000, description: `get clusters shows ${clusterName} Available` },
    );
    expect(block).toMatch(/<Accepted> true/);
    expect(block).toMatch(/<ClusterSet> default/);
    expect(block).toMatch(/<KubernetesVersion> v1\.\d+/);
  });

  it('create clusterset, clusterset set and bind, create placement: get clustersets and get placements show the cluster decided', async () => {
    expect(ok(await clusteradm('create', 'clusterset', clusterSet))).toContain(
      `Clusterset ${clusterSet} is created`,
    );
    expect(ok(await clusteradm('clusterset', 'set', clusterSet, '--clusters', clusterName))).toContain(
      `Cluster ${clusterName} is set, from ClusterSet default to Clusterset ${clusterSet}`,
    );
    expect(
      ok(await clusteradm('clusterset', 'bind', clusterSet, '--namespace', placementNamespace)),
    ).toContain(`Clusterset ${clusterSet} is bound to Namespace ${placementNamespace}`);
    await pollUntil(
      async () => {
        const b = treeBlock(ok(await clusteradm('get', 'clustersets')), clusterSet);
        return b.includes(`[${clusterName}]`) && b.includes(placementNamespace) ? b : undefined;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 1000,
        description: `get clustersets lists ${clusterName} in ${clusterSet}`,
      },
    );
    ok(
      await clusteradm(
        'create',
        'placement',
        'p1',
        '--namespace',
        placementNamespace,
        '--clustersets',
        clusterSet,
      ),
    );
    const placement = await pollUntil(
      async () => {
        const out = ok(await clusteradm('get', 'placements', '--namespace', placementNamespace));
        return out.includes(`<PlacementDecision> [${clusterName}]`) ? out : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'get placements shows the decision' },
    );
    expect(placement).toMatch(/<PlacementConditionSatisfied> true/);
    expect(placement).toMatch(/<NumberOfSelectedClusters> 1/);
  });

  it('create work --clusters and --placement apply on the cluster, get works shows them Applied and Available, --overwrite replaces, delete work removes', async () => {
    expect(
      ok(
        await clusteradm(
          'create',
          'work',
          'w1',
          '-f',
          configMapFile('adm-cm', 'one'),
          '--clusters',
          clusterName,
        ),
      ),
    ).toContain(`create work w1 in cluster ${clusterName}`);
    await pollUntil(async () => (await configMapValue('adm-cm')) === 'one', {
      timeoutMs: 60_000,
      description: 'w1 applied on cluster2',
    });
    const works = await pollUntil(
      async () => {
        const b = treeBlock(ok(await clusteradm('get', 'works', '--cluster', clusterName)), 'w1');
        return /<Applied> True/.test(b) && /<Available> True/.test(b) ? b : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000, description: 'get works shows w1 Applied and Available' },
    );
    expect(works).toContain(`<${workNamespace}/adm-cm> applied`);

    ok(
      await clusteradm(
        'create',
        'work',
        'w1',
        '-f',
        configMapFile('adm-cm', 'two'),
        '--clusters',
        clusterName,
        '--overwrite',
      ),
    );
    await pollUntil(async () => (await configMapValue('adm-cm')) === 'two', {
      timeoutMs: 60_000,
      description: 'the overwritten w1 applied',
    });

    ok(
      await clusteradm(
        'create',
        'work',
        'w2',
        '-f',
        configMapFile('adm-cm2', 'placed'),
        '--placement',
        `${placementNamespace}/p1`,
      ),
    );
    await pollUntil(async () => (await configMapValue('adm-cm2')) === 'placed', {
      timeoutMs: 60_000,
      description: 'w2 placed and applied on cluster2',
    });

    for (const [work, cm] of [
      ['w1', 'adm-cm'],
      ['w2', 'adm-cm2'],
    ] as const) {
      expect(ok(await clusteradm('delete', 'work', work, '--cluster', clusterName))).toContain(
        `work ${work} in cluster ${clusterName} is deleted`,
      );
      await pollUntil(async () => (await configMapValue(cm)) === undefined, {
        timeoutMs: 60_000,
        description: `${cm} removed with ${work}`,
      });
    }
  });

  it('addon enable refuses an unknown add-on, enables a known one (get addon lists it), addon disable removes it', async () => {
    const unknown = await clusteradm('addon', 'enable', '--names', addonName, '--clusters', clusterName);
    expect(`${unknown.stdout}${unknown.stderr}`).toContain(
      `enabling the unknown addon ${addonName} is not supported`,
    );
    await hub.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'clustermanagementaddons',
      body: {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'ClusterManagementAddOn',
        metadata: { name: addonName },
        spec: { addOnMeta: { displayName: addonName } },
      },
    });
    ok(await clusteradm('addon', 'enable', '--names', addonName, '--clusters', clusterName));
    const listed = treeBlock(ok(await clusteradm('get', 'addon')), addonName);
    expect(listed).toContain(`<${clusterName}>`);
    const mca = {
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'managedclusteraddons',
    };
    const objects = hub.makeApiClient(CustomObjectsApi);
    await objects.getNamespacedCustomObject({ ...mca, namespace: clusterName, name: addonName });
    ok(await clusteradm('addon', 'disable', '--names', addonName, '--clusters', clusterName));
    await pollUntil(
      () =>
        objects.getNamespacedCustomObject({ ...mca, namespace: clusterName, name: addonName }).then(
          () => undefined,
          () => true,
        ),
      { timeoutMs: 30_000, description: 'the ManagedClusterAddOn deleted by addon disable' },
    );
  });

  it('addon create writes an AddOnTemplate add-on; addon enable runs it: its agent applied with the cluster’s values, its hub identity issued and bound; addon disable removes it', async () => {
    const manifests = join(dir, 'template-addon.yaml');
    writeFileSync(
      manifests,
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tmpl-agent\n  namespace: ${workNamespace}\ndata:\n  cluster: '{{CLUSTER_NAME}}'\n`,
    );
    const objects = hub.makeApiClient(CustomObjectsApi);
    const reader = `${templateAddon}-reader`;
    await hub.makeApiClient(RbacAuthorizationV1Api).createClusterRole({
      body: {
        metadata: { name: reader },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      },
    });
    ok(
      await clusteradm(
        'addon',
        'create',
        templateAddon,
        '-f',
        manifests,
        '--hub-registration',
        '--cluster-role-bind',
        reader,
      ),
    );
    const cma = (await objects.getClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'clustermanagementaddons',
      name: templateAddon,
    })) as { spec: { supportedConfigs: { resource: string; defaultConfig?: { name: string } }[] } };
    const templateName = cma.spec.supportedConfigs.find((c) => c.resource === 'addontemplates')?.defaultConfig
      ?.name;
    expect(templateName).toBeTruthy();

    ok(await clusteradm('addon', 'enable', '--names', templateAddon, '--clusters', clusterName));
    const agentObject = await pollUntil(
      () =>
        managed
          .makeApiClient(CoreV1Api)
          .readNamespacedConfigMap({ name: 'tmpl-agent', namespace: workNamespace })
          .catch(() => undefined),
      {
        timeoutMs: 90_000,
        intervalMs: 1000,
        description: 'the template add-on’s agent ConfigMap on cluster2',
      },
    );
    expect(agentObject.data).toEqual({ cluster: clusterName });
    // the hub identity: tether's agent asked, the template add-on's registration approved it
    const secret = await pollUntil(
      () =>
        managed
          .makeApiClient(CoreV1Api)
          .readNamespacedSecret({
            name: `${templateAddon}-hub-kubeconfig`,
            namespace: 'open-cluster-management-agent-addon',
          })
          .catch(() => undefined),
      { timeoutMs: 90_000, intervalMs: 1000, description: `${templateAddon}-hub-kubeconfig on cluster2` },
    );
    expect(Object.keys(secret.data ?? {})).toEqual(
      expect.arrayContaining(['kubeconfig', 'tls.crt', 'tls.key']),
    );
    const binding = await pollUntil(
      () =>
        hub
          .makeApiClient(RbacAuthorizationV1Api)
          .readNamespacedRoleBinding({
            name: `open-cluster-management:${templateAddon}:${clusterName}:clusterrole:${reader}:agent`,
            namespace: clusterName,
          })
          .catch(() => undefined),
      { timeoutMs: 30_000, description: 'the --cluster-role-bind RoleBinding in the cluster namespace' },
    );
    expect(binding.subjects?.map((x) => x.name)).toEqual([
      `system:open-cluster-management:cluster:${clusterName}:addon:${templateAddon}`,
    ]);

    ok(await clusteradm('addon', 'disable', '--names', templateAddon, '--clusters', clusterName));
    await pollUntil(
      () =>
        managed
          .makeApiClient(CoreV1Api)
          .readNamespacedConfigMap({ name: 'tmpl-agent', namespace: workNamespace })
          .then(
            () => undefined,
            () => true,
          ),
      { timeoutMs: 60_000, description: 'the agent ConfigMap removed by addon disable' },
    );
  });
});
