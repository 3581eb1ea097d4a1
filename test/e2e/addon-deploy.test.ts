// The addon manager delivers an addon agent to a cluster by ManifestWork, on a real hub with a real
// work agent applying to cluster1: install, AddOnDeploymentConfig, a failing addon, removal.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import { addonDeployWorkName, addonNameLabel, addonWorkCleanupFinalizer } from '../../src/api/addon.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import {
  type AddonTestCluster,
  adcs,
  agentDeployment,
  hubWorks,
  kinds,
  mcas,
  onManaged,
  setUpAddonCluster,
  unique,
  waitFor,
} from './fixtures/addon-deploy.ts';

interface Container {
  name: string;
  image: string;
  env?: { name: string; value: string }[];
  resources?: unknown;
}
interface DeploymentShape {
  spec: {
    template: {
      spec: { containers: Container[]; nodeSelector?: Record<string, string>; tolerations?: unknown[] };
    };
  };
}

const adcGroupResource = { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' };

/** A ConfigMap and a Deployment, the ConfigMap naming the cluster it was rendered for. */
const agentAddon: AgentAddon = {
  name: unique('deploy-agent'),
  displayName: 'e2e agent',
  supportedConfigs: [adcGroupResource],
  manifests: (ctx) => [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'agent-config' },
      data: { cluster: ctx.cluster.metadata.name ?? '', level: ctx.variables['LOG_LEVEL'] ?? 'default' },
    } as KubernetesObject,
    agentDeployment('agent', 'quay.io/tether/agent:v1'),
  ],
};

const failingAddon: AgentAddon = {
  name: unique('deploy-broken'),
  manifests: () => {
    throw new Error('chart values are invalid: replicas must be a number');
  },
};

let cluster: AddonTestCluster;
/** where the first test installs the agent */
const firstNs = unique('agent-ns');

beforeAll(async () => {
  cluster = await setUpAddonCluster([agentAddon, failingAddon]);
});

afterAll(async () => {
  await cluster?.cleanup();
});

