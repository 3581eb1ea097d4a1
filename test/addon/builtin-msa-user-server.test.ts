// The managed-serviceaccount add-on with a user-server on the hub: the token Secrets' kubeconfig is
// for `<user-server>/<cluster>` with the user-server's CA — flags and a CA ConfigMap mounted into
// the Deployment, keys of the in-process ConfigMap where the klusterlet agent hosts the add-on (read
// back by its runner) — and nothing of it without one.
import { describe, expect, it } from 'vitest';
import { builtinAddon } from '../../src/addon/builtin/index.ts';
import { managedServiceAccountAddon } from '../../src/addon/builtin/managed-serviceaccount.ts';
import { kubeconfigEndpointOf } from '../../src/addon/inprocess/serviceaccount-runner.ts';
import {
  InProcessConfigKey,
  inProcessAddonLabel,
  inProcessAddonsClaim,
} from '../../src/api/addon-in-process.ts';
import type { ManagedCluster } from '../../src/api/index.ts';
import { cluster, mountsOf, one, type PodTemplate, render, renderContext } from './builtin-fixtures.ts';

const caPem = '-----BEGIN CERTIFICATE-----\nuser-server-ca\n-----END CERTIFICATE-----\n';
const userServer = { url: 'https://10.0.0.5:31092', caPem };
const withUserServer = managedServiceAccountAddon({ image: 'localhost/tether:1', userServer });
const without = managedServiceAccountAddon({ image: 'localhost/tether:1' });

interface ConfigMap {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  data: Record<string, string>;
}

function hostingContext(name: string) {
  const hosting = {
    ...cluster(name),
    status: { clusterClaims: [{ name: inProcessAddonsClaim, value: 'managed-serviceaccount' }] },
  } as ManagedCluster;
  return { ...renderContext('managed-serviceaccount', name), cluster: hosting };
}

describe('managed-serviceaccount add-on with a user-server', () => {
  it('points the Deployment agent at <url>/<cluster> with the CA from a ConfigMap it mounts', async () => {
    const objects = await render(withUserServer, renderContext('managed-serviceaccount', 'cluster1'));
    const d = one<PodTemplate>(objects, 'Deployment');
    expect(d.spec.template.spec.containers[0]?.args).toEqual(
      expect.arrayContaining([
        '--kubeconfig-server-url=https://10.0.0.5:31092/cluster1',
        '--kubeconfig-ca-file=/etc/tether/user-server-ca/ca.crt',
      ]),
    );
    expect(mountsOf(d)).toMatchObject({
      '/etc/tether/user-server-ca': 'ConfigMap/managed-serviceaccount-user-server',
    });
    const cm = one<ConfigMap>(objects, 'ConfigMap', 'managed-serviceaccount-user-server');
    expect(cm.metadata.namespace).toBe('open-cluster-management-agent-addon');
    expect(cm.data).toEqual({ 'ca.crt': caPem });
    // not the in-process ConfigMap, whose presence makes the klusterlet agent host the add-on
    expect(cm.metadata.labels?.[inProcessAddonLabel]).toBeUndefined();
    expect(objects.map((o) => o.metadata?.name)).not.toContain('managed-serviceaccount-in-process');
  });

  it('puts the same into the in-process ConfigMap where the klusterlet agent hosts the add-on', async () => {
    const objects = await render(withUserServer, hostingContext('cluster2'));
    const cm = one<ConfigMap>(objects, 'ConfigMap', 'managed-serviceaccount-in-process');
    expect(cm.data).toEqual({
      'kubeconfig-server-url': 'https://10.0.0.5:31092/cluster2',
      'kubeconfig-ca.crt': caPem,
    });
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'Namespace/open-cluster-management-agent-addon',
      'ConfigMap/managed-serviceaccount-in-process',
    ]);
    // what the klusterlet agent's runner starts the agent with
    expect(
      kubeconfigEndpointOf({ namespace: 'ns', config: cm.data, credential: { certPem: '', keyPem: '' } }),
    ).toEqual({
      kubeconfigServerUrl: 'https://10.0.0.5:31092/cluster2',
      kubeconfigCaPem: caPem,
    });
  });

  it('renders nothing of it without a user-server: no CA ConfigMap, no flags, an empty in-process ConfigMap', async () => {
    const objects = await render(without, renderContext('managed-serviceaccount', 'cluster1'));
    expect(objects.filter((o) => o.kind === 'ConfigMap')).toEqual([]);
    const args = one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args ?? [];
    expect(args.filter((a) => a.startsWith('--kubeconfig-'))).toEqual([]);
    const hosted = await render(without, hostingContext('cluster2'));
    const cm = one<ConfigMap>(hosted, 'ConfigMap', 'managed-serviceaccount-in-process');
    expect(cm.data).toEqual({});
    expect(
      kubeconfigEndpointOf({ namespace: 'ns', config: cm.data, credential: { certPem: '', keyPem: '' } }),
    ).toBeUndefined();
  });

  it('the in-process runner refuses a ConfigMap with one of the two keys', () => {
    const input = (config: Record<string, string>) => ({
      namespace: 'ns',
      config,
      credential: { certPem: '', keyPem: '' },
    });
    expect(() =>
      kubeconfigEndpointOf(input({ [InProcessConfigKey.KubeconfigServerUrl]: 'https://h/c1' })),
    ).toThrow(
      /has no kubeconfig-ca.crt: the hub renders kubeconfig-server-url and kubeconfig-ca.crt together/,
    );
    expect(() => kubeconfigEndpointOf(input({ [InProcessConfigKey.KubeconfigCaCert]: caPem }))).toThrow(
      /has no kubeconfig-server-url/,
    );
  });

  it("`tether hub`'s lookup hands the user-server to the add-on; a trailing slash is not doubled", async () => {
    const addon = builtinAddon('managed-serviceaccount', {
      image: 'localhost/tether:1',
      userServer: { url: 'https://user-server.hub:9092/', caPem },
    });
    const objects = await render(addon, renderContext('managed-serviceaccount', 'cluster3'));
    expect(one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args).toContain(
      '--kubeconfig-server-url=https://user-server.hub:9092/cluster3',
    );
  });
});
