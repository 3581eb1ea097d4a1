// The add-on framework on real nodes: tether installed as a user installs it (`tether init` on the
// hub node, `tether join` on a managed node that reaches the hub only through squid), the
// helloworld example's manager run on the host against the hub as its README says, and the add-on
// enabled and disabled with the real CLI. The agent then runs as a pod from the tether image on
// the managed node, gets its hub credential from the registration agent inside the klusterlet pod,
// reaches the hub through squid, renews its Lease, and the registration agent turns that into the
// add-on's Available condition. A second case: an agent whose image does not exist never renews a
// lease, and the add-on shows OCM's Unknown ManagedClusterAddOnLeaseNotFound. The slow case last:
// the agent's process is frozen (SIGSTOP), so its pod stays Running but its Lease is no longer
// renewed; the registration agent in the klusterlet pod turns the add-on Available False with OCM's
// ManagedClusterAddOnLeaseUpdateStopped once the lease is older than the grace period (5 lease
// durations), not before, and Available again after SIGCONT. (Scaling the agent's Deployment to 0
// would not do: the work agent puts it back as its ManifestWork says.) The periods are set short as
// OCM's integration suites set them: lease duration 5 s (`tether join --addon-lease-duration` for
// the registration agent, the manager's --agent-lease-duration for the helloworld agent), so the
// grace is 25 s; the registration agent looks at the add-on every second and the work agent syncs
// status every 2 s. The defaults (60 s, 30 s, 30 s) are pinned by test/cli/agent-periods.test.ts.
// Run only as `flock /tmp/tether-realnode.lock npx vitest run test/e2e/addon-real-node.test.ts`.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type AddOnDeploymentConfig, addOnDeploymentConfigResource } from '../../src/api/addon.ts';
import { type Lease, leaseResource, ResourceClient } from '../../src/kube/index.ts';
import {
  type ConfigMap,
  conditionOf,
  type Deployment,
  eventually,
  kubeconfigProxyUrl,
  type Pod,
  pidsWithArgs,
  readOrEmpty,
  resources,
  type Secret,
  squidConnects,
} from './fixtures/addon-real-node.ts';
import { ADDON, ADDON_NS, AddonRealNode, AGENT } from './fixtures/addon-real-node-env.ts';

// node names are per host: a `tether up` may run on this machine meanwhile
const PREFIX = `ar${process.pid % 100000}-`;
const ROLE = `open-cluster-management:${ADDON}:agent`;
const SECRET = `${ADDON}-hub-kubeconfig`;
/** The add-on lease duration here (OCM's 60 s is pinned in test/cli/agent-periods.test.ts). */
const LEASE_DURATION_S = 5;
/** OCM's grace: a lease counts as renewed for 5 lease durations after its renewTime. */
const GRACE_MS = 5 * LEASE_DURATION_S * 1000;
/** How often the registration agent looks at the add-on here (OCM's is 30 s). */
const SYNC_INTERVAL_S = 1;
const measured: Record<string, string> = {};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

let rn: AddonRealNode | undefined;

function env(): AddonRealNode {
  if (!rn) throw new Error('no environment');
  return rn;
}
const logs = () => env().logs();

beforeAll(async () => {
  const t = Date.now();
  // short periods (the add-on lease duration, the add-on lease check's and the work agent's 30 s
  // syncs; the defaults are pinned in test/cli/agent-periods.test.ts)
  rn = await AddonRealNode.start(PREFIX, 'addon-real-node', {
    leaseDurationSeconds: LEASE_DURATION_S,
    syncIntervalSeconds: SYNC_INTERVAL_S,
    statusSyncIntervalSeconds: 2,
  });
  measured.environment = seconds(Date.now() - t);
}, 1_200_000);

afterAll(async () => {
  await rn?.stop();
  process.stderr.write(`[addon-real-node] measured: ${JSON.stringify(measured)}\n`);
}, 300_000);

