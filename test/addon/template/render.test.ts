import { describe, expect, it } from 'vitest';
import { renderTemplate, substitute, templateValues } from '../../../src/addon/hub/template/render.ts';
import type { AddOnTemplateSpec } from '../../../src/api/addon-template.ts';

const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'hello', namespace: 'default' },
  spec: {
    template: {
      spec: {
        containers: [
          { name: 'c', image: 'img', args: ['--cluster={{CLUSTER_NAME}}', '--level={{LOG_LEVEL}}'] },
        ],
      },
    },
  },
};

const spec = (over: Partial<AddOnTemplateSpec> = {}): AddOnTemplateSpec => ({
  addonName: 'hello',
  agentSpec: { workload: { manifests: [deployment] } },
  ...over,
});

const input = (over: Partial<AddOnTemplateSpec> = {}, variables: Record<string, string> = {}) => ({
  addonName: 'hello',
  clusterName: 'c1',
  installNamespace: 'open-cluster-management-agent-addon',
  variables,
  template: spec(over),
});

describe('AddOnTemplate rendering', () => {
  it('replaces placeholders with the built-ins and AddOnDeploymentConfig variables; built-ins win; unknown ones become empty', () => {
    const [d] = renderTemplate(input({}, { LOG_LEVEL: '4', CLUSTER_NAME: 'spoofed' })) as [typeof deployment];
    expect(d.spec.template.spec.containers[0]?.args).toEqual(['--cluster=c1', '--level=4']);
    const [e] = renderTemplate(input()) as [typeof deployment];
    expect(e.spec.template.spec.containers[0]?.args).toEqual(['--cluster=c1', '--level=']);
  });

  it('inserts values JSON-escaped, so a variable cannot add fields to a manifest', () => {
    const obj = substitute(
      { kind: 'ConfigMap', data: { v: '{{X}}' } },
      new Map([['X', '","privileged":"true']]),
    );
    expect(obj).toEqual({ kind: 'ConfigMap', data: { v: '","privileged":"true' } });
  });

  it('gives each Deployment container the values as env, and with a registration HUB_KUBECONFIG and the hub-kubeconfig volume', () => {
    const [d] = renderTemplate(input({ registration: [{ type: 'KubeClient' }] })) as [
      {
        spec: {
          template: {
            spec: {
              containers: { env: unknown[]; volumeMounts: unknown[] }[];
              volumes: unknown[];
            };
          };
        };
      },
    ];
    const pod = d.spec.template.spec;
    expect(pod.containers[0]?.env).toEqual([
      { name: 'HUB_KUBECONFIG', value: '/managed/hub-kubeconfig/kubeconfig' },
      { name: 'CLUSTER_NAME', value: 'c1' },
      { name: 'INSTALL_NAMESPACE', value: 'open-cluster-management-agent-addon' },
    ]);
    expect(pod.containers[0]?.volumeMounts).toEqual([
      { name: 'hub-kubeconfig', mountPath: '/managed/hub-kubeconfig' },
    ]);
    expect(pod.volumes).toEqual([{ name: 'hub-kubeconfig', secret: { secretName: 'hello-hub-kubeconfig' } }]);
    // without `registration`, no HUB_KUBECONFIG (OCM's rule)
    expect(templateValues(input()).ordered.map(([k]) => k)).toEqual(['CLUSTER_NAME', 'INSTALL_NAMESPACE']);
  });

  it('mounts a custom signer’s client certificate Secret at /managed/<signer>', () => {
    const [d] = renderTemplate(
      input({
        registration: [
          {
            type: 'CustomSigner',
            customSigner: { signerName: 'example.com/hello', signingCA: { name: 'ca' } },
          },
        ],
      }),
    ) as [
      { spec: { template: { spec: { volumes: unknown[]; containers: { volumeMounts: unknown[] }[] } } } },
    ];
    expect(d.spec.template.spec.volumes).toEqual([
      { name: 'cert-example-com-hello', secret: { secretName: 'hello-example.com-hello-client-cert' } },
    ]);
    expect(d.spec.template.spec.containers[0]?.volumeMounts).toEqual([
      { name: 'cert-example-com-hello', mountPath: '/managed/example.com-hello' },
    ]);
  });

  it('moves namespaced objects, Namespaces and binding subjects to an AddOnDeploymentConfig’s agentInstallNamespace', () => {
    const objects = renderTemplate({
      ...input({
        agentSpec: {
          workload: {
            manifests: [
              { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'old' } },
              { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'old' } },
              { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r' } },
              {
                apiVersion: 'rbac.authorization.k8s.io/v1',
                kind: 'ClusterRoleBinding',
                metadata: { name: 'b' },
                subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: 'old' }],
              },
            ],
          },
        },
      }),
      configuredInstallNamespace: 'new',
    }) as { metadata: { name: string; namespace?: string }; subjects?: { namespace: string }[] }[];
    expect(objects.map((o) => [o.metadata.name, o.metadata.namespace])).toEqual([
      ['new', undefined],
      ['cm', 'new'],
      ['r', undefined],
      ['b', undefined],
    ]);
    expect(objects[3]?.subjects?.[0]?.namespace).toBe('new');
  });

  it('refuses a manifest that renders to something other than an object', () => {
    expect(() =>
      renderTemplate(input({ agentSpec: { workload: { manifests: ['{{X}}' as never] } } })),
    ).toThrow(/must be an object/);
  });
});
