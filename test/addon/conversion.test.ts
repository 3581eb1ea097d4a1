// v1alpha1 ⇄ v1beta1 conversion of the addon kinds: every field survives a round trip, and OCM's
// mappings hold (defaultConfig ⇄ defaultConfigs with the no-default sentinel, installNamespace ⇄
// annotation, registrations by signer ⇄ typed ones, kubeClientDriver ⇄ the kubeClient driver).
import { describe, expect, it } from 'vitest';
import { convertAddonObject } from '../../src/addon/index.ts';
import { installNamespaceAnnotation, reservedNoDefaultConfigName } from '../../src/api/index.ts';

const alpha = 'addon.open-cluster-management.io/v1alpha1';
const beta = 'addon.open-cluster-management.io/v1beta1';

const condition = {
  type: 'Available',
  status: 'True',
  reason: 'Leased',
  message: 'lease updated',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  observedGeneration: 2,
};

const placements = [
  {
    name: 'all',
    namespace: 'default',
    configs: [
      {
        group: 'addon.open-cluster-management.io',
        resource: 'addondeploymentconfigs',
        name: 'c',
        namespace: 'default',
      },
    ],
    rolloutStrategy: {
      type: 'Progressive',
      progressive: { maxConcurrency: '25%', mandatoryDecisionGroups: [{ groupName: 'canary' }] },
    },
  },
];

const progressions = [
  {
    name: 'all',
    namespace: 'default',
    conditions: [condition],
    configReferences: [
      {
        group: 'addon.open-cluster-management.io',
        resource: 'addondeploymentconfigs',
        desiredConfig: { name: 'c', namespace: 'default', specHash: 'h1' },
        lastAppliedConfig: { name: 'c', namespace: 'default', specHash: 'h0' },
        lastKnownGoodConfig: { name: 'c', namespace: 'default', specHash: 'h0' },
      },
    ],
  },
];

function cmaV1beta1() {
  return {
    apiVersion: beta,
    kind: 'ClusterManagementAddOn',
    metadata: {
      name: 'helloworld',
      uid: 'u1',
      resourceVersion: '7',
      labels: { a: 'b' },
      annotations: { x: 'y' },
    },
    spec: {
      addOnMeta: { displayName: 'Hello', description: 'says hello' },
      defaultConfigs: [
        {
          group: 'addon.open-cluster-management.io',
          resource: 'addondeploymentconfigs',
          name: 'c',
          namespace: 'default',
        },
        { group: '', resource: 'configmaps', name: reservedNoDefaultConfigName },
      ],
      installStrategy: { type: 'Placements', placements },
    },
    status: {
      defaultConfigReferences: [
        { group: '', resource: 'configmaps', desiredConfig: { name: 'cm', namespace: 'ns', specHash: 'h' } },
      ],
      installProgressions: progressions,
    },
  };
}

function mcaV1alpha1() {
  return {
    apiVersion: alpha,
    kind: 'ManagedClusterAddOn',
    metadata: { name: 'helloworld', namespace: 'cluster1', uid: 'u2', generation: 3, labels: { a: 'b' } },
    spec: {
      installNamespace: 'hello-agent',
      configs: [{ group: '', resource: 'configmaps', name: 'cm', namespace: 'cluster1' }],
    },
    status: {
      conditions: [condition],
      relatedObjects: [
        {
          group: 'addon.open-cluster-management.io',
          resource: 'clustermanagementaddons',
          name: 'helloworld',
        },
      ],
      addOnMeta: { displayName: 'Hello', description: 'says hello' },
      supportedConfigs: [{ group: '', resource: 'configmaps' }],
      configReferences: [
        {
          group: '',
          resource: 'configmaps',
          name: 'cm',
          namespace: 'cluster1',
          desiredConfig: { name: 'cm', namespace: 'cluster1', specHash: 'h1' },
          lastAppliedConfig: { name: 'cm', namespace: 'cluster1', specHash: 'h0' },
          lastObservedGeneration: 4,
        },
      ],
      namespace: 'hello-agent',
      registrations: [
        {
          signerName: 'kubernetes.io/kube-apiserver-client',
          subject: {
            user: 'system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:a',
            groups: ['g1'],
          },
        },
        {
          signerName: 'example.com/custom',
          subject: { user: 'u', groups: ['g2'], organizationUnit: ['ou1'] },
        },
      ],
      healthCheck: { mode: 'Customized' },
      kubeClientDriver: 'token',
    },
  };
}

