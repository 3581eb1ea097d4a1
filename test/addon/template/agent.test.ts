import { describe, expect, it } from 'vitest';
import {
  templateAddon,
  templateNameOf,
  templateRoleBindings,
} from '../../../src/addon/hub/template/agent.ts';
import type { ManagedClusterAddOn } from '../../../src/api/addon.ts';
import type { AddOnTemplateSpec } from '../../../src/api/addon-template.ts';

const spec = (over: Partial<AddOnTemplateSpec> = {}): AddOnTemplateSpec => ({
  addonName: 'hello',
  agentSpec: { workload: { manifests: [] } },
  ...over,
});

describe('AddOnTemplate registration', () => {
  const template = (registration: AddOnTemplateSpec['registration']): AddOnTemplateSpec =>
    spec({ registration });

  it('binds CurrentCluster in the cluster namespace and SingleNamespace where it says', () => {
    expect(
      templateRoleBindings(
        'c1',
        template([
          {
            type: 'KubeClient',
            kubeClient: {
              hubPermissions: [
                { type: 'CurrentCluster', currentCluster: { clusterRoleName: 'reader' } },
                {
                  type: 'SingleNamespace',
                  singleNamespace: {
                    namespace: 'shared',
                    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'writer' },
                  },
                },
              ],
            },
          },
        ]),
      ),
    ).toEqual([
      { namespace: 'c1', roleRef: { kind: 'ClusterRole', name: 'reader' } },
      { namespace: 'shared', roleRef: { kind: 'Role', name: 'writer' } },
    ]);
  });

  it('refuses a permission without its settings or with a roleRef kind other than Role or ClusterRole', () => {
    expect(() =>
      templateRoleBindings(
        'c1',
        template([{ type: 'KubeClient', kubeClient: { hubPermissions: [{ type: 'CurrentCluster' }] } }]),
      ),
    ).toThrow(/currentCluster.clusterRoleName/);
    expect(() =>
      templateRoleBindings(
        'c1',
        template([
          {
            type: 'KubeClient',
            kubeClient: {
              hubPermissions: [
                {
                  type: 'SingleNamespace',
                  singleNamespace: { namespace: 'x', roleRef: { apiGroup: '', kind: 'User', name: 'u' } },
                },
              ],
            },
          },
        ]),
      ),
    ).toThrow(/Role or ClusterRole, got "User"/);
  });

  it('takes the template a ManagedClusterAddOn uses from its config references, the desired config first', () => {
    const mca = (refs: unknown[]) =>
      ({ spec: {}, status: { configReferences: refs } }) as unknown as ManagedClusterAddOn;
    const ref = { group: 'addon.open-cluster-management.io', resource: 'addontemplates', name: 'old' };
    expect(templateNameOf(mca([{ ...ref, desiredConfig: { name: 'new', specHash: 'h' } }]))).toBe('new');
    expect(
      templateNameOf(mca([{ ...ref, desiredConfig: { name: 'adc' }, resource: 'addondeploymentconfigs' }])),
    ).toBeUndefined();
    // before the install strategy wrote one: the CMA's default, overridden by the MCA's spec.configs
    const cma = {
      metadata: { name: 'hello' },
      spec: {
        supportedConfigs: [{ group: ref.group, resource: ref.resource, defaultConfig: { name: 'dflt' } }],
      },
    } as never;
    expect(templateNameOf(mca([]), cma)).toBe('dflt');
    const own = { spec: { configs: [{ group: ref.group, resource: ref.resource, name: 'mine' }] } } as never;
    expect(templateNameOf(own, cma)).toBe('mine');
  });
});

describe('a template add-on’s registrations', () => {
  const mca = {
    metadata: { name: 'hello', namespace: 'c1' },
    spec: {},
    status: {
      configReferences: [
        {
          group: 'addon.open-cluster-management.io',
          resource: 'addontemplates',
          name: 't',
          desiredConfig: { name: 't', specHash: 'h' },
        },
      ],
    },
  } as unknown as ManagedClusterAddOn;
  const addonWith = (over: Partial<AddOnTemplateSpec>) =>
    templateAddon('hello', {
      template: (name) => (name === 't' ? { metadata: { name }, spec: spec(over) } : undefined),
      clusterManagementAddOn: () => undefined,
      sign: async () => '',
    });
  const cluster = { metadata: { name: 'c1' } } as never;

  it('KubeClient gets OCM’s template user and default groups; a CustomSigner without subject the user alone', () => {
    const addon = addonWith({
      registration: [
        { type: 'KubeClient' },
        {
          type: 'CustomSigner',
          customSigner: { signerName: 'example.com/hello', signingCA: { name: 'ca' } },
        },
      ],
    });
    const user = 'system:open-cluster-management:cluster:c1:addon:hello:agent:hello-agent';
    expect(addon.registration?.configs?.(cluster, mca)).toEqual([
      {
        signerName: 'kubernetes.io/kube-apiserver-client',
        subject: {
          user,
          groups: [
            'system:open-cluster-management:cluster:c1:addon:hello',
            'system:open-cluster-management:addon:hello',
            'system:authenticated',
          ],
        },
      },
      { signerName: 'example.com/hello', subject: { user } },
    ]);
  });

  it('refuses a template written for another add-on, and a custom signer whose CA is outside the hub namespace', async () => {
    expect(() => addonWith({ addonName: 'other' }).registration?.configs?.(cluster, mca)).toThrow(
      /is for add-on other, not this one/,
    );
    const addon = addonWith({
      registration: [
        {
          type: 'CustomSigner',
          customSigner: {
            signerName: 'example.com/hello',
            signingCA: { name: 'ca', namespace: 'kube-system' },
          },
        },
      ],
    });
    await expect(
      addon.registration?.sign?.({ spec: { signerName: 'example.com/hello', request: '' } } as never, mca),
    ).rejects.toThrow(/signingCA must be in open-cluster-management-addon-signers, got kube-system/);
  });
});
