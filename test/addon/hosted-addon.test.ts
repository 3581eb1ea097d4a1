// Hosted add-ons (OCM's hosting-cluster-name annotation), the pure parts: where each manifest goes
// (hosted-manifest-location), the hosting works' names and shape, the install namespace on the
// hosting cluster, and what cluster-proxy and managed-serviceaccount render there.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clusterProxyAddon } from '../../src/addon/builtin/cluster-proxy.ts';
import { managedServiceAccountAddon } from '../../src/addon/builtin/managed-serviceaccount.ts';
import {
  hostedInstallNamespace,
  manifestLocation,
  splitByLocation,
} from '../../src/addon/hub/deploy/hosted.ts';
import { desiredDeployWorks } from '../../src/addon/hub/deploy/work.ts';
import { addonHostingWorkName, hostedClusterOfWork, isAddonDeployWorkName } from '../../src/api/addon.ts';
import {
  managedClusterAddOn,
  mountsOf,
  one,
  type PodTemplate,
  render,
  renderContext,
} from './builtin-fixtures.ts';

const key = 'addon.open-cluster-management.io/hosted-manifest-location';
const cm = (name: string, where?: string, as: 'annotation' | 'label' = 'annotation'): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: 'ns',
      ...(where === undefined
        ? {}
        : as === 'annotation'
          ? { annotations: { [key]: where } }
          : { labels: { [key]: where } }),
    },
  }) as KubernetesObject;

describe('hosted add-on placement', () => {
  it('sends each manifest where its hosted-manifest-location says: managed by default, hosting, or nowhere', () => {
    const { managed, hosting } = splitByLocation([
      cm('plain'),
      cm('managed', 'managed'),
      cm('hosting', 'hosting'),
      cm('label-hosting', 'hosting', 'label'),
      cm('none', 'none'),
    ]);
    expect(managed.map((o) => o.metadata?.name)).toEqual(['plain', 'managed']);
    expect(hosting.map((o) => o.metadata?.name)).toEqual(['hosting', 'label-hosting']);
  });

  it('rejects a location OCM does not define, naming the manifest and the value', () => {
    expect(() => manifestLocation(cm('odd', 'elsewhere'))).toThrow(
      'ConfigMap ns/odd: addon.open-cluster-management.io/hosted-manifest-location="elsewhere" is not one of managed, hosting, none',
    );
  });

  it("installs on the hosting cluster in the hosted klusterlet's namespace, and refuses another one asked for", () => {
    const mca = managedClusterAddOn('x', 'cluster2');
    const ocmDefault = 'open-cluster-management-agent-addon';
    expect(hostedInstallNamespace(mca, undefined)).toBe('klusterlet-cluster2');
    // OCM's default (the CRDs default both fields to it) counts as not asked
    expect(
      hostedInstallNamespace(
        { ...mca, spec: { installNamespace: ocmDefault } },
        { agentInstallNamespace: ocmDefault },
      ),
    ).toBe('klusterlet-cluster2');
    expect(() => hostedInstallNamespace({ ...mca, spec: { installNamespace: 'mine' } }, undefined)).toThrow(
      'hosted mode installs into klusterlet-cluster2, the hosted klusterlet\'s namespace on the hosting cluster; spec.installNamespace "mine" cannot be honoured',
    );
    expect(() => hostedInstallNamespace(mca, { agentInstallNamespace: 'from-adc' })).toThrow(
      'AddOnDeploymentConfig agentInstallNamespace "from-adc" cannot be honoured',
    );
  });

  it('names hosting works addon-<addon>-deploy-hosting-<cluster>-<i> and tells them from deploy works', () => {
    expect(addonHostingWorkName('cluster-proxy', 'cluster-2', 0)).toBe(
      'addon-cluster-proxy-deploy-hosting-cluster-2-0',
    );
    expect(hostedClusterOfWork('cluster-proxy', 'addon-cluster-proxy-deploy-hosting-cluster-2-0')).toBe(
      'cluster-2',
    );
    expect(hostedClusterOfWork('cluster-proxy', 'addon-cluster-proxy-deploy-0')).toBeUndefined();
    expect(hostedClusterOfWork('cluster-proxy', 'addon-cluster-proxy-deploy-hosting-x')).toBeUndefined();
    expect(isAddonDeployWorkName('cluster-proxy', 'addon-cluster-proxy-deploy-0')).toBe(true);
    expect(isAddonDeployWorkName('cluster-proxy', 'addon-cluster-proxy-deploy-12')).toBe(true);
    expect(isAddonDeployWorkName('cluster-proxy', 'addon-cluster-proxy-deploy-hosting-c-0')).toBe(false);
  });

  it('puts hosting works in the hosting namespace without an owner (a finalizer removes them), and none for nothing', () => {
    const mca = managedClusterAddOn('x', 'cluster2');
    const [work, ...rest] = desiredDeployWorks({
      addonName: 'x',
      mca,
      manifests: [cm('a', 'hosting')],
      manifestConfigs: [],
      hostingCluster: 'cluster1',
    });
    expect(rest).toEqual([]);
    expect(work?.metadata).toMatchObject({
      name: 'addon-x-deploy-hosting-cluster2-0',
      namespace: 'cluster1',
      labels: { 'open-cluster-management.io/addon-name': 'x' },
    });
    expect(work?.metadata.ownerReferences).toBeUndefined();
    expect(
      desiredDeployWorks({
        addonName: 'x',
        mca,
        manifests: [],
        manifestConfigs: [],
        hostingCluster: 'cluster1',
      }),
    ).toEqual([]);
    // hosted mode's managed part: nothing to deploy there, no work (default mode keeps an empty one)
    expect(
      desiredDeployWorks({ addonName: 'x', mca, manifests: [], manifestConfigs: [], skipEmpty: true }),
    ).toEqual([]);
    expect(desiredDeployWorks({ addonName: 'x', mca, manifests: [], manifestConfigs: [] })).toHaveLength(1);
  });
});

