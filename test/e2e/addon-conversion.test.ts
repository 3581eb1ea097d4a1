// A real kube-apiserver serves ClusterManagementAddOn and ManagedClusterAddOn at v1alpha1 (storage)
// and v1beta1, converting through tether's webhook: objects written at one version are read,
// listed and watched at the other with OCM's mappings, and nothing is lost on the way back.
// The test points the shared hub's two CRDs at a webhook it serves itself (so it does not depend on
// which other file installed the CRDs last) and puts their conversion back afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoopbackConversionWebhook, startLoopbackConversionWebhook } from '../../src/addon/index.ts';
import {
  type ClusterManagementAddOn,
  type ClusterManagementAddOnV1beta1,
  clusterManagementAddOnResource,
  clusterManagementAddOnV1beta1Resource,
  hubCrdManifests,
  installNamespaceAnnotation,
  type ManagedClusterAddOn,
  type ManagedClusterAddOnV1beta1,
  managedClusterAddOnResource,
  managedClusterAddOnV1beta1Resource,
  reservedNoDefaultConfigName,
} from '../../src/api/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, kubectl, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const hubKubeconfig = env.hub.kubeconfigPath;
const kc = adminKubeConfig(env.hub);
const namespace = uniqueName('addon-conv');
const cmaName = uniqueName('addon-conv-cma');
const crdNames = ['clustermanagementaddons', 'managedclusteraddons'].map(
  (p) => `${p}.addon.open-cluster-management.io`,
);
const savedConversions = new Map<string, unknown>();
let webhook: LoopbackConversionWebhook | undefined;

const mcaAlpha = new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnResource);
const mcaBeta = new ResourceClient<ManagedClusterAddOnV1beta1>(kc, managedClusterAddOnV1beta1Resource);
const cmaAlpha = new ResourceClient<ClusterManagementAddOn>(kc, clusterManagementAddOnResource);
const cmaBeta = new ResourceClient<ClusterManagementAddOnV1beta1>(kc, clusterManagementAddOnV1beta1Resource);

async function setConversion(crd: string, conversion: unknown): Promise<void> {
  const patch = [{ op: 'replace', path: '/spec/conversion', value: conversion }];
  await kubectl(hubKubeconfig, ['patch', 'crd', crd, '--type=json', '-p', JSON.stringify(patch)]);
}

beforeAll(async () => {
  webhook = await startLoopbackConversionWebhook();
  const wanted = hubCrdManifests({ addonConversionWebhook: webhook.webhook });
  for (const name of crdNames) {
    const current = JSON.parse(await kubectl(hubKubeconfig, ['get', 'crd', name, '-o', 'json']));
    savedConversions.set(name, current.spec.conversion);
    const crd = wanted.find((c) => c.metadata.name === name) as { spec: { conversion?: unknown } };
    await setConversion(name, crd.spec.conversion);
  }
  await kubectl(hubKubeconfig, ['create', 'namespace', namespace]);
  // The apiserver picks up a CRD's new conversion asynchronously: wait until a v1beta1 read of a
  // probe object shows the webhook's mapping (installNamespace as an annotation).
  await mcaAlpha.create({
    metadata: { name: 'probe', namespace },
    spec: { installNamespace: 'probe-ns' },
  });
  await pollUntil(
    async () =>
      (await mcaBeta.get('probe', namespace))?.metadata.annotations?.[installNamespaceAnnotation] ===
      'probe-ns',
    { timeoutMs: 60_000, intervalMs: 200, description: 'the hub to convert through the test webhook' },
  );
});

afterAll(async () => {
  await kubectl(hubKubeconfig, [
    'delete',
    'namespace',
    namespace,
    '--ignore-not-found',
    '--wait=false',
  ]).catch(() => {});
  await kubectl(hubKubeconfig, [
    'delete',
    'clustermanagementaddons.v1alpha1.addon.open-cluster-management.io',
    cmaName,
    `${cmaName}-beta`,
    '--ignore-not-found',
  ]).catch(() => {});
  for (const [name, conversion] of savedConversions) await setConversion(name, conversion).catch(() => {});
  await webhook?.server.close();
});

