// The cluster-proxy addon, rendered for one cluster: tether's proxy-agent with the addon's own hub
// certificate, the proxy-server address and CA the hub was given, no API token on either side.
import { describe, expect, it } from 'vitest';
import { clusterProxyAddon } from '../../src/addon/builtin/cluster-proxy.ts';
import type { CertificateSigningRequest } from '../../src/registration/hub/resources.ts';
import {
  cluster,
  managedClusterAddOn,
  mountsOf,
  one,
  type PodTemplate,
  render,
  renderContext,
} from './builtin-fixtures.ts';

const caPem = '-----BEGIN CERTIFICATE-----\nproxy-server-ca\n-----END CERTIFICATE-----\n';
const addon = clusterProxyAddon({
  proxyServer: 'proxy.hub.example:8091',
  proxyServerCaPem: caPem,
  image: 'localhost/tether:1.2.3',
  imagePullPolicy: 'Never',
});

describe('cluster-proxy addon', () => {
  it("renders the proxy-agent for cluster1 with cluster-proxy-hub-kubeconfig's certificate", async () => {
    const objects = await render(addon, renderContext('cluster-proxy', 'cluster1'));
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'Namespace/open-cluster-management-agent-addon',
      'ServiceAccount/cluster-proxy',
      'ConfigMap/cluster-proxy-proxy-server-ca',
      'Deployment/cluster-proxy-proxy-agent',
    ]);
    const d = one<PodTemplate>(objects, 'Deployment');
    expect(d.metadata?.namespace).toBe('open-cluster-management-agent-addon');
    const c = d.spec.template.spec.containers[0];
    expect(c?.image).toBe('localhost/tether:1.2.3');
    expect(c?.imagePullPolicy).toBe('Never');
    expect(c?.args).toEqual([
      'proxy-agent',
      '--cluster-name=cluster1',
      '--proxy-server=proxy.hub.example:8091',
      '--cert-file=/managed/hub-kubeconfig/tls.crt',
      '--key-file=/managed/hub-kubeconfig/tls.key',
      '--hub-ca-file=/managed/proxy-server-ca/ca.crt',
      '--ops-port=8093',
      '--ops-address=0.0.0.0',
    ]);
    expect(mountsOf(d)).toMatchObject({
      '/managed/hub-kubeconfig': 'Secret/cluster-proxy-hub-kubeconfig',
      '/managed/proxy-server-ca': 'ConfigMap/cluster-proxy-proxy-server-ca',
    });
    expect(one<{ data: Record<string, string> }>(objects, 'ConfigMap').data).toEqual({ 'ca.crt': caPem });
    // The agent never calls an API: no token in the pod.
    expect(d.spec.template.spec.automountServiceAccountToken).toBe(false);
    expect(
      one<{ automountServiceAccountToken?: boolean }>(objects, 'ServiceAccount').automountServiceAccountToken,
    ).toBe(false);
  });

  it('follows the install namespace it is given and leaves the namespace behind when disabled', async () => {
    const objects = await render(
      addon,
      renderContext('cluster-proxy', 'c2', { installNamespace: 'proxy-ns' }),
    );
    for (const o of objects.filter((x) => x.kind !== 'Namespace'))
      expect(o.metadata?.namespace).toBe('proxy-ns');
    expect(one(objects, 'Namespace').metadata?.annotations).toEqual({
      'addon.open-cluster-management.io/deletion-orphan': '',
    });
    expect(one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args).toContain(
      '--cluster-name=c2',
    );
  });

  it("an AddOnDeploymentConfig's forward proxy CA is trusted by the agent (--proxy-ca-file at the manager's mount)", async () => {
    const proxyCa = '-----BEGIN CERTIFICATE-----\nsquid\n-----END CERTIFICATE-----\n';
    const objects = await render(
      addon,
      renderContext('cluster-proxy', 'cluster1', {
        deploymentConfig: {
          proxyConfig: {
            httpsProxy: 'https://squid:3129',
            caBundle: Buffer.from(proxyCa).toString('base64'),
          },
        },
      }),
    );
    // the manager mounts the bundle there (src/addon/hub/config/deployment-config.ts); the agent is told to trust it
    expect(objects.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata?.name)).toEqual([
      'cluster-proxy-proxy-server-ca',
    ]);
    const d = one<PodTemplate>(objects, 'Deployment');
    expect(d.spec.template.spec.containers[0]?.args).toContain(
      '--proxy-ca-file=/managed/proxy-ca/ca-bundle.crt',
    );
  });

  it('gets the default kube-apiserver-client identity, no hub permissions, and only for accepted clusters', () => {
    const reg = addon.registration;
    expect(reg).toBeDefined();
    expect(reg?.configs).toBeUndefined(); // the manager's default: OCM's subject, kube-apiserver-client
    expect(reg?.hubPermissions).toBeUndefined();
    expect(reg?.sign).toBeUndefined();
    const csr = {} as CertificateSigningRequest;
    const mca = managedClusterAddOn('cluster-proxy', 'cluster1');
    expect(reg?.approve?.(cluster('cluster1', true), mca, csr)).toBe(true);
    expect(reg?.approve?.(cluster('cluster1', false), mca, csr)).toBe(false);
    expect(addon.health).toEqual({ type: 'DeploymentAvailability' });
    expect(addon.supportedConfigs).toEqual([
      { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' },
    ]);
  });
});
