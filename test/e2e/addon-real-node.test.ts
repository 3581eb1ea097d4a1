// The add-on framework on real nodes: tether installed as a user installs it (`tether init` on the
// hub node, `tether join` on a managed node that reaches the hub only through squid), the
// helloworld example's manager run on the host against the hub as its README says, and the add-on
// enabled and disabled with the real CLI. The agent then runs as a pod from the tether image on
// the managed node, gets its hub credential from the registration agent inside the klusterlet pod,
// reaches the hub through squid, renews its Lease, and the registration agent turns that into the
// add-on's Available condition. A second case: an agent whose image does not exist never renews a
// lease, and the add-on shows OCM's Unknown ManagedClusterAddOnLeaseNotFound.
// Run only as `flock /tmp/tether-realnode.lock npx vitest run test/e2e/addon-real-node.test.ts`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../src/api/addon.ts';
import { type Lease, leaseResource, ResourceClient } from '../../src/kube/index.ts';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import type { Environment } from '../../src/localenv/environment.ts';
import { startInClusterEnvironment } from '../../src/localenv/in-cluster-stack.ts';
import {
  type ConfigMap,
  conditionOf,
  type Deployment,
  eventually,
  HelloworldManager,
  kubeconfigProxyUrl,
  kubectlOrEmpty,
  type Pod,
  readOrEmpty,
  resources,
  type Secret,
  squidConnects,
  tether,
} from './fixtures/addon-real-node.ts';

// node names are per host: a `tether up` may run on this machine meanwhile
const PREFIX = `ar${process.pid % 100000}-`;
const ADDON = 'helloworld';
const AGENT = 'helloworld-agent';
const ADDON_NS = 'open-cluster-management-agent-addon';
const AGENT_NS = 'open-cluster-management-agent';
const ROLE = `open-cluster-management:${ADDON}:agent`;
const SECRET = `${ADDON}-hub-kubeconfig`;
const measured: Record<string, string> = {};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

let parent: string;
let env: Environment | undefined;
let manager: HelloworldManager | undefined;