describe('ManagedClusterAddOn at v1alpha1 and v1beta1', () => {
  it('written at v1alpha1 (spec and status), read, listed and watched at v1beta1 with OCM mappings', async () => {
    const created = await mcaAlpha.create({
      metadata: { name: 'helloworld', namespace },
      spec: {
        installNamespace: 'hello-agent',
        configs: [
          {
            group: 'addon.open-cluster-management.io',
            resource: 'addondeploymentconfigs',
            name: 'c',
            namespace,
          },
        ],
      },
    });
    await mcaAlpha.replaceStatus({
      ...created,
      status: {
        namespace: 'hello-agent',
        kubeClientDriver: 'token',
        registrations: [
          {
            signerName: 'kubernetes.io/kube-apiserver-client',
            subject: { user: 'agent-user', groups: ['g1'] },
          },
          { signerName: 'example.com/custom', subject: { user: 'u', organizationUnit: ['ou1'] } },
        ],
        configReferences: [
          {
            group: 'addon.open-cluster-management.io',
            resource: 'addondeploymentconfigs',
            name: 'c',
            namespace,
            desiredConfig: { name: 'c', namespace, specHash: 'h1' },
          },
        ],
      },
    });

    const beta = await mcaBeta.get('helloworld', namespace);
    expect(beta?.apiVersion).toBe('addon.open-cluster-management.io/v1beta1');
    expect(beta?.metadata.annotations?.[installNamespaceAnnotation]).toBe('hello-agent');
    expect(beta?.spec).toEqual({
      configs: [
        {
          group: 'addon.open-cluster-management.io',
          resource: 'addondeploymentconfigs',
          name: 'c',
          namespace,
        },
      ],
    });
    expect(beta?.status?.registrations).toEqual([
      {
        type: 'kubeClient',
        kubeClient: { driver: 'token', subject: { user: 'agent-user', groups: ['g1'] } },
      },
      {
        type: 'customSigner',
        customSigner: {
          signerName: 'example.com/custom',
          subject: { user: 'u', organizationUnits: ['ou1'] },
        },
      },
    ]);
    expect(beta?.status?.configReferences).toEqual([
      {
        group: 'addon.open-cluster-management.io',
        resource: 'addondeploymentconfigs',
        desiredConfig: { name: 'c', namespace, specHash: 'h1' },
      },
    ]);

    const listed = await mcaBeta.list({ namespace });
    const item = listed.items.find((i) => i.metadata.name === 'helloworld');
    expect(item?.apiVersion).toBe('addon.open-cluster-management.io/v1beta1');
    expect(item?.status?.registrations?.[0]).toMatchObject({ type: 'kubeClient' });

    // a watch from the start replays the object as ADDED, converted
    const events = await kubectl(hubKubeconfig, [
      'get',
      '--raw',
      `/apis/addon.open-cluster-management.io/v1beta1/namespaces/${namespace}/managedclusteraddons?watch=true&resourceVersion=0&timeoutSeconds=1`,
    ]);
    const added = events
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; object: ManagedClusterAddOnV1beta1 })
      .find((e) => e.object.metadata.name === 'helloworld');
    expect(added?.type).toBe('ADDED');
    expect(added?.object.apiVersion).toBe('addon.open-cluster-management.io/v1beta1');
    expect(added?.object.metadata.annotations?.[installNamespaceAnnotation]).toBe('hello-agent');

    // and back at v1alpha1 everything is as written
    const alpha = await mcaAlpha.get('helloworld', namespace);
    expect(alpha?.spec.installNamespace).toBe('hello-agent');
    expect(alpha?.metadata.annotations?.[installNamespaceAnnotation]).toBeUndefined();
    expect(alpha?.status?.kubeClientDriver).toBe('token');
    expect(alpha?.status?.registrations?.[1]).toEqual({
      signerName: 'example.com/custom',
      subject: { user: 'u', organizationUnit: ['ou1'] },
    });
  });

  it('written at v1beta1 (spec and status), read at v1alpha1 with every field', async () => {
    const created = await mcaBeta.create({
      metadata: {
        name: 'beta-written',
        namespace,
        annotations: { [installNamespaceAnnotation]: 'beta-agent', keep: 'me' },
      },
      spec: { configs: [{ group: '', resource: 'configmaps', name: 'cm', namespace }] },
    });
    expect(created.apiVersion).toBe('addon.open-cluster-management.io/v1beta1');
    await mcaBeta.replaceStatus({
      ...created,
      status: {
        registrations: [
          { type: 'kubeClient', kubeClient: { driver: 'csr', subject: { user: 'agent' } } },
          {
            type: 'customSigner',
            customSigner: { signerName: 'example.com/signer', subject: { groups: ['g'] } },
          },
        ],
        healthCheck: { mode: 'Customized' },
      },
    });
    const alpha = await mcaAlpha.get('beta-written', namespace);
    expect(alpha?.spec).toEqual({
      installNamespace: 'beta-agent',
      configs: [{ group: '', resource: 'configmaps', name: 'cm', namespace }],
    });
    expect(alpha?.metadata.annotations).toEqual({ keep: 'me' });
    expect(alpha?.status?.registrations).toEqual([
      { signerName: 'kubernetes.io/kube-apiserver-client', subject: { user: 'agent' } },
      { signerName: 'example.com/signer', subject: { groups: ['g'] } },
    ]);
    expect(alpha?.status?.kubeClientDriver).toBe('csr');
    expect(alpha?.status?.healthCheck).toEqual({ mode: 'Customized' });

    // an update at v1beta1 keeps what only v1alpha1 has (installNamespace rides on the annotation)
    const again = await mcaBeta.get('beta-written', namespace);
    await mcaBeta.replace({ ...again!, spec: { configs: [] } });
    const updated = await mcaAlpha.get('beta-written', namespace);
    expect(updated?.spec.installNamespace).toBe('beta-agent');
    expect(updated?.spec.configs ?? []).toEqual([]);
  });
});

