// What the deploy controller writes and from which configs: the works (names, label, owner,
// config-spec-hash, probe rules, split), the install namespace, the config references, and what
// the AddonManager adds to an existing ClusterManagementAddOn.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  configRefsOf,
  configSpecHashAnnotationValue,
  installNamespaceOf,
  variablesOf,
} from '../../src/addon/hub/deploy/configs.ts';
import {
  deletionOrphanAnnotation,
  desiredDeployWorks,
  placeInNamespace,
  updatedWork,
  workIsCurrent,
} from '../../src/addon/hub/deploy/work.ts';
import { clusterManagementAddOnPatch } from '../../src/addon/sdk/manager.ts';
import type { ClusterManagementAddOn, ManagedClusterAddOn } from '../../src/api/addon.ts';

const adc = { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' };
const mca = (
  spec: ManagedClusterAddOn['spec'] = {},
  status: ManagedClusterAddOn['status'] = {},
): ManagedClusterAddOn => ({
  apiVersion: 'addon.open-cluster-management.io/v1alpha1',
  kind: 'ManagedClusterAddOn',
  metadata: { name: 'hello', namespace: 'cluster1', uid: 'uid-1' },
  spec,
  status,
});
const cm = (name: string, namespace?: string, size = 0): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(namespace ? { namespace } : {}) },
    data: { x: 'y'.repeat(size) },
  }) as KubernetesObject;