describe('ClusterManagementAddOn conversion', () => {
  it('a v1beta1 object survives v1beta1 → v1alpha1 → v1beta1 unchanged', () => {
    const original = cmaV1beta1();
    const back = convertAddonObject(convertAddonObject(original, alpha), beta);
    expect(back).toEqual(original);
  });

  it('maps defaultConfigs to supportedConfigs[].defaultConfig, the sentinel to no default', () => {
    const converted = convertAddonObject(cmaV1beta1(), alpha) as ReturnType<typeof cmaV1beta1> & {
      spec: Record<string, unknown>;
      status: Record<string, unknown>;
    };
    expect(converted.apiVersion).toBe(alpha);
    expect(converted.spec['supportedConfigs']).toEqual([
      {
        group: 'addon.open-cluster-management.io',
        resource: 'addondeploymentconfigs',
        defaultConfig: { name: 'c', namespace: 'default' },
      },
      { group: '', resource: 'configmaps' },
    ]);
    expect(converted.spec['defaultConfigs']).toBeUndefined();
    expect(converted.status['defaultconfigReferences']).toEqual(cmaV1beta1().status.defaultConfigReferences);
    expect(converted.status['defaultConfigReferences']).toBeUndefined();
    expect(converted.spec.installStrategy).toEqual(cmaV1beta1().spec.installStrategy);
    expect(converted.metadata).toEqual(cmaV1beta1().metadata);
  });

  it('a v1alpha1 supportedConfig without a default becomes the reserved name and comes back without one', () => {
    const original = {
      apiVersion: alpha,
      kind: 'ClusterManagementAddOn',
      metadata: { name: 'a' },
      spec: { supportedConfigs: [{ group: '', resource: 'configmaps' }] },
    };
    const converted = convertAddonObject(original, beta);
    expect(converted['spec']).toEqual({
      defaultConfigs: [{ group: '', resource: 'configmaps', name: reservedNoDefaultConfigName }],
    });
    expect(convertAddonObject(converted, alpha)).toEqual(original);
  });

  it("drops v1alpha1's deprecated addOnConfiguration at v1beta1, as OCM does", () => {
    const converted = convertAddonObject(
      {
        apiVersion: alpha,
        kind: 'ClusterManagementAddOn',
        metadata: { name: 'a' },
        spec: { addOnConfiguration: { crdName: 'x', crName: 'y' } },
      },
      beta,
    );
    expect(converted['spec']).toEqual({});
  });
});