describe('ClusterManagementAddOn at v1alpha1 and v1beta1', () => {
  it('supportedConfigs written at v1alpha1 read as defaultConfigs at v1beta1, and back', async () => {
    await cmaAlpha.create({
      metadata: { name: cmaName },
      spec: {
        addOnMeta: { displayName: 'Hello' },
        supportedConfigs: [
          {
            group: 'addon.open-cluster-management.io',
            resource: 'addondeploymentconfigs',
            defaultConfig: { name: 'd', namespace: 'default' },
          },
          { group: '', resource: 'configmaps' },
        ],
      },
    });
    const beta = await cmaBeta.get(cmaName);
    expect(beta?.spec.defaultConfigs).toEqual([
      {
        group: 'addon.open-cluster-management.io',
        resource: 'addondeploymentconfigs',
        name: 'd',
        namespace: 'default',
      },
      { group: '', resource: 'configmaps', name: reservedNoDefaultConfigName },
    ]);
    expect(beta?.spec.installStrategy).toEqual({ type: 'Manual' });
    // written back at v1beta1 unchanged: v1alpha1 still reads the same supportedConfigs
    await cmaBeta.replace(beta!);
    const alpha = await cmaAlpha.get(cmaName);
    expect(alpha?.spec.supportedConfigs).toEqual([
      {
        group: 'addon.open-cluster-management.io',
        resource: 'addondeploymentconfigs',
        defaultConfig: { name: 'd', namespace: 'default' },
      },
      { group: '', resource: 'configmaps' },
    ]);
  });

  it('defaultConfigs written at v1beta1 read as supportedConfigs at v1alpha1, listed at v1beta1', async () => {
    await cmaBeta.create({
      metadata: { name: `${cmaName}-beta` },
      spec: { defaultConfigs: [{ group: '', resource: 'configmaps', name: 'cm', namespace: 'default' }] },
    });
    const alpha = await cmaAlpha.get(`${cmaName}-beta`);
    expect(alpha?.spec.supportedConfigs).toEqual([
      { group: '', resource: 'configmaps', defaultConfig: { name: 'cm', namespace: 'default' } },
    ]);
    const listed = await cmaBeta.list();
    const item = listed.items.find((i) => i.metadata.name === `${cmaName}-beta`);
    expect(item?.spec.defaultConfigs).toEqual([
      { group: '', resource: 'configmaps', name: 'cm', namespace: 'default' },
    ]);
  });
});
