// AddOnDeploymentConfig applied to rendered agent objects: each field on its own, as OCM's addon
// framework applies it to template addons.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  applyDeploymentConfig,
  clusterRegistriesOf,
  DeploymentConfigError,
  overrideImage,
  proxyCaConfigMapName,
} from '../../src/addon/hub/config/deployment-config.ts';

const ns = 'open-cluster-management-agent-addon';

interface Container {
  name: string;
  image?: string;
  env?: { name: string; value?: string }[];
  resources?: unknown;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  volumes?: { name: string; configMap?: { name: string } }[];
}

function deployment(name: string, containers: Container[], namespace = ns): KubernetesObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: { template: { spec: { containers } } },
  } as KubernetesObject;
}
const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns } };
const podSpecOf = (o: KubernetesObject | undefined) =>
  (o as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;

describe('applyDeploymentConfig', () => {
  it('without a config leaves the objects equal and does not modify its input', () => {
    const input = [deployment('agent', [{ name: 'agent', image: 'quay.io/x/agent:1' }]), configMap];
    const before = structuredClone(input);
    const out = applyDeploymentConfig(input, { addonName: 'a', installNamespace: ns });
    expect(out).toEqual(before);
    expect(out[0]).not.toBe(input[0]);
  });

  it('proxyConfig: HTTP(S)_PROXY and NO_PROXY in both spellings on every container, other env kept', () => {
    const input = [
      deployment('agent', [
        {
          name: 'agent',
          env: [
            { name: 'KEEP', value: '1' },
            { name: 'HTTP_PROXY', value: 'old' },
          ],
        },
        { name: 'sidecar' },
      ]),
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j', namespace: ns },
        spec: { template: { spec: { containers: [{ name: 'j' }] } } },
      },
      configMap,
    ];
    const out = applyDeploymentConfig(input, {
      addonName: 'a',
      installNamespace: ns,
      config: {
        proxyConfig: {
          httpProxy: 'http://squid:3128',
          httpsProxy: 'http://squid:3128',
          noProxy: '10.0.0.0/8',
        },
      },
    });
    const [agent, sidecar] = podSpecOf(out[0]).containers;
    expect(agent?.env).toEqual([
      { name: 'KEEP', value: '1' },
      { name: 'HTTP_PROXY', value: 'http://squid:3128' },
      { name: 'http_proxy', value: 'http://squid:3128' },
      { name: 'HTTPS_PROXY', value: 'http://squid:3128' },
      { name: 'https_proxy', value: 'http://squid:3128' },
      { name: 'NO_PROXY', value: '10.0.0.0/8' },
      { name: 'no_proxy', value: '10.0.0.0/8' },
    ]);
    expect(sidecar?.env?.map((e) => e.name)).toContain('HTTPS_PROXY');
    expect(podSpecOf(out[1]).containers[0]?.env?.map((e) => e.name)).toContain('NO_PROXY');
    expect(out[2]).toEqual(configMap);
    expect(out).toHaveLength(3);
  });

  it('proxyConfig caBundle: a ConfigMap <addon>-proxy-ca in the install namespace, mounted with CA_BUNDLE_FILE_PATH', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const out = applyDeploymentConfig([deployment('agent', [{ name: 'agent' }])], {
      addonName: 'hello',
      installNamespace: ns,
      config: {
        proxyConfig: { httpsProxy: 'https://squid:3129', caBundle: Buffer.from(pem).toString('base64') },
      },
    });
    const spec = podSpecOf(out[0]);
    expect(spec.volumes).toEqual([{ name: 'proxy-ca-bundle', configMap: { name: 'hello-proxy-ca' } }]);
    expect(spec.containers[0]?.volumeMounts).toEqual([
      { name: 'proxy-ca-bundle', mountPath: '/managed/proxy-ca' },
    ]);
    expect(spec.containers[0]?.env).toContainEqual({
      name: 'CA_BUNDLE_FILE_PATH',
      value: '/managed/proxy-ca/ca-bundle.crt',
    });
    expect(out[1]).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: proxyCaConfigMapName('hello'), namespace: ns },
      data: { 'ca-bundle.crt': pem },
    });
  });

  it('nodePlacement: nodeSelector and tolerations on every pod template', () => {
    const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'addons', effect: 'NoSchedule' }];
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: ns },
      spec: { containers: [{ name: 'p' }], nodeSelector: { old: 'x' } },
    };
    const out = applyDeploymentConfig([deployment('agent', [{ name: 'agent' }]), pod], {
      addonName: 'a',
      installNamespace: ns,
      config: { nodePlacement: { nodeSelector: { 'node-role/infra': '' }, tolerations } },
    });
    expect(podSpecOf(out[0]).nodeSelector).toEqual({ 'node-role/infra': '' });
    expect(podSpecOf(out[0]).tolerations).toEqual(tolerations);
    const podSpec = (out[1] as unknown as { spec: PodSpec }).spec;
    expect(podSpec.nodeSelector).toEqual({ 'node-role/infra': '' });
    expect(podSpec.tolerations).toEqual(tolerations);
  });

  it('registries: images of containers and init containers rewritten by OCM rule', () => {
    const d = deployment('agent', [{ name: 'agent', image: 'quay.io/open-cluster-management/agent:v1' }]);
    podSpecOf(d).initContainers = [{ name: 'init', image: 'docker.io/library/busybox:1' }];
    const out = applyDeploymentConfig([d], {
      addonName: 'a',
      installNamespace: ns,
      config: { registries: [{ source: 'quay.io/open-cluster-management', mirror: 'mirror.local/ocm' }] },
    });
    expect(podSpecOf(out[0]).containers[0]?.image).toBe('mirror.local/ocm/agent:v1');
    expect(podSpecOf(out[0]).initContainers?.[0]?.image).toBe('docker.io/library/busybox:1');
  });

  it('registries: the cluster annotation applies only when the config names none', () => {
    const d = deployment('agent', [{ name: 'agent', image: 'quay.io/ocm/agent:v1' }]);
    const clusterRegistries = clusterRegistriesOf({
      'open-cluster-management.io/image-registries': JSON.stringify({
        registries: [{ source: 'quay.io/ocm', mirror: 'cluster.local/ocm' }],
      }),
    });
    const fromCluster = applyDeploymentConfig([d], {
      addonName: 'a',
      installNamespace: ns,
      clusterRegistries,
    });
    expect(podSpecOf(fromCluster[0]).containers[0]?.image).toBe('cluster.local/ocm/agent:v1');
    const fromConfig = applyDeploymentConfig([d], {
      addonName: 'a',
      installNamespace: ns,
      clusterRegistries,
      config: { registries: [{ source: 'quay.io/ocm', mirror: 'config.local/ocm' }] },
    });
    expect(podSpecOf(fromConfig[0]).containers[0]?.image).toBe('config.local/ocm/agent:v1');
    expect(clusterRegistriesOf({ 'open-cluster-management.io/image-registries': 'not json' })).toEqual([]);
  });

  it('overrideImage: trailing slashes, mirror without source, last match wins', () => {
    expect(overrideImage([{ source: 'quay.io/ocm/', mirror: 'm.io/x/' }], 'quay.io/ocm/a:1')).toBe(
      'm.io/x/a:1',
    );
    expect(overrideImage([{ mirror: 'm.io/x' }], 'quay.io/ocm/a:1')).toBe('m.io/x/a:1');
    expect(overrideImage([{ mirror: '' }], 'quay.io/ocm/a:1')).toBe('a:1');
    expect(
      overrideImage(
        [
          { source: 'quay.io', mirror: 'first.io' },
          { source: 'quay.io/ocm', mirror: 'second.io/ocm' },
          { source: 'docker.io', mirror: 'third.io' },
        ],
        'quay.io/ocm/a:1',
      ),
    ).toBe('second.io/ocm/a:1');
    expect(overrideImage([{ source: 'docker.io', mirror: 'x.io' }], 'quay.io/ocm/a:1')).toBe(
      'quay.io/ocm/a:1',
    );
  });

  it('resourceRequirements: containers matched by <resource>:<name>:<container>, * wildcards, later entries win', () => {
    const small = { requests: { cpu: '10m' } };
    const big = { limits: { memory: '1Gi' } };
    const exact = { requests: { cpu: '1' }, limits: { cpu: '2' } };
    const out = applyDeploymentConfig(
      [
        deployment('agent', [
          { name: 'agent', resources: { requests: { cpu: '5m' }, limits: { cpu: '9' } } },
          { name: 'side' },
        ]),
        deployment('other', [{ name: 'agent' }]),
      ],
      {
        addonName: 'a',
        installNamespace: ns,
        config: {
          resourceRequirements: [
            { containerID: '*:*:*', resources: small },
            { containerID: 'deployments:*:agent', resources: big },
            { containerID: 'deployments:agent:agent', resources: exact },
          ],
        },
      },
    );
    // replaced whole, not merged
    expect(podSpecOf(out[0]).containers[0]?.resources).toEqual(exact);
    expect(podSpecOf(out[0]).containers[1]?.resources).toEqual(small);
    expect(podSpecOf(out[1]).containers[0]?.resources).toEqual(big);
  });

  it('resourceRequirements: a containerID without three parts fails the render', () => {
    expect(() =>
      applyDeploymentConfig([deployment('agent', [{ name: 'agent' }])], {
        addonName: 'a',
        installNamespace: ns,
        config: { resourceRequirements: [{ containerID: 'deployments:agent', resources: {} }] },
      }),
    ).toThrow(DeploymentConfigError);
  });

  it('customizedVariables change nothing in the objects (they reach the addon as ctx.variables)', () => {
    const input = [deployment('agent', [{ name: 'agent', image: 'a:1' }])];
    const out = applyDeploymentConfig(input, {
      addonName: 'a',
      installNamespace: ns,
      config: { customizedVariables: [{ name: 'LOG_LEVEL', value: '4' }] },
    });
    expect(out).toEqual(input);
  });
});