describe('placeInNamespace', () => {
  it('namespaced objects without one get the install namespace; cluster-scoped stay; the Namespace comes first', () => {
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r' } };
    const out = placeInNamespace([cm('a'), cm('b', 'elsewhere'), role], 'addon-ns');
    expect(out.map((o) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`)).toEqual([
      'Namespace//addon-ns',
      'ConfigMap/addon-ns/a',
      'ConfigMap/elsewhere/b',
      'ClusterRole//r',
    ]);
    const withNs = placeInNamespace(
      [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'addon-ns' } }],
      'addon-ns',
    );
    expect(withNs).toHaveLength(1);
  });

  it('the Namespace it adds is marked deletion-orphan: other addons share it', () => {
    const [ns] = placeInNamespace([cm('a')], 'addon-ns');
    expect(ns?.metadata?.annotations).toEqual({ [deletionOrphanAnnotation]: '' });
  });
});

describe('desiredDeployWorks', () => {
  const probe = {
    resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'agent', namespace: 'ns' },
    feedbackRules: [{ type: 'WellKnownStatus' as const }],
  };
  const agent = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'agent', namespace: 'ns' } };

  it('one work addon-<addon>-deploy-0 with label, controller owner, config hash and probe rules', () => {
    const [work, ...rest] = desiredDeployWorks({
      addonName: 'hello',
      mca: mca(),
      manifests: [cm('a', 'ns'), agent],
      manifestConfigs: [probe],
      configSpecHash: '{"k":"h"}',
    });
    expect(rest).toEqual([]);
    expect(work?.metadata).toEqual({
      name: 'addon-hello-deploy-0',
      namespace: 'cluster1',
      labels: { 'open-cluster-management.io/addon-name': 'hello' },
      annotations: { 'open-cluster-management.io/config-spec-hash': '{"k":"h"}' },
      ownerReferences: [
        {
          apiVersion: 'addon.open-cluster-management.io/v1alpha1',
          kind: 'ManagedClusterAddOn',
          name: 'hello',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(work?.spec.manifestConfigs).toEqual([{ ...probe, feedbackScrapeType: 'Poll' }]);
  });

  it('splits manifests into works of at most maxWorkBytes, in order, each with its own probe rules', () => {
    const works = desiredDeployWorks({
      addonName: 'hello',
      mca: mca(),
      manifests: [cm('a', 'ns', 600), cm('b', 'ns', 600), agent],
      manifestConfigs: [probe],
      maxWorkBytes: 1000,
    });
    expect(works.map((w) => w.metadata.name)).toEqual(['addon-hello-deploy-0', 'addon-hello-deploy-1']);
    expect(works.map((w) => w.spec.workload?.manifests?.map((m) => m.metadata?.name))).toEqual([
      ['a'],
      ['b', 'agent'],
    ]);
    expect(works[0]?.spec.manifestConfigs).toBeUndefined();
    expect(works[1]?.spec.manifestConfigs).toHaveLength(1);
  });

  it('deletion-orphan manifests are orphaned by the work’s deleteOption (SelectivelyOrphan), others are not', () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'things.example.com', annotations: { [deletionOrphanAnnotation]: 'true' } },
    };
    const policy = {
      apiVersion: 'example.com/v1',
      kind: 'Policy',
      metadata: { name: 'p', namespace: 'ns', annotations: { [deletionOrphanAnnotation]: '' } },
    };
    const [work] = desiredDeployWorks({
      addonName: 'hello',
      mca: mca(),
      manifests: placeInNamespace([crd, policy, cm('a', 'ns'), agent], 'addon-ns'),
      manifestConfigs: [],
    });
    expect(work?.spec.deleteOption).toEqual({
      propagationPolicy: 'SelectivelyOrphan',
      selectivelyOrphans: {
        orphaningRules: [
          { group: '', resource: 'namespaces', name: 'addon-ns', namespace: '' },
          {
            group: 'apiextensions.k8s.io',
            resource: 'customresourcedefinitions',
            name: 'things.example.com',
            namespace: '',
          },
          { group: 'example.com', resource: 'policies', name: 'p', namespace: 'ns' },
        ],
      },
    });
    const [plain] = desiredDeployWorks({
      addonName: 'hello',
      mca: mca(),
      manifests: [agent],
      manifestConfigs: [],
    });
    expect(plain?.spec.deleteOption).toBeUndefined();
    // A work written before the annotation is not current, and the update adds the option.
    if (!work || !plain) throw new Error('no work');
    const old = { ...work, spec: { ...work.spec, deleteOption: undefined } };
    expect(workIsCurrent(old, work)).toBe(false);
    expect(updatedWork(old, work).spec.deleteOption).toEqual(work.spec.deleteOption);
    expect(updatedWork(work, plain).spec.deleteOption).toBeUndefined();
  });

  it('workIsCurrent sees spec, annotation and owner changes; updatedWork keeps foreign labels and owners', () => {
    const [want] = desiredDeployWorks({
      addonName: 'hello',
      mca: mca(),
      manifests: [cm('a', 'ns')],
      manifestConfigs: [],
    });
    if (!want) throw new Error('no work');
    const existing = {
      ...want,
      metadata: {
        ...want.metadata,
        resourceVersion: '7',
        labels: { ...want.metadata.labels, team: 'x' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'u' }],
      },
    };
    expect(workIsCurrent(existing, want)).toBe(false); // no controller owner yet
    const updated = updatedWork(existing, want);
    expect(workIsCurrent(updated, want)).toBe(true);
    expect(updated.metadata.labels).toEqual({ 'open-cluster-management.io/addon-name': 'hello', team: 'x' });
    expect(updated.metadata.ownerReferences).toHaveLength(2);
    expect(updated.metadata.resourceVersion).toBe('7');
    const [changed] = desiredDeployWorks({
      addonName: 'hello',
      mca: mca(),
      manifests: [cm('b', 'ns')],
      manifestConfigs: [],
    });
    if (!changed) throw new Error('no work');
    expect(workIsCurrent(updated, changed)).toBe(false);
  });
});

describe('configs and install namespace', () => {
  const cma = (
    supportedConfigs: ClusterManagementAddOn['spec']['supportedConfigs'],
  ): ClusterManagementAddOn => ({
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ClusterManagementAddOn',
    metadata: { name: 'hello' },
    spec: { supportedConfigs },
  });

  it('desiredConfigs written by the install strategy win', () => {
    const addon = mca(
      { configs: [{ ...adc, namespace: 'c1', name: 'spec-one' }] },
      {
        configReferences: [
          { ...adc, name: 'x', desiredConfig: { namespace: 'c1', name: 'desired', specHash: 'h' } },
        ],
      },
    );
    expect(configRefsOf(addon, undefined)).toEqual([
      { ...adc, namespace: 'c1', name: 'desired', specHash: 'h' },
    ]);
  });

  it('else the supportedConfigs defaults, overridden per group/resource by spec.configs', () => {
    const defaults = cma([
      { ...adc, defaultConfig: { namespace: 'hub', name: 'default' } },
      {
        group: 'proxy.open-cluster-management.io',
        resource: 'managedproxyconfigurations',
        defaultConfig: { name: 'cluster-proxy' },
      },
      { group: 'x.io', resource: 'nodefaults', defaultConfig: { name: '__reserved_no_default__' } },
    ]);
    expect(configRefsOf(mca(), defaults)).toEqual([
      { ...adc, namespace: 'hub', name: 'default' },
      {
        group: 'proxy.open-cluster-management.io',
        resource: 'managedproxyconfigurations',
        name: 'cluster-proxy',
      },
    ]);
    expect(configRefsOf(mca({ configs: [{ ...adc, namespace: 'c1', name: 'mine' }] }), defaults)[0]).toEqual({
      ...adc,
      namespace: 'c1',
      name: 'mine',
    });
  });

  it('install namespace: the config’s agentInstallNamespace, else spec.installNamespace, else the default', () => {
    expect(installNamespaceOf(mca({ installNamespace: 'mine' }), { agentInstallNamespace: 'cfg' })).toBe(
      'cfg',
    );
    expect(installNamespaceOf(mca({ installNamespace: 'mine' }), { agentInstallNamespace: '' })).toBe('mine');
    expect(installNamespaceOf(mca(), undefined)).toBe('open-cluster-management-agent-addon');
  });

  it('variables and the work annotation', () => {
    expect(variablesOf({ customizedVariables: [{ name: 'A', value: '1' }, { name: 'B' }] })).toEqual({
      A: '1',
      B: '',
    });
    const addon = mca(
      {},
      {
        configReferences: [
          { ...adc, name: 'c', desiredConfig: { namespace: 'c1', name: 'c', specHash: 'h' } },
        ],
      },
    );
    expect(configSpecHashAnnotationValue(addon)).toBe(
      '{"addondeploymentconfigs.addon.open-cluster-management.io/c1/c":"h"}',
    );
    expect(configSpecHashAnnotationValue(mca())).toBeUndefined();
  });
});

describe('an existing ClusterManagementAddOn', () => {
  const existing: ClusterManagementAddOn = {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ClusterManagementAddOn',
    metadata: { name: 'hello' },
    spec: {
      addOnMeta: { displayName: 'Theirs' },
      supportedConfigs: [{ ...adc, defaultConfig: { namespace: 'hub', name: 'theirs' } }],
      installStrategy: { type: 'Placements', placements: [{ name: 'p', namespace: 'ns' }] },
    },
  };

  it('gains only what it lacks: its installStrategy, meta and default configs stay', () => {
    const patch = clusterManagementAddOnPatch(existing, {
      name: 'hello',
      displayName: 'Mine',
      description: 'says hello',
      supportedConfigs: [adc, { group: 'x.io', resource: 'things' }],
      manifests: () => [],
    });
    expect(patch).toEqual({
      spec: {
        addOnMeta: { displayName: 'Theirs', description: 'says hello' },
        supportedConfigs: [
          { ...adc, defaultConfig: { namespace: 'hub', name: 'theirs' } },
          { group: 'x.io', resource: 'things' },
        ],
      },
    });
    expect(
      clusterManagementAddOnPatch(existing, { name: 'hello', supportedConfigs: [adc], manifests: () => [] }),
    ).toBeUndefined();
  });
});