describe('ManagedClusterAddOn conversion', () => {
  it('a v1alpha1 object survives v1alpha1 → v1beta1 → v1alpha1 unchanged', () => {
    const original = mcaV1alpha1();
    const back = convertAddonObject(convertAddonObject(original, beta), alpha);
    expect(back).toEqual(original);
  });

  it('moves installNamespace into the annotation and types the registrations', () => {
    const converted = convertAddonObject(mcaV1alpha1(), beta) as Record<string, Record<string, unknown>>;
    expect(converted['apiVersion']).toBe(beta);
    expect(converted['metadata']!['annotations']).toEqual({ [installNamespaceAnnotation]: 'hello-agent' });
    expect(converted['spec']).toEqual({ configs: mcaV1alpha1().spec.configs });
    const status = converted['status']!;
    expect(status['registrations']).toEqual([
      {
        type: 'kubeClient',
        kubeClient: {
          driver: 'token',
          subject: {
            user: 'system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:a',
            groups: ['g1'],
          },
        },
      },
      {
        type: 'customSigner',
        customSigner: {
          signerName: 'example.com/custom',
          subject: { user: 'u', groups: ['g2'], organizationUnits: ['ou1'] },
        },
      },
    ]);
    expect(status['kubeClientDriver']).toBeUndefined();
    expect(status['configReferences']).toEqual([
      {
        group: '',
        resource: 'configmaps',
        desiredConfig: { name: 'cm', namespace: 'cluster1', specHash: 'h1' },
        lastAppliedConfig: { name: 'cm', namespace: 'cluster1', specHash: 'h0' },
        lastObservedGeneration: 4,
      },
    ]);
    expect(status['conditions']).toEqual([condition]);
    expect(status['healthCheck']).toEqual({ mode: 'Customized' });
  });

  it('a v1beta1 object survives v1beta1 → v1alpha1 → v1beta1 unchanged', () => {
    const original = convertAddonObject(mcaV1alpha1(), beta);
    expect(convertAddonObject(convertAddonObject(original, alpha), beta)).toEqual(original);
  });

  it('a kubeClient registration without a v1alpha1 driver reads as csr, as OCM defaults it', () => {
    const obj = mcaV1alpha1();
    delete (obj.status as { kubeClientDriver?: string }).kubeClientDriver;
    const converted = convertAddonObject(obj, beta) as {
      status: { registrations: { kubeClient?: { driver: string } }[] };
    };
    expect(converted.status.registrations[0]!.kubeClient!.driver).toBe('csr');
  });

  it('a deprecated configReference name without desiredConfig becomes the desired config, and stays', () => {
    const obj = {
      apiVersion: alpha,
      kind: 'ManagedClusterAddOn',
      metadata: { name: 'a', namespace: 'c1' },
      spec: {},
      status: { configReferences: [{ group: '', resource: 'configmaps', name: 'cm', namespace: 'c1' }] },
    };
    const converted = convertAddonObject(obj, beta) as { status: { configReferences: unknown[] } };
    expect(converted.status.configReferences).toEqual([
      { group: '', resource: 'configmaps', desiredConfig: { name: 'cm', namespace: 'c1' } },
    ]);
    // back at v1alpha1 the name is kept, now alongside the desired config it stood for
    const back = convertAddonObject(converted, alpha) as { status: { configReferences: unknown[] } };
    expect(back.status.configReferences).toEqual([
      {
        group: '',
        resource: 'configmaps',
        name: 'cm',
        namespace: 'c1',
        desiredConfig: { name: 'cm', namespace: 'c1' },
      },
    ]);
  });

  it('keeps other annotations and drops an emptied annotations map at v1alpha1', () => {
    const withOther = convertAddonObject(
      {
        apiVersion: beta,
        kind: 'ManagedClusterAddOn',
        metadata: { name: 'a', annotations: { k: 'v', [installNamespaceAnnotation]: 'ns1' } },
        spec: {},
      },
      alpha,
    );
    expect(withOther['metadata']).toEqual({ name: 'a', annotations: { k: 'v' } });
    expect(withOther['spec']).toEqual({ installNamespace: 'ns1' });
    const onlyOurs = convertAddonObject(
      {
        apiVersion: beta,
        kind: 'ManagedClusterAddOn',
        metadata: { name: 'a', annotations: { [installNamespaceAnnotation]: 'ns1' } },
        spec: {},
      },
      alpha,
    );
    expect(onlyOurs['metadata']).toEqual({ name: 'a' });
  });

  it('returns a copy and never mutates its input', () => {
    const input = mcaV1alpha1();
    const snapshot = structuredClone(input);
    const same = convertAddonObject(input, alpha);
    convertAddonObject(input, beta);
    expect(input).toEqual(snapshot);
    expect(same).toEqual(snapshot);
    expect(same).not.toBe(input);
  });
});

describe('conversion refuses what it cannot convert', () => {
  it.each([
    [
      'another kind',
      { apiVersion: alpha, kind: 'AddOnTemplate', metadata: { name: 'a' } },
      beta,
      /kind "AddOnTemplate"/,
    ],
    [
      'another group',
      { apiVersion: 'v1', kind: 'ManagedClusterAddOn', metadata: { name: 'a' } },
      beta,
      /apiVersion "v1"/,
    ],
    [
      'an unknown target',
      { apiVersion: alpha, kind: 'ManagedClusterAddOn', metadata: { name: 'a' } },
      `${alpha}2`,
      /v1alpha12/,
    ],
    [
      'an untyped registration',
      {
        apiVersion: beta,
        kind: 'ManagedClusterAddOn',
        metadata: { name: 'a' },
        spec: {},
        status: { registrations: [{ type: 'csr' }] },
      },
      alpha,
      /kubeClient or customSigner/,
    ],
    ['no object', 'text', beta, /not a JSON object/],
  ])('%s', (_, obj, to, message) => {
    expect(() => convertAddonObject(obj, to)).toThrow(message);
  });
});