function environment(): Environment {
  if (!env) throw new Error('no environment');
  return env;
}
const hubKcPath = () => environment().hub.kubeconfigPath;
const cluster = () => {
  const c = environment().clusters[0];
  if (!c) throw new Error('no cluster');
  return c;
};
function load(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
const hub = () => load(hubKcPath());
const managed = () => load(cluster().kubeconfigPath);
const squidUrl = () => {
  const squid = environment().squid;
  if (!squid) throw new Error('no squid');
  return squid.urlFor(cluster().name);
};

/** What the parts involved said lately: quoted when a wait times out. */
async function logs(): Promise<string> {
  const c = cluster();
  const klusterlet = await kubectlOrEmpty(c.kubeconfigPath, [
    '-n',
    AGENT_NS,
    'logs',
    'deployment/klusterlet-agent',
    '--tail=40',
  ]);
  const addon = await kubectlOrEmpty(hubKcPath(), [
    '-n',
    c.name,
    'get',
    'managedclusteraddons',
    '-o',
    'yaml',
  ]);
  const pods = await kubectlOrEmpty(c.kubeconfigPath, ['get', 'pods', '-A', '-o', 'wide']);
  return [
    `--- helloworld manager (tail) ---\n${manager?.tail().slice(-4000) ?? ''}`,
    `--- klusterlet-agent (tail) ---\n${klusterlet}`,
    `--- ManagedClusterAddOns ---\n${addon}`,
    `--- pods on ${c.name} ---\n${pods}`,
  ].join('\n');
}

/** The add-on's MCA once `check` holds for it. */
function addonUntil(
  what: string,
  check: (a: ManagedClusterAddOn) => boolean,
  timeoutMs: number,
): Promise<ManagedClusterAddOn> {
  const addons = new ResourceClient<ManagedClusterAddOn>(hub(), managedClusterAddOnResource);
  return eventually(
    async () => {
      const a = await addons.get(ADDON, cluster().name);
      return a && check(a) ? a : undefined;
    },
    what,
    timeoutMs,
    logs,
  );
}

/** `tether addon disable`, then the MCA gone (its finalizer waits for the agent's objects). */
async function disable(): Promise<void> {
  const c = cluster();
  await tether([
    'addon',
    'disable',
    `--names=${ADDON}`,
    `--clusters=${c.name}`,
    `--kubeconfig=${hubKcPath()}`,
  ]);
  const addons = new ResourceClient<ManagedClusterAddOn>(hub(), managedClusterAddOnResource);
  await eventually(
    async () => (await addons.get(ADDON, c.name)) === undefined,
    `ManagedClusterAddOn ${c.name}/${ADDON} to be gone`,
    120_000,
    logs,
  );
}

beforeAll(async () => {
  // a cold machine builds the node binaries here; the environment builds or reuses the tether image
  await ensureNodeBinaries((l) => process.stderr.write(`[addon-real-node] ${l}\n`));
  parent = mkdtempSync(join(tmpdir(), 'tether-addon-real-node-'));
  const t = Date.now();
  env = await startInClusterEnvironment({
    clusters: 1,
    dir: join(parent, 'env'),
    namePrefix: PREFIX,
    progress: (l) => process.stderr.write(`[addon-real-node] ${l}\n`),
  });
  measured.environment = seconds(Date.now() - t);
  const image = env.image?.ref;
  if (!image) throw new Error('a real-node environment without its image');
  manager = new HelloworldManager({ hubKubeconfig: hubKcPath(), image });
  // the manager registers ClusterManagementAddOn helloworld (what `addon enable` checks for)
  const cmas = new ResourceClient<ClusterManagementAddOn>(hub(), clusterManagementAddOnResource);
  await eventually(
    async () => (await cmas.get(ADDON)) !== undefined,
    'the helloworld manager to register ClusterManagementAddOn helloworld',
    60_000,
    logs,
  );
}, 1_200_000);

afterAll(async () => {
  await manager?.stop();
  await env?.stop();
  if (parent) rmSync(parent, { recursive: true, force: true });
  process.stderr.write(`[addon-real-node] measured: ${JSON.stringify(measured)}\n`);
}, 300_000);

describe('the helloworld add-on on a real managed node', () => {
  it('enable → agent pod on the node with the proxy env, credential, lease, Available, ConfigMaps copied through squid; disable → all gone', async () => {
    onTestFailed(async () => {
      process.stderr.write(`${await logs()}\n`);
    });
    const c = cluster();
    const node = environment().nodes?.[c.name];
    if (!node) throw new Error(`no node for ${c.name}`);
    const squid = squidUrl();
    const noProxy = 'localhost,127.0.0.1,10.0.0.1,.svc,.cluster.local';
    const adcs = new ResourceClient<AddOnDeploymentConfig>(hub(), addOnDeploymentConfigResource);
    await adcs.create({
      metadata: { name: 'hello-proxy', namespace: c.name },
      spec: { proxyConfig: { httpProxy: squid, httpsProxy: squid, noProxy } },
    });

    const enabledAt = Date.now();
    await tether([
      'addon',
      'enable',
      `--names=${ADDON}`,
      `--clusters=${c.name}`,
      `--config=addon.open-cluster-management.io/addondeploymentconfigs:${c.name}/hello-proxy`,
      `--kubeconfig=${hubKcPath()}`,
    ]);

    // the agent pod runs on the managed node, with the config's proxy in its environment
    const pods = new ResourceClient<Pod>(managed(), resources.pods);
    const pod = await eventually(
      async () =>
        (await pods.list({ namespace: ADDON_NS, labelSelector: `app=${AGENT}` })).items.find(
          (p) => p.status?.phase === 'Running',
        ),
      `a Running ${AGENT} pod in ${ADDON_NS} on ${c.name}`,
      240_000,
      logs,
    );
    measured.enableToPodRunning = seconds(Date.now() - enabledAt);
    expect(pod.spec?.nodeName).toBe(c.name);
    const containerEnv = Object.fromEntries(
      (pod.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? ''] as const),
    );
    expect(containerEnv).toMatchObject({ HTTP_PROXY: squid, HTTPS_PROXY: squid, NO_PROXY: noProxy });
    const startedAt = Date.parse(pod.status?.containerStatuses?.[0]?.state?.running?.startedAt ?? '');
    expect(startedAt).toBeGreaterThan(enabledAt - 2_000);

    // its hub credential, pointing at the hub through the same squid
    const secrets = new ResourceClient<Secret>(managed(), resources.secrets);
    const secret = await secrets.get(SECRET, ADDON_NS);
    const kubeconfig = Buffer.from(secret?.data?.kubeconfig ?? '', 'base64').toString('utf8');
    expect(kubeconfigProxyUrl(kubeconfig)).toBe(squid);
    expect(Object.keys(secret?.data ?? {})).toEqual(expect.arrayContaining(['tls.crt', 'tls.key']));

    // the agent renews Lease helloworld (second precision), and the registration agent reports it
    const leases = new ResourceClient<Lease>(managed(), leaseResource);
    const lease = await eventually(
      async () => {
        const l = await leases.get(ADDON, ADDON_NS);
        const renewed = Date.parse(l?.spec?.renewTime ?? '');
        return renewed >= startedAt - 1_000 ? l : undefined;
      },
      `Lease ${ADDON_NS}/${ADDON} renewed by the agent`,
      120_000,
      logs,
    );
    expect(lease.spec?.leaseDurationSeconds).toBe(60);
    const available = await addonUntil(
      'the add-on to be Available (lease updated)',
      (a) => conditionOf(a, 'Available')?.status === 'True',
      120_000,
    );
    measured.enableToAvailable = seconds(Date.now() - enabledAt);
    expect(conditionOf(available, 'Available')).toMatchObject({
      reason: 'ManagedClusterAddOnLeaseUpdated',
      message: `${ADDON} add-on is available.`,
    });
    expect(conditionOf(available, 'ManifestApplied')?.status).toBe('True');
    expect(conditionOf(available, 'RegistrationApplied')?.status).toBe('True');

    // what the agent does: a ConfigMap of the cluster namespace on the hub appears on the cluster
    const hubConfigMaps = new ResourceClient<ConfigMap>(hub(), resources.configMaps);
    await hubConfigMaps.create({
      metadata: { name: 'hello-real-node', namespace: c.name },
      data: { greeting: 'hi from the hub' },
    });
    const copiedAt = Date.now();
    const copies = new ResourceClient<ConfigMap>(managed(), resources.configMaps);
    const copy = await eventually(
      async () => copies.get('hello-real-node', ADDON_NS),
      `ConfigMap hello-real-node copied to ${c.name}/${ADDON_NS}`,
      60_000,
      logs,
    );
    measured.configMapCopied = seconds(Date.now() - copiedAt);
    expect(copy.data).toEqual({ greeting: 'hi from the hub' });

    // and keeps renewing its lease (every 60 s plus up to 25 % jitter)
    const firstRenewal = Date.parse(lease.spec?.renewTime ?? '');
    await eventually(
      async () => Date.parse((await leases.get(ADDON, ADDON_NS))?.spec?.renewTime ?? '') > firstRenewal,
      `Lease ${ADDON_NS}/${ADDON} renewed again`,
      120_000,
      logs,
    );
    measured.leaseRenewedAgainAfter = seconds(Date.now() - firstRenewal);

    // disable: the agent, its hub RBAC and its credential go
    const disabledAt = Date.now();
    await disable();
    const deployments = new ResourceClient<Deployment>(managed(), resources.deployments);
    await eventually(
      async () =>
        (await deployments.get(AGENT, ADDON_NS)) === undefined &&
        (await pods.list({ namespace: ADDON_NS, labelSelector: `app=${AGENT}` })).items.length === 0,
      `Deployment ${AGENT} and its pod to be gone from ${c.name}`,
      120_000,
      logs,
    );
    const roles = new ResourceClient(hub(), resources.roles);
    const bindings = new ResourceClient(hub(), resources.roleBindings);
    await eventually(
      async () =>
        (await roles.get(ROLE, c.name)) === undefined && (await bindings.get(ROLE, c.name)) === undefined,
      `Role and RoleBinding ${c.name}/${ROLE} to be gone from the hub`,
      60_000,
      logs,
    );
    await eventually(
      async () => (await secrets.get(SECRET, ADDON_NS)) === undefined,
      `Secret ${ADDON_NS}/${SECRET} to be gone from ${c.name}`,
      60_000,
      logs,
    );
    measured.disableToGone = seconds(Date.now() - disabledAt);

    // squid logs a tunnel when it closes: the agent's hub connection, opened when it started and
    // closed when its pod was deleted, is a CONNECT from the managed node to the hub apiserver
    const squidLog = environment().squid?.accessLogPath ?? '';
    const hubTarget = new URL(environment().hubApiserverUrlForNodes ?? '').host;
    const tunnel = await eventually(
      async () =>
        squidConnects(readOrEmpty(squidLog)).find(
          (l) =>
            l.client === node.network.nodeAddress &&
            l.target === hubTarget &&
            l.result.endsWith('/200') &&
            l.startMs >= startedAt - 2_000 &&
            l.startMs <= startedAt + 60_000 &&
            l.endMs >= disabledAt,
        ),
      `squid to log the agent's CONNECT ${hubTarget} from ${node.network.nodeAddress}, opened when it started`,
      30_000,
      async () => readOrEmpty(squidLog).split('\n').slice(-30).join('\n'),
    );
    expect(tunnel.result).toBe('TCP_TUNNEL/200');
  }, 420_000);

  it('an agent whose image does not exist never renews a lease: Available Unknown ManagedClusterAddOnLeaseNotFound', async () => {
    onTestFailed(async () => {
      process.stderr.write(`${await logs()}\n`);
    });
    const c = cluster();
    // its own install namespace (the config's agentInstallNamespace, which OCM puts before
    // spec.installNamespace): the first case's Lease stays in the default one after disabling
    const ns = 'helloworld-missing-image';
    const missing = 'localhost/tether-missing:0.0.0';
    const adcs = new ResourceClient<AddOnDeploymentConfig>(hub(), addOnDeploymentConfigResource);
    await adcs.create({
      metadata: { name: 'hello-missing-image', namespace: c.name },
      spec: { agentInstallNamespace: ns, customizedVariables: [{ name: 'Image', value: missing }] },
    });
    const enabledAt = Date.now();
    await tether([
      'addon',
      'enable',
      `--names=${ADDON}`,
      `--clusters=${c.name}`,
      `--config=addon.open-cluster-management.io/addondeploymentconfigs:${c.name}/hello-missing-image`,
      `--kubeconfig=${hubKcPath()}`,
    ]);
    try {
      const pods = new ResourceClient<Pod>(managed(), resources.pods);
      const pod = await eventually(
        async () =>
          (await pods.list({ namespace: ns, labelSelector: `app=${AGENT}` })).items.find((p) =>
            /ErrImagePull|ImagePullBackOff/.test(
              p.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? '',
            ),
          ),
        `the ${AGENT} pod in ${ns} to fail pulling ${missing}`,
        180_000,
        logs,
      );
      expect(pod.spec?.containers[0]?.image).toBe(missing);
      const addon = await addonUntil(
        'Available Unknown with ManagedClusterAddOnLeaseNotFound',
        (a) => conditionOf(a, 'Available')?.reason === 'ManagedClusterAddOnLeaseNotFound',
        120_000,
      );
      measured.enableToLeaseNotFound = seconds(Date.now() - enabledAt);
      expect(conditionOf(addon, 'Available')?.status).toBe('Unknown');
      expect(conditionOf(addon, 'Available')?.message).toContain(`The status of ${ADDON} add-on is unknown`);
      expect(conditionOf(addon, 'ManifestApplied')?.status).toBe('True');
      expect(addon.status?.namespace).toBe(ns);
      // still not Running and still no lease when the add-on says so
      const now = (await pods.list({ namespace: ns, labelSelector: `app=${AGENT}` })).items;
      expect(now.filter((p) => p.status?.phase === 'Running')).toEqual([]);
      expect(await new ResourceClient<Lease>(managed(), leaseResource).get(ADDON, ns)).toBeUndefined();
    } finally {
      await disable();
    }
  }, 420_000);
});