describe('addon deploy', () => {
  it('installs the agent by ManifestWork addon-<addon>-deploy-0: objects on the cluster, ManifestApplied, InstallSucceed', async () => {
    const ns = firstNs;
    await cluster.enable(agentAddon.name, ns);
    const work = await cluster.waitForWork(agentAddon.name, 'created', (w) => w);
    expect(work.metadata.labels?.[addonNameLabel]).toBe(agentAddon.name);
    expect(work.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'ManagedClusterAddOn',
      name: agentAddon.name,
      controller: true,
    });
    const placed = work.spec.workload?.manifests?.map((m) => `${m.kind}/${m.metadata?.namespace ?? ''}`);
    expect(placed).toEqual(['Namespace/', `ConfigMap/${ns}`, `Deployment/${ns}`]);

    const cm = await waitFor('the ConfigMap on cluster1', () =>
      onManaged<KubeObject & { data?: Record<string, string> }>(kinds.configMap).get('agent-config', ns),
    );
    expect(cm.data?.['cluster']).toBe(cluster.name);
    await waitFor('the Deployment on cluster1', () => onManaged(kinds.deployment).get('agent', ns));

    await cluster.waitForCondition(agentAddon.name, 'ManifestApplied', {
      status: 'True',
      reason: 'AddonManifestApplied',
    });
    const progressing = await cluster.waitForCondition(agentAddon.name, 'Progressing', {
      status: 'False',
      reason: 'InstallSucceed',
    });
    expect(progressing.message).toBe('install completed with no errors.');
    const mca = await mcas.get(agentAddon.name, cluster.name);
    expect(mca?.metadata.finalizers).toContain(addonWorkCleanupFinalizer);
    expect(mca?.status?.namespace).toBe(ns);
    expect(mca?.status?.healthCheck?.mode).toBe('Lease');
    expect(mca?.status?.addOnMeta?.displayName).toBe('e2e agent');
    expect(mca?.status?.supportedConfigs).toEqual([adcGroupResource]);
  });

  it('applies an AddOnDeploymentConfig referenced by spec.configs to the work and the applied Deployment', async () => {
    const configNs = unique('adc-ns');
    cluster.removeNamespaceOnCleanup(configNs);
    const adcName = 'agent-config';
    await adcs.create({
      metadata: { name: adcName, namespace: cluster.name },
      spec: {
        agentInstallNamespace: configNs,
        customizedVariables: [{ name: 'LOG_LEVEL', value: '4' }],
        proxyConfig: { httpProxy: 'http://squid.example:3128', noProxy: '10.0.0.0/8' },
        nodePlacement: {
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          tolerations: [{ key: 'addons', operator: 'Exists', effect: 'NoSchedule' }],
        },
        registries: [{ source: 'quay.io/tether', mirror: 'mirror.example/tether' }],
        resourceRequirements: [
          { containerID: 'deployments:agent:*', resources: { requests: { cpu: '50m', memory: '64Mi' } } },
        ],
      },
    });
    const mca = await mcas.get(agentAddon.name, cluster.name);
    if (!mca) throw new Error('the addon of the first test is gone');
    await mcas.replace({
      ...mca,
      spec: { ...mca.spec, configs: [{ ...adcGroupResource, namespace: cluster.name, name: adcName }] },
    });

    const deployment = await cluster.waitForWork(agentAddon.name, 'rendered with the config', (w) => {
      const d = w.spec.workload?.manifests?.find((m) => m.kind === 'Deployment');
      return d?.metadata?.namespace === configNs ? (d as unknown as DeploymentShape) : undefined;
    });
    const podSpec = deployment.spec.template.spec;
    const [container] = podSpec.containers;
    expect(container?.image).toBe('mirror.example/tether/agent:v1');
    expect(container?.env).toEqual(
      expect.arrayContaining([
        { name: 'HTTP_PROXY', value: 'http://squid.example:3128' },
        { name: 'http_proxy', value: 'http://squid.example:3128' },
        { name: 'NO_PROXY', value: '10.0.0.0/8' },
      ]),
    );
    expect(container?.resources).toEqual({ requests: { cpu: '50m', memory: '64Mi' } });
    expect(podSpec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(podSpec.tolerations).toEqual([{ key: 'addons', operator: 'Exists', effect: 'NoSchedule' }]);

    // The work agent applied it: the Deployment in the config's namespace carries the proxy env,
    // and the variables reached the addon's own rendering.
    const applied = await waitFor('the configured Deployment on cluster1', () =>
      onManaged<KubeObject & DeploymentShape>(kinds.deployment).get('agent', configNs),
    );
    expect(applied.spec.template.spec.containers[0]?.env).toContainEqual({
      name: 'HTTP_PROXY',
      value: 'http://squid.example:3128',
    });
    const cm = await waitFor('the ConfigMap with the variable', async () => {
      const c = await onManaged<KubeObject & { data?: Record<string, string> }>(kinds.configMap).get(
        'agent-config',
        configNs,
      );
      return c?.data?.['level'] === '4' ? c : undefined;
    });
    expect(cm.data?.['cluster']).toBe(cluster.name);
    await cluster.waitForCondition(agentAddon.name, 'ManifestApplied', { status: 'True' });
    const status = await waitFor('status.namespace to follow the config', async () => {
      const m = await mcas.get(agentAddon.name, cluster.name);
      return m?.status?.namespace === configNs ? m.status : undefined;
    });
    expect(status.namespace).toBe(configNs);
    // Installed into the config's namespace: the earlier namespace's objects went with the old manifests.
    await waitFor(
      'the Deployment in the earlier namespace to be removed',
      async () => !(await onManaged(kinds.deployment).get('agent', firstNs)),
    );
  });

  it('an addon whose manifests() throws gets ManifestApplied False with the error, and no work', async () => {
    await cluster.enable(failingAddon.name, unique('broken-ns'));
    const applied = await cluster.waitForCondition(failingAddon.name, 'ManifestApplied', {
      status: 'False',
      reason: 'ManifestWorkApplyFailed',
    });
    expect(applied.message).toBe(
      'failed to get manifest from agent interface: chart values are invalid: replicas must be a number',
    );
    expect(await hubWorks.get(addonDeployWorkName(failingAddon.name), cluster.name)).toBeUndefined();
    // The other addon on the same cluster is untouched.
    const other = await mcas.get(agentAddon.name, cluster.name);
    expect(other?.status?.conditions?.find((c) => c.type === 'ManifestApplied')?.status).toBe('True');
  });

  it('an add-on asked to run hosted (hosting-cluster-name) that cannot gets HostingClusterValidity False and no agent, until the annotation goes', async () => {
    const annotation = 'addon.open-cluster-management.io/hosting-cluster-name';
    const workName = addonDeployWorkName(agentAddon.name);
    await mcas.patchMerge(
      agentAddon.name,
      { metadata: { annotations: { [annotation]: 'hosting1' } } },
      cluster.name,
    );
    const validity = await cluster.waitForCondition(agentAddon.name, 'HostingClusterValidity', {
      status: 'False',
      reason: 'HostedModeUnsupported',
    });
    expect(validity.message).toContain(`add-on ${agentAddon.name} cannot run in hosted mode`);
    expect(validity.message).toContain('hosting1');
    await waitFor('the deploy work removed', async () => !(await hubWorks.get(workName, cluster.name)));
    await cluster.waitForCondition(agentAddon.name, 'ManifestApplied', {
      status: 'False',
      reason: 'ManifestWorkApplyFailed',
    });

    await mcas.patchMerge(
      agentAddon.name,
      { metadata: { annotations: { [annotation]: null } } },
      cluster.name,
    );
    await cluster.waitForCondition(agentAddon.name, 'ManifestApplied', {
      status: 'True',
      reason: 'AddonManifestApplied',
    });
    expect(await hubWorks.get(workName, cluster.name)).toBeDefined();
    const mca = await mcas.get(agentAddon.name, cluster.name);
    expect(mca?.status?.conditions?.some((c) => c.type === 'HostingClusterValidity')).toBe(false);
  });

  it('deleting the ManagedClusterAddOn removes its work and what the work applied, but not the shared install namespace', async () => {
    const mca = await mcas.get(agentAddon.name, cluster.name);
    const ns = mca?.status?.namespace ?? '';
    expect(await onManaged(kinds.deployment).get('agent', ns)).toBeDefined();
    await mcas.delete(agentAddon.name, cluster.name);
    // The finalizer keeps the addon (and so its agent's hub credential) until the work is gone.
    let addonWentFirst = false;
    await waitFor(
      'the addon, its work and the applied Deployment to be gone',
      async () => {
        const work = await hubWorks.get(addonDeployWorkName(agentAddon.name), cluster.name);
        const addon = await mcas.get(agentAddon.name, cluster.name);
        if (work && !addon) addonWentFirst = true;
        return (
          !addon &&
          !work &&
          !(await onManaged(kinds.deployment).get('agent', ns)) &&
          !(await onManaged(kinds.configMap).get('agent-config', ns))
        );
      },
      60_000,
    );
    expect(addonWentFirst).toBe(false);
    // The work (and so the agent's cleanup of what it applied) is gone; the Namespace the manager
    // added is deletion-orphan, since other addons run in it: it stays, and is not being deleted.
    const namespace = await onManaged(kinds.namespace).get(ns);
    expect(namespace?.metadata?.deletionTimestamp).toBeUndefined();
    expect(namespace?.metadata?.name).toBe(ns);
  });
});
