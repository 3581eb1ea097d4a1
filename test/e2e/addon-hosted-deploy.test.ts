// OCM's hosted add-ons on a real hub with a real work agent: an add-on that supports hosted mode,
// annotated addon.open-cluster-management.io/hosting-cluster-name, gets HostingClusterValidity, its
// `hosting` manifests in work addon-<addon>-deploy-hosting-<cluster>-0 in the hosting cluster's
// namespace (here the cluster hosts itself, as OCM's enhancement tests it), HostingManifestApplied,
// and its `none` manifests nowhere; the annotation's removal and the add-on's deletion take the
// hosting work away (a finalizer, since no owner reference reaches across namespaces).
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddonRenderContext, AgentAddon } from '../../src/addon/sdk/types.ts';
import {
  addonDeployWorkName,
  addonHostingManifestFinalizer,
  addonHostingWorkName,
  hostingClusterNameAnnotation,
} from '../../src/api/addon.ts';
import type { ManifestWork } from '../../src/api/work.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import {
  type AddonTestCluster,
  hubWorks,
  kinds,
  mcas,
  onManaged,
  setUpAddonCluster,
  unique,
  waitFor,
} from './fixtures/addon-deploy.ts';

const location = 'addon.open-cluster-management.io/hosted-manifest-location';
const managedNs = unique('hosted-managed');

const configMap = (name: string, namespace: string, where?: string): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, ...(where ? { annotations: { [location]: where } } : {}) },
    data: { name },
  }) as KubernetesObject;

const namespace = (name: string, where?: string): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, ...(where ? { annotations: { [location]: where } } : {}) },
  }) as KubernetesObject;

const seen: AddonRenderContext[] = [];
const hostedAddon: AgentAddon = {
  name: unique('hosted'),
  hostedMode: true,
  health: { type: 'None' },
  manifests: (ctx) => {
    seen.push(ctx);
    return [
      namespace(managedNs),
      configMap('on-managed', managedNs),
      namespace(ctx.installNamespace, 'hosting'),
      configMap('on-hosting', ctx.installNamespace, 'hosting'),
      configMap('nowhere', managedNs, 'none'),
    ];
  },
};

let cluster: AddonTestCluster;
const hostedNs = unique('hosted-ns');

beforeAll(async () => {
  cluster = await setUpAddonCluster([hostedAddon]);
  cluster.removeNamespaceOnCleanup(managedNs);
  cluster.removeNamespaceOnCleanup(`klusterlet-${cluster.name}`);
});

afterAll(async () => {
  await cluster?.cleanup();
});

const annotate = (value: string | null, installNamespace?: string) =>
  mcas.patchMerge(
    hostedAddon.name,
    {
      metadata: { annotations: { [hostingClusterNameAnnotation]: value } },
      ...(installNamespace ? { spec: { installNamespace } } : {}),
    },
    cluster.name,
  );
const ocmDefaultNamespace = 'open-cluster-management-agent-addon';
const names = (w: ManifestWork | undefined) =>
  (w?.spec.workload?.manifests ?? []).map((m) => `${m.kind}/${m.metadata?.name}`);
const hostingWork = () => hubWorks.get(addonHostingWorkName(hostedAddon.name, cluster.name), cluster.name);
const cm = (name: string, ns: string) => onManaged<KubeObject>(kinds.configMap).get(name, ns);