describe('built-in add-ons in hosted mode', () => {
  const caPem = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';
  const hostedCtx = (addon: string) =>
    renderContext(addon, 'cluster2', {
      installNamespace: 'klusterlet-cluster2',
      hostingCluster: 'cluster1',
      apiserverUrl: 'https://10.0.0.7:6443',
    });

  it('cluster-proxy: the proxy-agent on the hosting cluster dials the apiserver the klusterlet reports; nothing on the managed cluster', async () => {
    const addon = clusterProxyAddon({ proxyServer: 'hub:8091', proxyServerCaPem: caPem, image: 'img' });
    expect(addon.hostedMode).toBe(true);
    const objects = await render(addon, hostedCtx('cluster-proxy'));
    const { managed, hosting } = splitByLocation(objects);
    expect(managed).toEqual([]);
    expect(hosting.map((o) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual([
      'ServiceAccount/klusterlet-cluster2/cluster-proxy',
      'ConfigMap/klusterlet-cluster2/cluster-proxy-proxy-server-ca',
      'Deployment/klusterlet-cluster2/cluster-proxy-proxy-agent',
    ]);
    const args = one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args;
    expect(args).toContain('--kube-apiserver=10.0.0.7:6443');
    expect(args).toContain('--cluster-name=cluster2');
  });

  it('cluster-proxy: a cluster whose klusterlet reported no apiserver yet fails the render with why', async () => {
    const addon = clusterProxyAddon({ proxyServer: 'hub:8091', proxyServerCaPem: caPem, image: 'img' });
    const ctx = renderContext('cluster-proxy', 'cluster2', { hostingCluster: 'cluster1' });
    await expect(render(addon, ctx)).rejects.toThrow('has no spec.managedClusterClientConfigs[0].url yet');
  });

  it('managed-serviceaccount: the agent on the hosting cluster reads the managed cluster with <addon>-managed-kubeconfig; the managed cluster gets only the add-on namespace', async () => {
    const addon = managedServiceAccountAddon({ image: 'img' });
    expect(addon.hostedMode).toBe(true);
    const objects = await render(addon, hostedCtx('managed-serviceaccount'));
    const { managed, hosting } = splitByLocation(objects);
    expect(managed.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'Namespace/open-cluster-management-agent-addon',
    ]);
    expect(hosting.map((o) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual([
      'ServiceAccount/klusterlet-cluster2/managed-serviceaccount',
      'Deployment/klusterlet-cluster2/managed-serviceaccount-addon-agent',
    ]);
    const d = one<PodTemplate>(objects, 'Deployment');
    const args = d.spec.template.spec.containers[0]?.args;
    expect(args).toContain('--install-namespace=open-cluster-management-agent-addon');
    expect(args).toContain('--kubeconfig=/managed/managed-kubeconfig/kubeconfig');
    expect(mountsOf(d)['/managed/managed-kubeconfig']).toBe(
      'Secret/managed-serviceaccount-managed-kubeconfig',
    );
    expect(
      (d.spec.template.spec as { automountServiceAccountToken?: boolean }).automountServiceAccountToken,
    ).toBe(false);
  });
});