describe('the helloworld add-on on a real managed node', () => {
  it('enable → agent pod on the node with the proxy env, credential, lease, Available, ConfigMaps copied through squid; disable → all gone', async () => {
    onTestFailed(async () => {
      process.stderr.write(`${await logs()}\n`);
    });
    const e = env();
    const c = { name: e.cluster };
    const node = e.node;
    const squid = e.squidUrl;
    const noProxy = 'localhost,127.0.0.1,10.0.0.1,.svc,.cluster.local';
    const adcs = new ResourceClient<AddOnDeploymentConfig>(e.hub(), addOnDeploymentConfigResource);
    await adcs.create({
      metadata: { name: 'hello-proxy', namespace: c.name },
      spec: { proxyConfig: { httpProxy: squid, httpsProxy: squid, noProxy } },
    });

    const enabledAt = Date.now();
    await e.enable('hello-proxy');

    // the agent pod runs on the managed node, with the config's proxy in its environment
    const pods = new ResourceClient<Pod>(e.managed(), resources.pods);
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
    const secrets = new ResourceClient<Secret>(e.managed(), resources.secrets);
    const secret = await secrets.get(SECRET, ADDON_NS);
    const kubeconfig = Buffer.from(secret?.data?.kubeconfig ?? '', 'base64').toString('utf8');
    expect(kubeconfigProxyUrl(kubeconfig)).toBe(squid);
    expect(Object.keys(secret?.data ?? {})).toEqual(expect.arrayContaining(['tls.crt', 'tls.key']));

    // the agent renews Lease helloworld (second precision), and the registration agent reports it
    const leases = new ResourceClient<Lease>(e.managed(), leaseResource);
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
    expect(lease.spec?.leaseDurationSeconds).toBe(LEASE_DURATION_S);
    const available = await e.addonUntil(
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
    const hubConfigMaps = new ResourceClient<ConfigMap>(e.hub(), resources.configMaps);
    await hubConfigMaps.create({
      metadata: { name: 'hello-real-node', namespace: c.name },
      data: { greeting: 'hi from the hub' },
    });
    const copiedAt = Date.now();
    const copies = new ResourceClient<ConfigMap>(e.managed(), resources.configMaps);
    const copy = await eventually(
      async () => copies.get('hello-real-node', ADDON_NS),
      `ConfigMap hello-real-node copied to ${c.name}/${ADDON_NS}`,
      60_000,
      logs,
    );
    measured.configMapCopied = seconds(Date.now() - copiedAt);
    expect(copy.data).toEqual({ greeting: 'hi from the hub' });

    // and keeps renewing its lease (every lease duration plus up to 25 % jitter)
    const firstRenewal = Date.parse(lease.spec?.renewTime ?? '');
    await eventually(
      async () => Date.parse((await leases.get(ADDON, ADDON_NS))?.spec?.renewTime ?? '') > firstRenewal,
      `Lease ${ADDON_NS}/${ADDON} renewed again`,
      30_000,
      logs,
    );
    measured.leaseRenewedAgainAfter = seconds(Date.now() - firstRenewal);

    // disable: the agent, its hub RBAC and its credential go
    const disabledAt = Date.now();
    await e.disable();
    const deployments = new ResourceClient<Deployment>(e.managed(), resources.deployments);
    await eventually(
      async () =>
        (await deployments.get(AGENT, ADDON_NS)) === undefined &&
        (await pods.list({ namespace: ADDON_NS, labelSelector: `app=${AGENT}` })).items.length === 0,
      `Deployment ${AGENT} and its pod to be gone from ${c.name}`,
      120_000,
      logs,
    );
    const podGoneAt = Date.now();
    const roles = new ResourceClient(e.hub(), resources.roles);
    const bindings = new ResourceClient(e.hub(), resources.roleBindings);
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

    // squid logs a tunnel when it closes: the agent's hub connection, opened as it started and
    // closed when its pod went, is a CONNECT from the managed node to the hub apiserver. Other pods
    // on the node (the klusterlet, tether's own add-on agents) go through squid too, so the line is
    // told apart by when it opened and closed; the firewall leaves the agent no other way anyway.
    const squidLog = e.squidAccessLogPath;
    const hubTarget = e.hubTarget;
    const tunnel = await eventually(
      async () =>
        squidConnects(readOrEmpty(squidLog)).find(
          (l) =>
            l.client === node.network.nodeAddress &&
            l.target === hubTarget &&
            l.result.endsWith('/200') &&
            l.startMs >= startedAt - 1_000 &&
            l.startMs <= startedAt + 20_000 &&
            l.endMs >= disabledAt &&
            l.endMs <= podGoneAt + 5_000,
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
    const e = env();
    const c = { name: e.cluster };
    // its own install namespace (the config's agentInstallNamespace, which OCM puts before
    // spec.installNamespace): the first case's Lease stays in the default one after disabling
    const ns = 'helloworld-missing-image';
    const missing = 'localhost/tether-missing:0.0.0';
    const adcs = new ResourceClient<AddOnDeploymentConfig>(e.hub(), addOnDeploymentConfigResource);
    await adcs.create({
      metadata: { name: 'hello-missing-image', namespace: c.name },
      spec: { agentInstallNamespace: ns, customizedVariables: [{ name: 'Image', value: missing }] },
    });
    const enabledAt = Date.now();
    await e.enable('hello-missing-image');
    try {
      const pods = new ResourceClient<Pod>(e.managed(), resources.pods);
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
      const addon = await e.addonUntil(
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
      expect(await new ResourceClient<Lease>(e.managed(), leaseResource).get(ADDON, ns)).toBeUndefined();
    } finally {
      await e.disable();
    }
  }, 420_000);
});

describe('Lease health of an add-on agent on a real node', () => {
  it('a frozen agent (pod still Running) turns the add-on Available False ManagedClusterAddOnLeaseUpdateStopped after the grace period, and True again once it renews', async () => {
    const e = env();
    onTestFailed(async () => {
      process.stderr.write(`${await logs()}\n`);
    });
    // the first case's agent left its Lease behind (disabling does not remove it, as in OCM); still
    // fresh, it would make the add-on Available before this case's agent runs
    await new ResourceClient<Lease>(e.managed(), leaseResource).delete(ADDON, ADDON_NS, {
      ignoreNotFound: true,
    });
    const enabledAt = Date.now();
    await e.enable();
    let frozen: number | undefined;
    try {
      await e.addonUntil(
        'the add-on to be Available (lease updated)',
        (a) => conditionOf(a, 'Available')?.reason === 'ManagedClusterAddOnLeaseUpdated',
        240_000,
      );
      measured.enableToAvailable = seconds(Date.now() - enabledAt);
      const agentArgs = [
        '/app/examples/helloworld-addon/helloworld.ts',
        'agent',
        `--cluster-name=${e.cluster}`,
      ];
      const pids = pidsWithArgs(agentArgs);
      expect(pids, 'exactly one agent process on the node').toHaveLength(1);
      const leases = new ResourceClient<Lease>(e.managed(), leaseResource);
      const renewTimeOf = async () => Date.parse((await leases.get(ADDON, ADDON_NS))?.spec?.renewTime ?? '');
      // the agent took the short lease duration from its manager
      expect((await leases.get(ADDON, ADDON_NS))?.spec?.leaseDurationSeconds).toBe(LEASE_DURATION_S);

      frozen = pids[0];
      process.kill(frozen as number, 'SIGSTOP');
      const frozenAt = Date.now();
      const lastRenewal = await renewTimeOf();
      expect(lastRenewal).toBeLessThanOrEqual(frozenAt);

      const stopped = await e.addonUntil(
        'Available False with ManagedClusterAddOnLeaseUpdateStopped',
        (a) => conditionOf(a, 'Available')?.status === 'False',
        GRACE_MS + 60_000,
      );
      const falseAt = Date.now();
      measured.frozenToFalse = seconds(falseAt - frozenAt);
      measured.lastRenewalToFalse = seconds(falseAt - lastRenewal);
      expect(conditionOf(stopped, 'Available')).toMatchObject({
        reason: 'ManagedClusterAddOnLeaseUpdateStopped',
        message: `${ADDON} add-on is not available.`,
      });
      // not before the grace period ran out (renewTime has second precision)
      const changedAt = Date.parse(conditionOf(stopped, 'Available')?.lastTransitionTime ?? '');
      expect(changedAt).toBeGreaterThanOrEqual(lastRenewal + GRACE_MS - 1_000);
      // and soon after it: the registration agent's grace is the short one, not OCM's 5 min
      expect(changedAt).toBeLessThan(lastRenewal + GRACE_MS + 15_000);
      // it is the lease that decides: the pod is still Running, the lease untouched
      expect(await renewTimeOf()).toBe(lastRenewal);
      const pods = new ResourceClient<Pod>(e.managed(), resources.pods);
      const running = (await pods.list({ namespace: ADDON_NS, labelSelector: `app=${AGENT}` })).items.filter(
        (p) => p.status?.phase === 'Running',
      );
      expect(running).toHaveLength(1);

      process.kill(frozen as number, 'SIGCONT');
      frozen = undefined;
      const resumedAt = Date.now();
      const back = await e.addonUntil(
        'Available True again after SIGCONT',
        (a) => conditionOf(a, 'Available')?.status === 'True',
        60_000,
      );
      measured.resumedToAvailable = seconds(Date.now() - resumedAt);
      expect(conditionOf(back, 'Available')?.reason).toBe('ManagedClusterAddOnLeaseUpdated');
      expect(await renewTimeOf()).toBeGreaterThan(lastRenewal);
    } finally {
      if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
      await e.disable();
    }
  }, 420_000);
});