describe('hosted add-on deploy', () => {
  it('in default mode every manifest goes to the managed cluster, whatever its location says', async () => {
    await cluster.enable(hostedAddon.name, hostedNs);
    const work = await cluster.waitForWork(hostedAddon.name, 'created', (w) => w);
    expect(names(work)).toEqual([
      `Namespace/${managedNs}`,
      'ConfigMap/on-managed',
      `Namespace/${hostedNs}`,
      'ConfigMap/on-hosting',
      'ConfigMap/nowhere',
    ]);
    expect(seen.at(-1)?.installMode).toBe('Default');
    await waitFor('the none-located ConfigMap applied in default mode', () => cm('nowhere', managedNs));
  });

  it("a hosted add-on installs only into the hosted klusterlet's namespace: another one asked for is refused with why", async () => {
    await annotate(cluster.name);
    const refused = await cluster.waitForCondition(hostedAddon.name, 'ManifestApplied', {
      status: 'False',
      reason: 'ManifestWorkApplyFailed',
    });
    expect(refused.message).toContain(
      `hosted mode installs into klusterlet-${cluster.name}, the hosted klusterlet's namespace on the hosting cluster; spec.installNamespace "${hostedNs}" cannot be honoured`,
    );
    expect(await hostingWork()).toBeUndefined();
  });

  it('a hosting cluster that is not a managed cluster of the hub: HostingClusterValidity False, no hosting work', async () => {
    await annotate('no-such-cluster', ocmDefaultNamespace); // OCM's default: not asked for
    const validity = await cluster.waitForCondition(hostedAddon.name, 'HostingClusterValidity', {
      status: 'False',
      reason: 'HostingClusterInvalid',
    });
    expect(validity.message).toBe('hosting cluster no-such-cluster is not a managed cluster of the hub');
    const work = await cluster.waitForWork(hostedAddon.name, 'only the managed part', (w) =>
      names(w).length === 2 ? w : undefined,
    );
    expect(names(work)).toEqual([`Namespace/${managedNs}`, 'ConfigMap/on-managed']);
    expect(await hostingWork()).toBeUndefined();
    await waitFor('the none-located ConfigMap removed', async () => !(await cm('nowhere', managedNs)));
  });

  it('a valid hosting cluster gets the hosting manifests by work addon-<addon>-deploy-hosting-<cluster>-0, HostingManifestApplied', async () => {
    const ns = `klusterlet-${cluster.name}`;
    await annotate(cluster.name);
    await cluster.waitForCondition(hostedAddon.name, 'HostingClusterValidity', {
      status: 'True',
      reason: 'HostingClusterValid',
      message: `hosting cluster ${cluster.name} is a managed cluster of the hub`,
    });
    const work = await waitFor('the hosting work', hostingWork);
    expect(names(work)).toEqual([`Namespace/${ns}`, 'ConfigMap/on-hosting']);
    expect(work.metadata.ownerReferences).toBeUndefined();
    const ctx = seen.at(-1);
    expect(ctx?.installMode).toBe('Hosted');
    expect(ctx?.hostingClusterName).toBe(cluster.name);
    await cluster.waitForCondition(hostedAddon.name, 'HostingManifestApplied', {
      status: 'True',
      reason: 'AddonManifestApplied',
    });
    await waitFor('the hosting ConfigMap applied', () => cm('on-hosting', ns));
    // the managed deploy work of the same namespace leaves the hosting work alone
    expect(names(await hubWorks.get(addonDeployWorkName(hostedAddon.name), cluster.name))).toEqual([
      `Namespace/${managedNs}`,
      'ConfigMap/on-managed',
    ]);
    const mca = await mcas.get(hostedAddon.name, cluster.name);
    expect(mca?.metadata.finalizers).toContain(addonHostingManifestFinalizer);
    expect(mca?.status?.namespace).toBe(ns);
  });

  it('removing the annotation removes the hosting work, its conditions and its finalizer', async () => {
    await annotate(null, hostedNs);
    await waitFor('the hosting work gone', async () => !(await hostingWork()));
    await waitFor('the hosting conditions and finalizer gone', async () => {
      const mca = await mcas.get(hostedAddon.name, cluster.name);
      return (
        !mca?.metadata.finalizers?.includes(addonHostingManifestFinalizer) &&
        !mca?.status?.conditions?.some((c) => c.type.startsWith('Hosting'))
      );
    });
    await waitFor('the hosting ConfigMap back in the managed work', async () =>
      names(await hubWorks.get(addonDeployWorkName(hostedAddon.name), cluster.name)).includes(
        'ConfigMap/on-hosting',
      ),
    );
  });

  it('deleting a hosted add-on removes its hosting work and what it applied before the add-on goes', async () => {
    await annotate(cluster.name, ocmDefaultNamespace);
    await waitFor('the hosting work again', hostingWork);
    await waitFor('the managed work without the hosting ConfigMap', async () =>
      names(await hubWorks.get(addonDeployWorkName(hostedAddon.name), cluster.name)).length === 2
        ? true
        : undefined,
    );
    await mcas.delete(hostedAddon.name, cluster.name);
    let addonWentFirst = false;
    await waitFor(
      'the add-on, its hosting work and the hosting ConfigMap gone',
      async () => {
        const work = await hostingWork();
        const addon = await mcas.get(hostedAddon.name, cluster.name);
        if (work && !addon) addonWentFirst = true;
        return !addon && !work && !(await cm('on-hosting', `klusterlet-${cluster.name}`));
      },
      60_000,
    );
    expect(addonWentFirst).toBe(false);
  });
});
